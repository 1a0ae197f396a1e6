"""Every verdict carries a confidence and the lines for and against it; contradictions are said,
and a low confidence never exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REALWORLD, run_cli, run_json


@pytest.mark.parametrize(
    "log",
    [
        FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log",
        FIXTURES / "logs" / "torch" / "nccl-watchdog-timeout-rank4-lagging.log",
        FIXTURES / "logs" / "vllm" / "v1-tp4-worker-oom-engine-init-failed.log",
    ],
    ids=lambda p: p.stem,
)
def test_a_whole_log_of_a_known_system_is_judged_with_high_confidence(log: Path) -> None:
    # GIVEN a complete log of a recognised system WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN nothing speaks against the verdict, and its decisive line is given as evidence for it
    assert (report["confidence"], report["evidence"]["against"]) == ("high", [])
    decisive = (report["root_cause"] or {}).get("line")
    assert decisive is None or decisive in [line["line"] for line in report["evidence"]["for"]]


@pytest.mark.parametrize(
    ("log", "doubt"),
    [
        (REALWORLD / "logs" / "208_vllm-timeout-compile.log", "the traceback is cut before its exception line"),
        (REALWORLD / "logs" / "205_sglang-crashed-draft-init.log", "no server or job system recognised"),
    ],
    ids=["cut-at-raise", "no-system"],
)
def test_what_speaks_against_a_verdict_is_said(log: Path, doubt: str) -> None:
    # GIVEN a pasted excerpt whose verdict rests on less than a whole log
    result = run_cli("analyze", "--post-mortem", str(log))
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the confidence is medium, the doubt is in the JSON and in the table's first lines
    assert report["confidence"] == "medium"
    assert any(said.startswith(doubt) for said in report["evidence"]["against"])
    assert result.stdout.splitlines()[2].startswith(f"  confidence: medium — {doubt}")


def test_ready_on_generic_lines_alone_is_low_confidence_and_never_exits_0(tmp_path: Path) -> None:
    # GIVEN uvicorn access lines only (any web app writes them; no server of ours said it is up)
    log = tmp_path / "access.log"
    log.write_text(
        'INFO:     10.0.0.5:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        'INFO:     10.0.0.5:5001 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    # WHEN analysed THEN ready, low confidence, exit 6 (not 0)
    code, report = run_json("analyze", "--post-mortem", str(log))
    assert (report["verdict"], report["confidence"], code) == ("ready", "low", 6)


def test_unknown_is_low_confidence() -> None:
    code, report = run_json("analyze", "--post-mortem", str(FIXTURES / "logs" / "other" / "nothing-recognisable.log"))
    assert (report["verdict"], report["confidence"], code) == ("unknown", "low", 6)
