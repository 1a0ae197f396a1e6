"""Start-ups of SGLang and vLLM servers, line by line with the time each line was written: a CUDA-graph
capture bar whose ticks wait chosen seconds (tqdm's own `[elapsed<remaining, rate]` on each, no stamp),
and ranks that stop at a chosen line. The formats are the systems' (shared reference sglang.md §2.1, §2.5;
nccl_torch_vllm.md §6.1, §6.3); the times are exact so a test knows when each tick came."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

SGLANG_ARGS = "server_args=ServerArgs(model_path='/models/Qwen3-32B', tp_size={tp}, port=30000)"


@dataclass(frozen=True)
class Startup:
    """The lines of a start-up and when each was written; `ticks`: the indexes of the bar's lines."""

    lines: tuple[str, ...]
    times: tuple[datetime, ...]
    ticks: tuple[int, ...]

    def cut(self, end: int) -> Startup:
        """The first `end` lines: the log as read before the rest was written."""
        return Startup(self.lines[:end], self.times[:end], tuple(t for t in self.ticks if t < end))


def tqdm_interval(seconds: float) -> str:
    """tqdm.format_interval: `MM:SS`, `H:MM:SS` past an hour (whole seconds, truncated)."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def bar_line(desc: str, done: int, total: int, elapsed: float) -> str:
    """One tqdm update in its default format: `desc:  45%|████▍     | 30/67 [00:03<00:03, 10.2it/s]`."""
    percent = 100 * done // total
    filled = "█" * (10 * done // total)
    if done == 0 or elapsed <= 0:
        timing = f"{tqdm_interval(elapsed)}<?, ?it/s"
    else:
        per_step = elapsed / done
        rate = f"{done / elapsed:.2f}it/s" if per_step < 1 else f"{per_step:.2f}s/it"
        timing = f"{tqdm_interval(elapsed)}<{tqdm_interval(per_step * (total - done))}, {rate}"
    return f"{desc}: {percent:3d}%|{filled:<10}| {done}/{total} [{timing}]"


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.times: list[datetime] = []
        self.ticks: list[int] = []

    def put(self, at: datetime, text: str, *, tick: bool = False) -> None:
        if tick:
            self.ticks.append(len(self.lines))
        self.lines.append(text)
        self.times.append(at)

    def done(self) -> Startup:
        return Startup(tuple(self.lines), tuple(self.times), tuple(self.ticks))


def sglang_startup(start: datetime, waits: Sequence[int], *, ranks: int = 4, lagging: int | None = None) -> Startup:
    """SGLang TP`ranks`: launch, dist init, weights, KV pool, then the capture; TP0 draws the bar (one tick
    after each of `waits`, whole seconds). `lagging`: that rank never leaves its KV pool (it stops at
    `Memory pool end`, its peers capture)."""
    out = _Writer()
    now = start

    def stamp(rank: int | None, text: str) -> None:
        tag = f" TP{rank}" if rank is not None else ""
        out.put(now, f"[{now:%Y-%m-%d %H:%M:%S}{tag}] {text}")

    stamp(None, SGLANG_ARGS.format(tp=ranks))
    now += timedelta(seconds=2)
    for rank in range(ranks):
        stamp(rank, "Init torch distributed begin.")
    now += timedelta(seconds=5)
    for rank in range(ranks):
        stamp(rank, "Init torch distributed ends. mem usage=0.50 GB")
    for rank in range(ranks):
        stamp(rank, "Load weight begin. avail mem=78.00 GB")
    now += timedelta(seconds=30)
    for rank in range(ranks):
        stamp(
            rank,
            "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB, mem usage=18.00 GB.",
        )
    for rank in range(ranks):
        stamp(rank, "KV Cache is allocated. #tokens: 200000, K size: 8.00 GB, V size: 8.00 GB")
    now += timedelta(seconds=1)
    for rank in range(ranks):
        stamp(rank, "Memory pool end. avail mem=40.00 GB")
    now += timedelta(seconds=1)
    for rank in range(ranks):
        if rank != lagging:
            stamp(rank, "Capture cuda graph begin. This can take up to several minutes. avail mem=40.00 GB")
    total, elapsed = len(waits), 0
    out.put(now, bar_line("Capturing batches (bs=256 avail_mem=39.00 GB)", 0, total, 0), tick=True)
    for done, wait in enumerate(waits, start=1):
        now += timedelta(seconds=wait)
        elapsed += wait
        out.put(
            now,
            bar_line(f"Capturing batches (bs={max(1, 256 - done)} avail_mem=39.00 GB)", done, total, elapsed),
            tick=True,
        )
    for rank in range(ranks):
        if rank != lagging:
            stamp(
                rank, f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage=1.00 GB. avail mem=38.00 GB."
            )
    return out.done()


def vllm_startup(start: datetime, waits: Sequence[int], *, ranks: int = 2) -> Startup:
    """vLLM 0.10 V1 with TP`ranks` workers (`(Worker_TP1 pid=N) ` tags): weights, KV cache, then
    the capture bar, printed by the rank-0 worker behind its tag, one tick after each of `waits`."""
    out = _Writer()
    now = start

    def log(who: str, where: str, text: str) -> None:
        out.put(now, f"({who}) INFO {now:%m-%d %H:%M:%S} [{where}] {text}")

    out.put(now, f"INFO {now:%m-%d %H:%M:%S} [api_server.py:1896] vLLM API server version 0.10.2")
    now += timedelta(seconds=3)
    workers = [f"Worker_TP{rank} pid={1200 + rank}" for rank in range(ranks)]
    for who in workers:
        log(who, "gpu_model_runner.py:2338", "Starting to load model Qwen/Qwen3-8B...")
    now += timedelta(seconds=20)
    for who in workers:
        log(who, "default_loader.py:269", "Loading weights took 19.50 seconds")
    now += timedelta(seconds=2)
    for who in workers:
        log(who, "gpu_worker.py:298", "Available KV cache memory: 52.37 GiB")
    # the capture starts in the second of the KV cache lines: a bar's date is as exact as that stamp
    total, elapsed = len(waits), 0
    desc = f"({workers[0]}) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"
    out.put(now, bar_line(desc, 0, total, 0), tick=True)
    for done, wait in enumerate(waits, start=1):
        now += timedelta(seconds=wait)
        elapsed += wait
        out.put(now, bar_line(desc, done, total, elapsed), tick=True)
    for who in workers:
        log(who, "gpu_model_runner.py:3118", f"Graph capturing finished in {elapsed} secs, took 0.50 GiB")
    return out.done()
