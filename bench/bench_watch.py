"""Benchmark `logphase watch`: CPU use while following a log written at 1,000 lines/s.

Target (issues 4 and 13): under 2 % of one core, on every shape. Watch runs as a subprocess on a
log this process writes: `startup` is a SGLang TP8 start that reaches CUDA-graph capture, then
NCCL_DEBUG=INFO chatter and capture-bar updates; every other shape is a busy server's serving
lines from bench/shapes.py (8 ranks and the HTTP server interleaved line by line, from a printed
seed; LOGPHASE_BENCH_SHAPES chooses, LOGPHASE_BENCH_SEED repeats). Its CPU time is read from
/proc/PID/stat after the start-up (imports, loading the packs, reading the first lines) and again
near the end: the difference over the wall time between them is the steady cost of following."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from itertools import count
from pathlib import Path

from bench.shapes import RANKS, SHAPES, VLLM, SGLang, Shape

RATE = 1000  # lines per second
BATCH_S = 0.01  # the writer writes every 10 ms, as a busy server's loggers do
DURATION_S = 20.0
SETTLE_S = 4.0  # start-up done: the steady state is measured from here to a second before the end
TARGET_PERCENT = 2.0


def startup_lines(stamp: Callable[[int | None], str] | None = None) -> list[str]:
    """SGLang's TP8 start up to the graph capture; `stamp(rank)` is the line's `[…] ` prefix."""
    if stamp is None:
        now = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        stamp = lambda rank: f"[{now}] " if rank is None else f"[{now} TP{rank}] "  # noqa: E731
    args = "model_path='/models/bench-70b', tp_size=8, pp_size=1, dp_size=1, ep_size=1"
    lines = [f"{stamp(None)}server_args=ServerArgs({args})"]
    for template in (
        "Init torch distributed begin.",
        "Init torch distributed ends. mem usage=0.10 GB",
        "Load weight begin. avail mem=78.00 GB",
        "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.00 GB, mem usage=14.00 GB.",
        "KV Cache is allocated. #tokens: 100000, K size: 10.00 GB, V size: 10.00 GB",
        "Memory pool end. avail mem=40.00 GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB",
    ):
        lines.extend(f"{stamp(rank)}{template}" for rank in range(8))
    return lines


def chatter(index: int) -> str:
    """NCCL_DEBUG=INFO lines, with a capture-bar update now and then (progress keeps coming)."""
    if index % 200 == 0:
        done = (index // 200) % 52
        bar = f"{done * 100 // 52:3d}%|##   | {done}/52 [00:{done:02d}<00:30,  1.70it/s]"
        return f"Capturing batches (bs={512 - done * 8} avail_mem=39.00 GB): {bar}"
    rank = index % 8
    return (
        f"gpu-node-17:{4000 + rank}:{5000 + rank} [{rank}] NCCL INFO Channel {index % 32:02d}/0 : "
        f"{rank}[{rank}] -> {(rank + 1) % 8}[{(rank + 1) % 8}] via P2P/IPC/read"
    )


# Each format and wrapper of bench/shapes.py once (a start-up has no serving mix, and is never
# rotated away); per-rank files, the pooled generator and the real logs grown are analyze's shapes.
def watch_shapes() -> list[str]:
    first: dict[tuple[object, object], str] = {}
    for name, shape in SHAPES.items():
        if isinstance(shape, Shape) and not shape.per_rank:
            first.setdefault((shape.format, shape.wrap), name)
    return ["startup", *first.values()]


WATCH_SHAPES = watch_shapes()
VLLM_STARTUP = (  # vLLM's start-up lines up to the graph capture (reference/nccl_torch_vllm.md §6)
    ("gpu_model_runner.py:1329", "Starting to load model /models/bench-70b..."),
    ("gpu_model_runner.py:1347", "Model loading took 14.0000 GiB and 12.000000 seconds"),
    ("gpu_worker.py:298", "Available KV cache memory: 40.00 GiB"),
)


def startup_log() -> tuple[list[str], Iterator[str]]:
    return startup_lines(), (chatter(index) for index in count())


def shape_startup(shape: Shape, seed: int) -> tuple[list[str], Iterator[str]]:
    """A TP8 start in one shape's format (its stamps, tags, process prefixes, wrapper) that reaches
    the CUDA-graph capture, then the capture: every rank's NCCL INFO chatter interleaved line by
    line with a capture bar now and then (serving lines would end watch: it stops at ready)."""
    r = random.Random(seed)
    fmt, now = shape.format, datetime.now()
    if isinstance(fmt, SGLang):
        head = startup_lines(partial(fmt.stamp, now))
    else:
        assert isinstance(fmt, VLLM)
        config = "model='/models/bench-70b', tensor_parallel_size=8"
        launch = (
            ("core.py:76", f"Initializing a V1 LLM engine (v0.10.2) with config: {config}")
            if fmt.v1
            else ("llm_engine.py:235", f"Initializing an LLM engine (v0.7.3) with config: {config}")
        )
        head = [fmt.line(now, *launch, "")]
        head += [
            fmt.line(now, where, message, fmt.worker(rank)) for where, message in VLLM_STARTUP for rank in range(RANKS)
        ]

    def body() -> Iterator[str]:
        for index in count():
            rank = r.randrange(RANKS)
            if index % 200:
                yield fmt.nccl(r, datetime.now(), rank)
            else:
                done = (index // 200) % 67
                bar = f"{done * 100 // 67:3d}%|##   | {done}/67 [00:{done % 60:02d}<00:30,  9.10it/s]"
                if isinstance(fmt, SGLang):
                    yield f"Capturing batches (bs=512 avail_mem=39.00 GB): {bar}"
                else:
                    worker = fmt.worker(rank)
                    tag = f"({worker}) " if worker else ""
                    yield f"{tag}Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): {bar}"

    wrap = shape.wrap
    if wrap is None:
        return head, body()
    return [wrap(line, now, r) for line in head], (wrap(line, datetime.now(), r) for line in body())


def write_log(path: Path, seconds: float, stop: threading.Event, log: tuple[list[str], Iterator[str]]) -> int:
    head, body = log
    written = 0
    with path.open("a", buffering=1) as out:
        if head:
            out.write("\n".join(head) + "\n")
        began = time.monotonic()
        while not stop.is_set():
            elapsed = time.monotonic() - began
            if elapsed >= seconds:
                break
            due = int(elapsed * RATE) - written
            if due > 0:
                out.write("".join(next(body) + "\n" for _ in range(due)))
                out.flush()
                written += due
            time.sleep(BATCH_S)
    return written


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far (/proc/PID/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(
    seconds: float, workdir: Path, make_log: Callable[[], tuple[list[str], Iterator[str]]]
) -> tuple[float, float, float, int]:
    """(CPU seconds of watch's start-up, CPU seconds and wall seconds of its steady following
    measured from SETTLE_S on, lines written)."""
    log = workdir / "server.log"
    log.touch()
    stop = threading.Event()
    result: dict[str, int] = {}
    writer = threading.Thread(target=lambda: result.setdefault("lines", write_log(log, seconds, stop, make_log())))
    env = {**os.environ, "XDG_DATA_HOME": str(workdir / "data")}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "logphase", "watch", str(log), "--timeout", str(seconds), "--stall-after", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    writer.start()
    time.sleep(SETTLE_S)
    settled_cpu, settled_at = cpu_seconds(watcher.pid), time.monotonic()
    time.sleep(seconds - SETTLE_S - 1.0)
    end_cpu, end_at = cpu_seconds(watcher.pid), time.monotonic()
    _, stderr = watcher.communicate(timeout=seconds + 60)
    stop.set()
    writer.join()
    if watcher.returncode != 5:
        raise SystemExit(
            f"bench_watch: watch exited {watcher.returncode}, expected 5 (--timeout):\n{stderr.decode()[-2000:]}"
        )
    return settled_cpu, end_cpu - settled_cpu, end_at - settled_at, result.get("lines", 0)


def main() -> None:
    seed = int(os.environ.get("LOGPHASE_BENCH_SEED") or random.SystemRandom().randrange(1, 1 << 16))
    chosen = os.environ.get("LOGPHASE_BENCH_SHAPES")
    names = [name for name in chosen.split(",") if name in WATCH_SHAPES] if chosen else WATCH_SHAPES
    print(f"bench_watch: logphase watch following a log written at {RATE:,} lines/s, {DURATION_S:.0f} s a shape")
    print(f"  seed {seed} (LOGPHASE_BENCH_SEED={seed} repeats this run)")
    print("| shape | lines | start-up CPU s | steady CPU s | over s | % of one core |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for name in names:
        shape = SHAPES.get(name)
        make_log = partial(shape_startup, shape, seed) if isinstance(shape, Shape) else startup_log
        with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
            start_cpu, cpu, wall, lines = run_once(DURATION_S, Path(tmp), make_log)
        steady = cpu / wall * 100
        worst = max(worst, steady)
        print(f"| {name} | {lines} | {start_cpu:.2f} | {cpu:.2f} | {wall:.1f} | {steady:.2f} |", flush=True)
    verdict = "OK" if worst < TARGET_PERCENT else "OVER TARGET"
    print(f"  worst shape: {worst:.2f} % of one core (target < {TARGET_PERCENT:.0f} %): {verdict}")


if __name__ == "__main__":
    main()
