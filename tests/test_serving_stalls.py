"""A server that is up and no longer advances any request, as its own periodic stats say it (vLLM's `Avg prompt
throughput: 0.0 …, Avg generation throughput: 0.0 …` with requests running or waiting): stalled while serving, not
ready; an idle server (nothing outstanding) and a stall that its next report shows over are ready."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_json

# vLLM 0.6 (V0) OpenAI server: ready, then its 5-second stats (engine/metrics.py's format) between access lines
V0_READY = [
    "INFO 09-18 16:09:40 api_server.py:527] vLLM API server version 0.6.1",
    "INFO:     Started server process [41]",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
]
V0_STATS = (
    "INFO 09-18 16:{t} metrics.py:351] Avg prompt throughput: {p} tokens/s, Avg generation throughput: {g} tokens/s, "
    "Running: {r} reqs, Swapped: 0 reqs, Pending: {w} reqs, GPU KV cache usage: 0.1%, CPU KV cache usage: 0.0%."
)
# vLLM 0.8 (V1): the API server's 10-second stats, at DEBUG once both throughputs stay zero (v1/metrics/loggers.py)
V1_READY = [
    "INFO 05-11 18:05:58 [api_server.py:1043] vLLM API server version 0.8.5",
    "INFO:     Started server process [1]",
    "INFO:     Application startup complete.",
]
V1_STATS = (
    "{level} 05-11 18:{t} [loggers.py:111] Engine 000: Avg prompt throughput: {p} tokens/s, Avg generation "
    "throughput: {g} tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: 0.0%, Prefix cache hit "
    "rate: 0.0%"
)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_v0_requests_piling_up_with_no_token_is_a_stall_while_serving(tmp_path: Path) -> None:
    # GIVEN a V0 server that answered requests, then stats with 12 and 22 requests pending, none running, no token
    log = _write(
        tmp_path,
        [
            *V0_READY,
            V0_STATS.format(t="10:53", p="67.0", g="0.4", r=2, w=0),
            'INFO:     10.0.0.99:58210 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
            V0_STATS.format(t="10:58", p="70.6", g="5.6", r=0, w=12),
            'INFO:     10.64.214.1:45782 - "GET /health HTTP/1.1" 200 OK',
            V0_STATS.format(t="11:03", p="0.0", g="0.0", r=0, w=22),
            V0_STATS.format(t="11:08", p="0.0", g="0.0", r=0, w=22),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled while serving; the cause is the first report of outstanding requests and no token (line 9)
    assert (report["verdict"], report["furthest_phase"]) == ("stalled", "serving")
    assert report["root_cause"]["line"] == 9


def test_v1_a_running_request_with_no_token_for_its_reports_is_a_stall(tmp_path: Path) -> None:
    # GIVEN a V1 server generating for one request, then three 10-second reports of that request and no token
    log = _write(
        tmp_path,
        [
            *V1_READY,
            V1_STATS.format(level="INFO", t="07:04", p="12.0", g="25.3", r=1, w=0),
            *(V1_STATS.format(level="DEBUG", t=f"07:{s}", p="0.0", g="0.0", r=1, w=0) for s in (14, 24, 34)),
        ],
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN stalled while serving, from the first report without a token (line 5)
    assert (report["verdict"], report["furthest_phase"], report["root_cause"]["line"]) == ("stalled", "serving", 5)


def test_an_idle_server_and_a_stall_its_next_report_shows_over_are_ready(tmp_path: Path) -> None:
    # GIVEN a V1 server idle (nothing running or waiting), and a V0 server whose one zero report is followed by tokens
    idle = _write(tmp_path, [*V1_READY, V1_STATS.format(level="DEBUG", t="07:14", p="0.0", g="0.0", r=0, w=0)])
    over = tmp_path / "over.log"
    over.write_text(
        "\n".join(
            [
                *V0_READY,
                V0_STATS.format(t="10:53", p="0.0", g="0.0", r=1, w=0),
                V0_STATS.format(t="10:58", p="0.0", g="77.1", r=1, w=0),
            ]
        )
        + "\n"
    )
    # WHEN each is analysed post-mortem
    # THEN both are ready: nothing was outstanding, or tokens came after
    for log in (idle, over):
        _, report = run_json("analyze", "--post-mortem", str(log))
        assert report["verdict"] == "ready", log.name


def test_sglang_watchdogs_dump_of_a_stuck_batch_alone_is_a_timeout_while_serving(tmp_path: Path) -> None:
    # GIVEN only what SGLang 0.5.10+'s scheduler watchdog logs first when a running batch made no forward step for
    # its timeout (srt/utils/watchdog.py: `{debug_name} debug info:` and the dump's lines), on two ranks; the
    # `watchdog timeout (…, self.soft=…)` line that would say soft or hard is beyond the excerpt
    dump = [
        "scheduler.cur_batch_for_debug.batch_size()=1",
        "scheduler.cur_batch_for_debug.reqs=[Req(rid=3e64727659014c729d0ee75279c38a28, input_ids=[0, 90, 27791])]",
        "[full] total=4974080, available=1024, evictable=4947200, protected=24832, session_held=0, uncached=0",
    ]
    log = tmp_path / "watchdog.log"
    log.write_text(
        "\n".join(
            [
                "[2026-08-04 11:58:42 TP1] Scheduler debug info:",
                *dump,
                "",
                "[2026-08-04 11:58:42 TP7] Scheduler debug info:",
                *dump,
            ]
        )
        + "\n"
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the watchdog fired (fixtures/realworld/README.md: timeout; the hard watchdog is on by default, the soft one
    # only where asked for) in serving (it only dumps a running batch), the first dump its cause
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("timeout", "serving", 1)


# vLLM 0.11 V1 scheduler (v1/core/sched/scheduler.py) with a KV connector, at DEBUG: a decode request whose KV
# the prefill instance has not sent yet is skipped each step with `%s is still in WAITING_FOR_REMOTE_KVS state.`
WAITING_FOR_KV = (
    "(EngineCore_DP0 pid=7630) DEBUG 01-13 06:31:31 [v1/core/sched/scheduler.py:439] "
    "chatcmpl-b944e888 is still in WAITING_FOR_REMOTE_KVS state.\n"
)


def test_a_request_waiting_for_its_remote_kv_is_serving_not_a_failure(tmp_path: Path) -> None:
    # GIVEN only the scheduler's waiting line, three steps of it
    log = tmp_path / "pd-decode.log"
    log.write_text(WAITING_FOR_KV * 3)
    # WHEN judged post-mortem
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the engine is serving; a request that waits is neither a crash nor a hang report
    assert (report["phase"], report["verdict"]) == ("serving", "ready")


def test_a_ready_pd_server_whose_request_waits_for_its_kv_stays_ready(tmp_path: Path) -> None:
    # GIVEN the API server's `Application startup complete.` then the engine's waiting lines
    log = tmp_path / "pd-decode-ready.log"
    log.write_text("(APIServer pid=7500) INFO:     Application startup complete.\n" + WAITING_FOR_KV * 2)
    # WHEN judged post-mortem
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN it is ready: the wait is no hang report
    assert (report["phase"], report["verdict"]) == ("serving", "ready")
