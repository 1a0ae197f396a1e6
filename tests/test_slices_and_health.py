"""Two kinds of log from issue 12: a slice of a running server (rotated, `--since`, `tail -n`) is
`serving`, and the health route's newest answer outranks every other route's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_json

SERVING_LOGS = [
    FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log",
    FIXTURES / "logs" / "vllm" / "v1-085-tp4-ready-serving.log",
]
READY_LINE = ("The server is fired up and ready to roll!", "Application startup complete.")
# What the server prints only once it serves real traffic: SGLang's decode batches, vLLM's throughput stats
SERVING_LINE = ("Decode batch", "Avg prompt throughput")


def _tails(log: Path) -> list[list[str]]:
    """Every tail of the log that starts after its ready line and still holds a serving line."""
    lines = log.read_text().splitlines()
    ready = max(i for i, line in enumerate(lines) if any(word in line for word in READY_LINE))
    return [
        lines[start:]
        for start in range(ready + 1, len(lines))
        if any(word in line for line in lines[start:] for word in SERVING_LINE)
    ]


@pytest.mark.parametrize("native_api", [False, True], ids=["openai-api", "native-api"])
@pytest.mark.parametrize("log", SERVING_LOGS, ids=lambda p: p.stem)
def test_a_slice_of_a_serving_log_is_serving(tmp_path: Path, log: Path, native_api: bool) -> None:
    # GIVEN every tail of a serving log that begins after start-up (no start-up line left in it); its
    # clients on the OpenAI routes, or on SGLang's native POST /generate (the route warmup uses too)
    tails = _tails(log)
    assert len(tails) >= 5
    for tail in tails:
        path = tmp_path / "slice.log"
        text = "\n".join(tail) + "\n"
        path.write_text(text.replace('"POST /v1/chat/completions', '"POST /generate') if native_api else text)
        # WHEN analysed post-mortem THEN it is a server that serves, not a stalled warmup
        code, report = run_json("analyze", "--post-mortem", str(path))
        assert (report["verdict"], report["phase"], code) == ("ready", "serving", 0), (tail[0], report["reason"])


def _with(log: Path, after: str, inserted: list[str]) -> str:
    lines = log.read_text().splitlines()
    at = max(i for i, line in enumerate(lines) if after in line) + 1
    return "\n".join([*lines[:at], *inserted, *lines[at:]]) + "\n"


def test_other_routes_answering_200_during_warmup_do_not_make_it_ready(tmp_path: Path) -> None:
    # GIVEN the EAGLE3 launch whose /health answers 503 through warmup, with /v1/models and /model_info
    # answering 200 in between (a client polling them)
    log = FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log"
    first_503 = '"GET /health HTTP/1.1" 503'
    path = tmp_path / "warmup.log"
    path.write_text(
        _with(
            log,
            first_503,
            [
                '[2026-04-21 09:16:18] INFO:     10.0.12.7:51010 - "GET /v1/models HTTP/1.1" 200 OK',
                '[2026-04-21 09:16:18] INFO:     10.0.12.7:51011 - "GET /model_info HTTP/1.1" 200 OK',
            ],
        )
    )
    # WHEN analysed THEN the newest /health (503) decides: warmup, not ready; never exit 0
    code, report = run_json("analyze", "--post-mortem", str(path))
    assert (report["verdict"], report["phase"]) == ("stalled", "warmup")
    assert "the newest /health answered 503" in report["reason"]
    assert code == 4


def test_a_503_after_the_ready_line_is_not_ready(tmp_path: Path) -> None:
    # GIVEN a server that was ready and served, whose newest /health answered 503 (it turned unhealthy)
    log = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
    path = tmp_path / "unhealthy.log"
    path.write_text(
        log.read_text()
        + '[2025-12-15 07:49:00] INFO:     10.0.8.22:50200 - "GET /health HTTP/1.1" 503 Service Unavailable\n'
    )
    # WHEN analysed THEN it is not called ready (exit 0), and the reason says why
    code, report = run_json("analyze", "--post-mortem", str(path))
    assert report["verdict"] != "ready" and code != 0
    assert "the newest /health answered 503" in report["reason"]
    # AND a 200 after it makes it ready again
    path.write_text(
        path.read_text() + '[2025-12-15 07:49:30] INFO:     10.0.8.22:50201 - "GET /health HTTP/1.1" 200 OK\n'
    )
    assert run_json("analyze", "--post-mortem", str(path))[1]["verdict"] == "ready"
