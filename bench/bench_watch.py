"""Benchmark `logphase watch`: CPU use while following a log written at 1,000 lines/s.

Target (issue 4): under 2 % of one core. Watch runs as a subprocess on a log this process writes
(a SGLang TP8 start that reaches CUDA-graph capture, then NCCL_DEBUG=INFO chatter and capture-bar
updates). Its CPU time is read from /proc/PID/stat after the start-up (imports, loading the packs,
reading the first lines) and again near the end: the difference over the wall time between them is
the steady cost of following."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

RATE = 1000  # lines per second
BATCH_S = 0.01  # the writer writes every 10 ms, as a busy server's loggers do
DURATION_S = 20.0
SETTLE_S = 4.0  # start-up done: the steady state is measured from here to a second before the end
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far (/proc/PID/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(seconds: float, workdir: Path) -> tuple[float, float, float, int]:
    """(CPU seconds of watch's start-up, CPU seconds and wall seconds of its steady following
    measured from SETTLE_S on, lines written)."""
    log = workdir / "server.log"
    log.touch()
    stop = threading.Event()
    result: dict[str, int] = {}
    writer = threading.Thread(target=lambda: result.setdefault("lines", write_log(log, seconds, stop)))
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
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        start_cpu, cpu, wall, lines = run_once(DURATION_S, Path(tmp))
    steady = cpu / wall * 100
    print("bench_watch: logphase watch following a log written at 1,000 lines/s")
    print(f"  {DURATION_S:.0f} s run: {lines} lines ({lines / DURATION_S:.0f} lines/s)")
    print(f"  start-up (imports, packs, first lines): {start_cpu:.2f} s CPU in the first {SETTLE_S:.0f} s")
    verdict = "OK" if steady < TARGET_PERCENT else "OVER TARGET"
    print(
        f"  steady state: {cpu:.2f} s CPU over {wall:.1f} s = {steady:.2f} % of one core "
        f"(target < {TARGET_PERCENT:.0f} %): {verdict}"
    )


if __name__ == "__main__":
    main()
