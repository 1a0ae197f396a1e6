"""Benchmark clients' results (patterns/bench.toml): a serving benchmark's result table and a one-batch run's last
line end a job that served its requests; a run that another follows, or a table after a server's log, does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "bench.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def _row(name: str, value: str) -> str:
    """A result row as the clients format it: `"{:<40} {:<10}".format(name, value)`."""
    return f"{name:<40} {value:<10}"


# sglang 0.5.6 bench_serving.py: a blank line, the centred header, `Backend:` and `Traffic request rate:` first
SGLANG_TABLE = [
    "",
    "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
    _row("Backend:", "sglang"),
    _row("Traffic request rate:", "inf"),
    _row("Successful requests:", "200"),
    _row("Benchmark duration (s):", "41.07"),
    _row("Mean TTFT (ms):", "812.55"),
    "=" * 50,
]


def test_sglang_bench_serving_result_table_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN the client's tqdm-less output: its result table (sglang 0.5.6 bench_serving.py)
    # WHEN analysed
    code, report = _analyze(tmp_path, SGLANG_TABLE)
    # THEN finished, in serving: the benchmark's requests were served, and nothing to blame
    assert (code, report["verdict"], report["phase"], report["system"]) == (0, "finished", "serving", "bench")
    assert report["root_cause"] is None


def test_vllm_bench_serve_with_every_request_failed_crashed(tmp_path: Path) -> None:
    # GIVEN vllm bench serve's table (vllm/benchmarks/serve.py) counting no successful request
    lines = [
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _row("Successful requests:", "0"),
        _row("Failed requests:", "1000"),
        _row("Benchmark duration (s):", "3.20"),
    ]
    # WHEN analysed THEN crashed in serving, the zero count the cause
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["phase"]) == (4, "crashed", "serving")
    assert report["root_cause"]["line"] == 2


# sglang 0.5.6 bench_one_batch.py latency_test_run_once: one run's lines
def _run(prefill: str, total: str) -> list[str]:
    return [
        f"Prefill. latency: {prefill} s, throughput:  1024.00 token/s",
        "Decode 0. Batch size: 8, latency: 0.01200 s, throughput:    666.67 token/s",
        "Decode 1. Batch size: 8, latency: 0.01180 s, throughput:    677.97 token/s",
        "Decode.  median latency: 0.01190 s, median throughput:    672.27 token/s",
        f"Total. latency: {total} s, throughput:   5120.00 token/s",
    ]


def test_bench_one_batch_ending_after_its_last_run_is_finished(tmp_path: Path) -> None:
    # GIVEN the warm-up run, `Benchmark ...` and two runs of the sweep, the log ending after the last
    sweep = [*_run("0.40000", " 0.500"), *_run("0.80000", " 1.000")]
    lines = ["Warmup ...", *_run("0.50000", " 0.600"), "Benchmark ...", *sweep]
    # WHEN analysed THEN finished in serving, said from the last run's line
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["phase"]) == (0, "finished", "serving")
    assert f"(line {len(lines)})" in report["reason"]


def test_bench_one_batch_cut_inside_a_run_after_the_warmup_did_not_finish(tmp_path: Path) -> None:
    # GIVEN the warm-up run, then the benchmark's first run cut after its decode steps
    lines = ["Warmup ...", *_run("0.50000", " 0.600"), "Benchmark ...", *_run("0.40000", " 0.500")[:3]]
    # WHEN analysed THEN not finished: the warm-up's end line came before the run that goes on
    _, report = _analyze(tmp_path, lines)
    assert report["verdict"] == "stalled"
    assert report["phase"] == "serving"


def test_a_servers_log_with_a_clients_table_after_it_stays_the_servers(tmp_path: Path) -> None:
    # GIVEN SGLang's ready line, then a client's result table pasted after it
    lines = ["[2025-06-01 10:00:00] The server is fired up and ready to roll!", *SGLANG_TABLE]
    # WHEN analysed THEN the server's: ready (a server does not finish)
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["system"]) == (0, "ready", "sglang")


def test_vllm_2023_serving_benchmark_last_line_ends_the_job(tmp_path: Path) -> None:
    # GIVEN the 2023 benchmark_serving.py's results after its Namespace print
    lines = [
        "Namespace(backend='vllm', host='localhost', port=8000, num_prompts=200, request_rate=inf, seed=0)",
        "Total time: 88.02 s",
        "Throughput: 2.27 requests/s",
        "Average latency: 40.11 s",
        "Average latency per token: 0.12 s",
        "Average latency per output token: 0.63 s",
    ]
    # WHEN analysed THEN finished, in serving
    code, report = _analyze(tmp_path, lines)
    assert (code, report["verdict"], report["phase"]) == (0, "finished", "serving")


def test_bench_latency_0_1_18_runs_are_steps_and_its_total_line_ends_them(tmp_path: Path) -> None:
    # GIVEN sglang 0.1.18 bench_latency.py's run: `Prefill. latency: %6.5f s, ...`, `Decode.  latency: %6.5f s, ...`
    # for the first decodes, `Decode.  avg latency: ...`, and the run's `Total. latency: %6.3f s, ...`
    steps = [
        "Prefill. latency: 0.02265 s, throughput:   2648.96 token/s",
        "Decode.  latency: 0.00602 s, throughput:    166.17 token/s",
        "Decode.  latency: 0.00588 s, throughput:    170.07 token/s",
        "Decode.  avg latency: 0.00593 s, avg throughput:    168.63 token/s",
    ]
    # WHEN the run cut before its total line, and the whole run, are analysed
    _, cut = _analyze(tmp_path, steps)
    code, whole = _analyze(tmp_path, [*steps, "Total. latency:  0.076 s, throughput:    923.17 token/s"])
    # THEN the cut run is in its steps, open; the whole run finished
    assert (cut["phase"], cut["verdict"]) == ("serving", "stalled")
    assert (code, whole["phase"], whole["verdict"]) == (0, "serving", "finished")
