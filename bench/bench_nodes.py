"""Benchmark the many-node merge (issue 28): 4,096 ranks (512 nodes × 8) from generated `logphase stacks
--format json` answers, read back per node, merged by node, judged and rendered, in a child process whose
wall time and peak RSS are measured. Bound: ≤ 2 s and ≤ 200 MB.

The answers are what each node's logphase prints: a launcher and 8 ranks, each with a main thread of an
SGLang-like stack (~40 frames) and 3 helper threads; all ranks wait in all_reduce inside CUDA-graph capture
but one (node 317's rank 5, still loading weights), and node 42 gives no answer (a timeout). The bound is
on reading, merging, judging and the table a person reads; `--format json` (17 MB of indented JSON, the
pure-Python encoder) is timed besides."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES, RANKS = 512, 8
BEHIND = (317, 5)
SILENT = 42
WALL_BOUND_S, RSS_BOUND_MB = 2.0, 200

OUTER = [
    "run_scheduler_process (sglang/srt/managers/scheduler.py:2500)",
    "__init__ (sglang/srt/managers/scheduler.py:310)",
    "__init__ (sglang/srt/managers/tp_worker.py:80)",
    "__init__ (sglang/srt/model_executor/model_runner.py:220)",
    "initialize (sglang/srt/model_executor/model_runner.py:300)",
]
CAPTURE = [
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    "wrapper (torch/distributed/c10d_logger.py:83)",
    "all_reduce (sglang/srt/distributed/parallel_state.py:470)",
    "forward (sglang/srt/layers/linear.py:1290)",
    *[f"_call_impl (torch/nn/modules/module.py:{1747 + i})" for i in range(24)],
    "forward (sglang/srt/models/llama.py:420)",
    "capture_one_batch_size (sglang/srt/model_executor/cuda_graph_runner.py:460)",
    "capture (sglang/srt/model_executor/cuda_graph_runner.py:380)",
    "init_cuda_graphs (sglang/srt/model_executor/model_runner.py:1200)",
]
LOADING = [
    "read_tensor (safetensors/torch.py:310)",
    "load_file (safetensors/torch.py:313)",
    "safetensors_weights_iterator (sglang/srt/model_loader/weight_utils.py:420)",
    "load_weights (sglang/srt/models/llama.py:500)",
    "load_model (sglang/srt/model_loader/loader.py:380)",
    "load_model (sglang/srt/model_executor/model_runner.py:700)",
]
HELPERS = [
    ["wait (threading.py:331)", "get (queue.py:180)", "_worker (concurrent/futures/thread.py:81)",
     "run (threading.py:982)", "_bootstrap_inner (threading.py:1045)", "_bootstrap (threading.py:1002)"],
    ["select (selectors.py:468)", "_run_once (asyncio/base_events.py:1898)", "run_forever (asyncio/base_events.py:608)",
     "run (threading.py:982)", "_bootstrap_inner (threading.py:1045)", "_bootstrap (threading.py:1002)"],
    ["recv (zmq/sugar/socket.py:800)", "watchdog_thread (sglang/srt/managers/scheduler.py:2300)",
     "run (threading.py:982)", "_bootstrap_inner (threading.py:1045)", "_bootstrap (threading.py:1002)"],
]  # fmt: skip


def node_answer(node: int) -> str:
    """One node's `logphase stacks --format json`: its launcher and its 8 ranks."""
    processes = [
        {
            "pid": 100,
            "ppid": 1,
            "rank": None,
            "role": "main",
            "title": "python3 -m sglang.launch_server --tp 4096 --nnodes 512",
            "host": f"gpu-{node:03d}",
            "threads": [{"id": "100", "name": "MainThread", "main": True, "frames": ["wait (subprocess.py:1264)"]}],
        }
    ]
    for rank in range(RANKS):
        inner = LOADING if (node, rank) == BEHIND else CAPTURE
        threads = [{"id": str(200 + rank), "name": "MainThread", "main": True, "active": False,
                    "frames": [*inner, *reversed(OUTER)]}]  # fmt: skip
        threads += [{"id": f"{200 + rank}{i}", "name": f"Thread-{i}", "frames": h} for i, h in enumerate(HELPERS)]
        processes.append(
            {
                "pid": 200 + rank,
                "ppid": 100,
                "rank": f"TP{rank}",
                "role": "scheduler",
                "title": f"sglang::scheduler_TP{rank}",
                "host": f"gpu-{node:03d}",
                "threads": threads,
            }
        )
    return json.dumps({"schema": "logphase.stacks/1", "samples": 1, "interval_s": 0, "processes": processes}, indent=2)


def child(folder: Path) -> None:
    """The measured side: the answers as the transport hands them over, read, merged, judged, rendered."""
    started = time.perf_counter()
    from logphase.judging.stalls import summarize
    from logphase.nodes.stacks import snapshots_of
    from logphase.nodes.transport import NodeRun
    from logphase.packs import load_packs
    from logphase.report.formats.json import JsonFormat
    from logphase.report.formats.table import TableFormat

    signatures = load_packs(line_rules=False).signatures
    loaded = time.perf_counter()
    runs = [
        NodeRun(node=f"gpu-{n:03d}", failure="timeout: no answer within 30s")
        if n == SILENT
        else NodeRun(node=f"gpu-{n:03d}", stdout=(folder / f"{n}.json").read_bytes(), returncode=4, ended=1.0)
        for n in range(NODES)
    ]
    read = time.perf_counter()
    snapshots = snapshots_of(runs, "ssh")
    parsed = time.perf_counter()
    report = summarize(snapshots, signatures, by_node=True)
    merged = time.perf_counter()
    table = TableFormat(colour=False).stacks(report)
    rendered = time.perf_counter()
    as_json = JsonFormat().stacks(report)
    jsoned = time.perf_counter()
    print(
        json.dumps(
            {
                "startup_s": loaded - started,
                "parse_s": parsed - read,
                "merge_s": merged - parsed,
                "table_s": rendered - merged,
                "json_s": jsoned - rendered,
                "merge_total_s": rendered - read,
                "ranks": sum(1 for s in snapshots if s.rank),
                "culprits": list(report.culprit_ranks),
                "summary": report.summary,
                "json_mb": len(as_json) / 1e6,
                "table_lines": table.count("\n"),
            }
        )
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-nodes-") as tmp:
        folder = Path(tmp)
        for node in range(NODES):
            if node != SILENT:
                (folder / f"{node}.json").write_text(node_answer(node))
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_nodes", "--child", str(folder)], capture_output=True, text=True
        )
        wall = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"bench_nodes: the child failed: {out.stderr[-2000:]}")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    figures = json.loads(out.stdout)
    print(f"bench_nodes: {NODES} nodes × {RANKS} ranks = {figures['ranks']} ranks, {size:.0f} MB of answers")
    print(
        f"  read {figures['parse_s']:.2f}s + merge and judge {figures['merge_s']:.2f}s + table "
        f"{figures['table_s']:.2f}s = {figures['merge_total_s']:.2f}s (bound {WALL_BOUND_S:g}s); "
        f"--format json besides {figures['json_s']:.2f}s ({figures['json_mb']:.0f} MB); process {wall:.2f}s with "
        f"start-up {figures['startup_s']:.2f}s; peak RSS {rss_mb:.0f} MB (bound {RSS_BOUND_MB} MB)"
    )
    print(f"  culprits {figures['culprits']}; {figures['summary'][-90:]}")
    ok = figures["merge_total_s"] <= WALL_BOUND_S and rss_mb <= RSS_BOUND_MB
    print(f"  {'within' if ok else 'OVER'} the bounds")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(Path(sys.argv[2]))
    else:
        main()
