"""Colour codes whose ESC byte a paste turned into U+FFFD (issue 25): a terminal's SGR sequences copied through a page
that decoded the ESC as a broken byte (`\\ufffd[36m(WorkerDict pid=…)\\ufffd[0m …`, Ray's actor tag coloured cyan by
its log monitor). The reader takes them out as it takes out the escapes they were, on the fast path and the plain
alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase import scan as scanning
from logphase.logs.reader import decoded_text
from logphase.packs import PackSet
from tests.equivalence import reports

FFFD = "\ufffd".encode()


def test_a_replacement_character_before_an_sgr_sequence_is_read_as_the_escape_it_replaced() -> None:
    # GIVEN Ray's cyan actor tag and its reset, each ESC turned into U+FFFD's UTF-8 bytes, before a faulthandler line
    raw = FFFD + b"[36m(WorkerDict pid=129668)" + FFFD + b"[0m Fatal Python error: Floating point exception"
    # WHEN decoded as a line
    text = decoded_text(raw)
    # THEN the line is the one the terminal showed, without the colour codes
    assert text == "(WorkerDict pid=129668) Fatal Python error: Floating point exception"


def test_a_replacement_character_before_other_bracketed_text_stays() -> None:
    # GIVEN a broken byte before a bracketed level and one before a bracket of no SGR sequence's form
    raw = b"\xff[INFO] ready " + FFFD + b"[rank0]: x"
    # WHEN decoded as a line
    text = decoded_text(raw)
    # THEN both replacement characters and the brackets stay: only `[<digits;>m` after one is a colour code
    assert text == "\ufffd[INFO] ready \ufffd[rank0]: x"


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head read in full is one line: the rest of the log is the fast path's."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)


@pytest.mark.usefixtures("short_head")
def test_a_log_with_lost_escapes_is_judged_alike_on_the_fast_and_the_plain_path(tmp_path: Path, packs: PackSet) -> None:
    # GIVEN a long vLLM log whose worker lines came through Ray with their colour codes' ESC turned into U+FFFD, and
    # the worker's faulthandler dump at its end
    tag = FFFD + b"[36m(RayWorkerWrapper pid=4242)" + FFFD + b"[0m "
    lines = [b"INFO 03-01 10:00:00 api_server.py:712] vLLM API server version 0.6.3"]
    lines += [
        b"INFO 03-01 10:00:%02d metrics.py:345] Avg prompt throughput: 1.0 tokens/s" % (i % 60) for i in range(3000)
    ]
    lines += [
        tag + b"Fatal Python error: Floating point exception",
        tag,
        tag + b"Stack (most recent call first):",
        tag
        + b'  File "/usr/lib/python3.10/site-packages/vllm/model_executor/layers/logits_processor.py", line 61 in fw',
    ]
    log = tmp_path / "run.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    # WHEN judged on the plain path and on the fast path
    plain = reports.plain([log], packs)
    fast = reports.fast([log], packs)
    # THEN the reports are the same, and the fatal error, read without its colour codes, is the cause
    assert fast == plain
    report = json.loads(plain)
    assert report["verdict"] == "aborted"
    assert report["root_cause"]["text"] == "(RayWorkerWrapper pid=4242) Fatal Python error: Floating point exception"


@pytest.mark.usefixtures("short_head")
def test_a_lost_escape_inside_a_rules_words_is_read_on_the_fast_path_too(tmp_path: Path, packs: PackSet) -> None:
    # GIVEN a long vLLM log whose engine error was printed with a bold span inside its words (`illegal <bold>memory
    # access<reset>`), each ESC turned into U+FFFD: its bytes hold none of the words the rule needs in one piece
    lines = [b"INFO 03-01 10:00:00 api_server.py:712] vLLM API server version 0.6.3"]
    lines += [
        b"INFO 03-01 10:00:%02d metrics.py:345] Avg prompt throughput: 1.0 tokens/s" % (i % 60) for i in range(3000)
    ]
    error = b"ERROR 03-01 10:01:00 engine.py:135] RuntimeError: CUDA error: an illegal " + FFFD + b"[1mmemory access"
    lines.append(error + FFFD + b"[0m was encountered")
    log = tmp_path / "run.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    # WHEN judged on the plain path and on the fast path
    plain = reports.plain([log], packs)
    fast = reports.fast([log], packs)
    # THEN the reports are the same: the error, read without its colour codes, is the crash's cause
    assert fast == plain
    report = json.loads(plain)
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["text"].endswith("CUDA error: an illegal memory access was encountered")
