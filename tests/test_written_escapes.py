"""Colour codes whose ESC is written out as text (a collector's or a viewer's spelling of the byte): each line reads
as the line without them, on both paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase import scan as scanning
from logphase.logs.reader import decoded_text
from logphase.packs import PackSet
from tests.conftest import FIXTURES, run_json
from tests.test_fast_cliffs import in_colour, same_run

# ESC as each writer spells it: rsyslog's control-character escape (`#033`, journald / syslog exports), `cat -v`'s
# and less's caret notation (`^[`), JSON's `\u001b` (RFC 8259: control characters escaped), Python's repr (`\x1b`),
# a shell's `\033` and `\e`
SPELLINGS = ["#033", "^[", "\\u001b", "\\u001B", "\\x1b", "\\x1B", "\\033", "\\e"]


@pytest.mark.parametrize("esc", SPELLINGS)
def test_a_written_colour_code_is_removed_wherever_it_stands(esc: str) -> None:
    # GIVEN vLLM's coloured process tag (bold cyan `[1;36m`, reset `[0;0m`) and a grep's erase-line `[K`, each
    # ESC written out, and no plain reset `[0m` on the line
    raw = f"{esc}[1;36m(VllmWorker rank=1 pid=140301){esc}[0;0m INFO 04-03 17:38:57 [core.py:58] ready{esc}[K"
    # WHEN the line is read THEN its text is the line without them
    assert decoded_text(raw.encode()) == "(VllmWorker rank=1 pid=140301) INFO 04-03 17:38:57 [core.py:58] ready"


@pytest.mark.parametrize(
    "text",
    [
        "grep -E '^[[:space:]]*#' config",  # a bracket expression after a regex's anchor: no colour code
        "C:\\envs\\[1] copied",  # a path's backslash and a bracket
        "#033 is the octal of ESC",
    ],
)
def test_text_that_only_looks_like_a_written_escape_stays(text: str) -> None:
    # GIVEN a line whose `^[`, `\e` or `#033` is followed by no colour code WHEN read THEN it is as written
    assert decoded_text(text.encode()) == text


def test_a_journald_line_with_rsyslogs_written_colours_reads_its_vllm_rank(tmp_path: Path) -> None:
    # GIVEN journald's short format (`Mon DD HH:MM:SS host ident[pid]: `) around a vLLM V1 worker's traceback, the
    # worker's colour codes written out by rsyslog as `#033[1;36m(VllmWorker rank=1 pid=N)#033[0;0m`
    tag = "#033[1;36m(VllmWorker rank=1 pid=140301)#033[0;0m "
    body = [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 212, in init_device',
        "    init_worker_distributed_environment(self.vllm_config, self.rank,",
        "RuntimeError: NCCL error: unhandled system error",
    ]
    log = tmp_path / "journal.log"
    log.write_text("".join(f"Apr  3 17:38:57 host52 langmodel[140301]: {tag}{line}\n" for line in body))
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the worker's exception line, its tag without colour, is the cause, on the tag's rank (`rank=1`: `rank 1`)
    assert report["verdict"] == "crashed", report["reason"]
    cause = report["root_cause"]
    assert cause["text"] == "(VllmWorker rank=1 pid=140301) RuntimeError: NCCL error: unhandled system error"
    assert (cause["line"], cause["rank"], report["ranks"]) == (4, "rank 1", ["rank 1"])


@pytest.mark.parametrize("esc", ["#033", "^[", "\\u001b"])
def test_a_log_in_written_colours_reads_as_the_log_without_them(
    esc: str, packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scanner: str
) -> None:
    # GIVEN a fixture log, and the same log with a terminal's colour codes on every line, their ESC written out, read
    # past their first line by the fast path
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    plain, coloured = tmp_path / "plain" / "server.log", tmp_path / "coloured" / "server.log"
    plain.parent.mkdir()
    coloured.parent.mkdir()
    plain.write_bytes((FIXTURES / "logs" / "vllm" / "v1-085-tp4-ready-serving.log").read_bytes())
    coloured.write_bytes(in_colour(plain.read_bytes()).replace(b"\x1b", esc.encode()))
    # WHEN each is analysed with and without the fast path
    # THEN the four reports are the same
    first, *others = same_run(plain, coloured, packs)
    assert others == [first] * 3
