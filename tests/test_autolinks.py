"""A linkifier's links in a paste (issue 25): text that looks like an address or an issue reference, rendered as a link
and copied back as markdown. A linkifier takes `.py` for a top-level domain (vLLM's location `[core.py:710]` became
`[[core.py:710](http://core.py:710/)]`, realworld 943) and a dotted quad for a host (Ray's `ip: 10.29.214.5`, 583);
GitHub links `#26`, `GH-26` and `owner/repo#26` to that issue or pull request (docs.github.com, "Autolinked references
and URLs"; c10's `frame #44:`, 879). The reader undoes the links whose text is their own target, never a writer's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from logphase import scan as scanning
from logphase.logs.reader import clean_line
from logphase.packs import PackSet
from tests.conftest import FIXTURES, judge_text, root_text
from tests.equivalence import reports
from tests.test_fast_cliffs import same_run


def _read(line: str) -> str:
    """The text the reader makes of one physical line."""
    (read,) = clean_line(line.encode(), 1, 0)
    return read.text


@pytest.mark.parametrize(
    ("pasted", "printed"),
    [
        # vLLM's `[file:line]` location, its text taken for a host and a port
        (
            "(EngineCore_DP0 pid=78020) ERROR 10-23 17:17:52 [[core.py:710](http://core.py:710/)]     raise err",
            "(EngineCore_DP0 pid=78020) ERROR 10-23 17:17:52 [core.py:710]     raise err",
        ),
        # Ray's ActorDiedError detail: an address, linked without the trailing slash as well
        ("        ip: [10.29.214.5](http://10.29.214.5/)", "        ip: 10.29.214.5"),
        ("        ip: [10.29.214.5](http://10.29.214.5)", "        ip: 10.29.214.5"),
        # a URL the log printed whole, linked as itself
        (
            "see [https://docs.vllm.ai/en/latest/](https://docs.vllm.ai/en/latest/)",
            "see https://docs.vllm.ai/en/latest/",
        ),
        # GitHub's references: `#N` to a pull request or an issue of the repository, `GH-N`, `owner/repo#N`
        ("frame [#44](https://github.com/o/r/pull/44): + 0x29ac5d", "frame #44: + 0x29ac5d"),
        ("frame [#46](https://github.com/o/r/issues/46): + 0x2b831a", "frame #46: + 0x2b831a"),
        ("fixed in [GH-26](https://github.com/o/r/issues/26)", "fixed in GH-26"),
        ("see [jlord/sheetsee.js#26](https://github.com/jlord/sheetsee.js/issues/26)", "see jlord/sheetsee.js#26"),
        # a link the paste cut inside its target, what is left of it leading its text
        (
            "(EngineCore_DP0 pid=78020) ERROR 10-23 17:17:52 [[core.py:710](http://core.py",
            "(EngineCore_DP0 pid=78020) ERROR 10-23 17:17:52 [core.py:710",
        ),
    ],
)
def test_a_linkifiers_link_reads_as_the_text_it_was_made_of(pasted: str, printed: str) -> None:
    # GIVEN a line the way a linkifier's page copied back as markdown holds it WHEN read THEN it is the printed line
    assert _read(pasted) == printed


@pytest.mark.parametrize(
    "line",
    [
        # a writer's link: FastAPI's deprecation warning, realworld 611
        "        [FastAPI docs for Lifespan Events](https://fastapi.tiangolo.com/advanced/events/).",
        "[docs](https://docs.python.org/)",
        # text that is not its target: another host, another issue, another repository
        "[core.py:710](http://example.com/)",
        "frame [#44](https://github.com/o/r/pull/45):",
        "[a/b#26](https://github.com/c/d/issues/26)",
        "[#44](https://example.com/o/r/pull/44)",
        # a cut link whose target, as far as it goes, is not its text, or holds no host's dot yet
        "[core.py:710](http://other",
        "[docs](https://d",
    ],
)
def test_a_link_whose_text_is_not_its_target_stays(line: str) -> None:
    # GIVEN a markdown link that no linkifier made of its text WHEN read THEN it stays as written
    assert _read(line) == line


def _linkified(data: bytes) -> bytes:
    """Each vLLM location `[file.py:N]` of `data` as a linkifier's page, copied back as markdown, holds it."""
    return re.sub(rb"\[([\w.]+\.py:\d+)\]", rb"[[\1](http://\1/)]", data)


def test_a_linkified_log_reads_as_the_log(packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a vLLM fixture log, and the same log with every location linked, read past their first line by the fast path
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    plain, linked = tmp_path / "plain" / "server.log", tmp_path / "linked" / "server.log"
    plain.parent.mkdir()
    linked.parent.mkdir()
    plain.write_bytes((FIXTURES / "logs" / "vllm" / "v1-085-tp4-ready-serving.log").read_bytes())
    linked.write_bytes(_linkified(plain.read_bytes()))
    assert b"](http://" in linked.read_bytes()
    # WHEN each is analysed with and without the fast path
    # THEN the four reports are the same
    first, *others = same_run(plain, linked, packs)
    assert others == [first] * 3


def test_a_linkified_engine_crash_after_a_long_serving_log_is_read_on_the_fast_path(
    tmp_path: Path, packs: PackSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a long vLLM V1 serving log, every location linked, that ends in the engine's logged exception
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    lines = [b"INFO 03-01 10:00:00 [api_server.py:1043] vLLM API server version 0.10.1"]
    lines += [
        b"INFO 03-01 10:00:%02d [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s" % (i % 60)
        for i in range(3000)
    ]
    engine = b"(EngineCore_DP0 pid=7) ERROR 03-01 10:01:00 [core.py:710] "
    lines.append(engine + b"EngineCore encountered a fatal error.")
    lines.append(engine + b"Traceback (most recent call last):")
    lines.append(engine + b"RuntimeError: CUDA error: unspecified launch failure")
    log = tmp_path / "run.log"
    log.write_bytes(_linkified(b"\n".join(lines) + b"\n"))
    # WHEN judged on the plain path and on the fast path
    plain = reports.plain([log], packs)
    fast = reports.fast([log], packs)
    # THEN the reports are the same: a crash, its cause the CUDA error read without the link
    assert fast == plain
    report = json.loads(plain)
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["text"].endswith("[core.py:710] RuntimeError: CUDA error: unspecified launch failure")


def test_watch_undoes_a_linkifiers_link_as_analyze_does() -> None:
    # GIVEN a linkified vLLM line, then a plain one, arriving as a stream
    from logphase.logs.follow import _LineSplitter

    raw = b"ERROR 10-23 17:17:52 [[core.py:710](http://core.py:710/)] RuntimeError: x\nnext line\n"
    splitter = _LineSplitter()
    streamed = [line.text for line in splitter.feed(raw) + splitter.settle()]
    # THEN the stream reads them as the file reader does: the link undone
    assert streamed == ["ERROR 10-23 17:17:52 [core.py:710] RuntimeError: x", "next line"]


@pytest.mark.parametrize("layout", ["inline code", "markdown escapes"])
def test_a_link_an_envelope_hid_is_undone_once_the_envelope_is_off(tmp_path: Path, layout: str) -> None:
    # GIVEN a linkified vLLM engine crash, pasted with each line in inline code, or escaped as markdown by an
    # HTML-to-markdown converter (every bracket and parenthesis of the link's syntax written `\[`, `\]`, `\(`, `\)`)
    engine = "(EngineCore_DP0 pid=7) ERROR 03-01 10:01:00 [[core.py:710](http://core.py:710/)] "
    lines = [
        engine + "EngineCore encountered a fatal error.",
        engine + "Traceback (most recent call last):",
        engine + "RuntimeError: CUDA error: unspecified launch failure",
    ]
    if layout == "inline code":
        pasted = [f"`{line}`" for line in lines]
    else:
        pasted = [re.sub(r"([\[\]()_])", r"\\\1", line) for line in lines]
    # WHEN judged
    report = judge_text(tmp_path, "\n".join(pasted) + "\n")
    # THEN the engine's error, read without the link, is the crash's cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == (
        "(EngineCore_DP0 pid=7) ERROR 03-01 10:01:00 [core.py:710] RuntimeError: CUDA error: unspecified launch failure"
    )
