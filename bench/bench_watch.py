"""Benchmark `logphase watch`: CPU use while following a log written at 1,000 lines/s.

Target (issue 4): under 2 % of one core. Watch runs as a subprocess on a log this process writes
(a SGLang TP8 start that reaches CUDA-graph capture, then NCCL_DEBUG=INFO chatter and capture-bar
updates); its CPU time comes from the children's rusage. Two runs of different lengths separate the
steady cost per second of following from the one-off start (imports, loading the packs)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

RATE = 1000  # lines per second
BATCH_S = 0.01  # the writer writes every 10 ms, as a busy server's loggers do
DURATIONS = (4.0, 12.0)
TARGET_PERCENT = 2.0


def startup_lines() -> list[str]:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    ranks = [f"TP{rank}" for rank in range(8)]
    lines = [
        f"[{stamp}] server_args=ServerArgs(model_path='/models/bench-70b', tp_size=8, pp_size=1, dp_size=1, ep_size=1)"
    ]
    for template in (
        "Init torch distributed begin.",
        "Init torch distributed ends. mem usage=0.10 GB",
        "Load weight begin. avail mem=78.00 GB",
        "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=64.00 GB, mem usage=14.00 GB.",
        "KV Cache is allocated. #tokens: 100000, K size: 10.00 GB, V size: 10.00 GB",
        "Memory pool end. avail mem=40.00 GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB",
    ):
        lines.extend(f"[{stamp} {rank}] {template}" for rank in ranks)
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


def write_log(path: Path, seconds: float, stop: threading.Event) -> int:
    written = 0
    with path.open("a", buffering=1) as out:
        out.write("\n".join(startup_lines()) + "\n")
        began = time.monotonic()
        while not stop.is_set():
            elapsed = time.monotonic() - began
            if elapsed >= seconds:
                break
            due = int(elapsed * RATE) - written
            if due > 0:
                out.write("".join(chatter(written + i) + "\n" for i in range(due)))
                out.flush()
                written += due
            time.sleep(BATCH_S)
    return written


def run_once(seconds: float, workdir: Path) -> tuple[float, float, int]:
    """(CPU seconds of watch, wall seconds, lines written)."""
    log = workdir / f"server-{seconds:g}.log"
    log.touch()
    stop = threading.Event()
    result: dict[str, int] = {}
    writer = threading.Thread(target=lambda: result.setdefault("lines", write_log(log, seconds, stop)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    env = {**os.environ, "XDG_DATA_HOME": str(workdir / "data")}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "logphase", "watch", str(log), "--timeout", str(seconds), "--stall-after", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    writer.start()
    _, stderr = watcher.communicate(timeout=seconds + 60)
    wall = time.monotonic() - began
    stop.set()
    writer.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if watcher.returncode != 5:
        raise SystemExit(
            f"bench_watch: watch exited {watcher.returncode}, expected 5 (--timeout):\n{stderr.decode()[-2000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, result.get("lines", 0)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        runs = [run_once(seconds, Path(tmp)) for seconds in DURATIONS]
    (short_cpu, short_wall, _), (long_cpu, long_wall, long_lines) = runs
    steady = (long_cpu - short_cpu) / (long_wall - short_wall) * 100
    print("bench_watch: logphase watch following a log written at 1,000 lines/s")
    for (cpu, wall, lines), seconds in zip(runs, DURATIONS, strict=True):
        print(
            f"  {seconds:4.0f} s run: {lines} lines, watch CPU {cpu:.2f} s over {wall:.1f} s wall "
            f"({cpu / wall * 100:.1f} % incl. start-up)"
        )
    print(f"  start-up (imports, packs): ~{short_cpu - steady / 100 * short_wall:.2f} s CPU once")
    verdict = "OK" if steady < TARGET_PERCENT else "OVER TARGET"
    print(f"  steady state: {steady:.2f} % of one core (target < {TARGET_PERCENT:.0f} %): {verdict}")
    print(f"  written at {long_lines / DURATIONS[1]:.0f} lines/s")


if __name__ == "__main__":
    main()
