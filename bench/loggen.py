"""Generates realistic multi-GB SGLang server logs for the benchmarks: 8 ranks, NCCL noise, serving, a crash."""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from bench.shapes import SHAPES, rank_of, shape_lines, shape_per_rank

RANKS = 8
HOST = "gpu-node-17"
MODEL = "/models/Qwen2.5-72B-Instruct"
# Lines are written in batches: one write per ~1 MB keeps generation I/O-bound, not syscall-bound.
WRITE_BATCH = 1 << 20
# Distinct pre-rendered scheduler steps the serving section draws from.
EPISODES = 8192
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """`100M`, `1G`, `512K` or a plain byte count → bytes."""
    found = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text.upper())
    if found is None:
        raise ValueError(f"not a size: {text!r} (examples: 100M, 1G)")
    return int(found.group(1)) * SIZE_UNITS[found.group(2)]


class _Clock:
    """The log's wall clock: advances as the simulated server works."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def stamp(self, tags: str = "") -> str:
        return f"[{self.now:%Y-%m-%d %H:%M:%S}{tags}] "


class LogGenerator:
    """One SGLang TP8 run: launch, NCCL init with NCCL_DEBUG=INFO, weight load, KV cache, CUDA
    graphs, HTTP start, warmup, ready; then hours of serving; then TP3 runs out of memory."""

    def __init__(self, seed: int = 20260101) -> None:
        self.random = random.Random(seed)
        self.clock = _Clock(datetime(2026, 3, 2, 9, 14, 7))
        self.pids = [41200 + 7 * rank for rank in range(RANKS)]

    # --- startup -------------------------------------------------------------------------------

    def startup(self) -> Iterator[str]:
        c, r = self.clock, self.random
        yield (
            f"python3 -m sglang.launch_server --model-path {MODEL} --tp 8 --host 0.0.0.0 --port 30000 --log-level info"
        )
        yield (
            f"{c.stamp()}server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', "
            f"tp_size=8, mem_fraction_static=0.88, decode_log_interval=40, log_level='info', "
            f"watchdog_timeout=300)"
        )
        c.tick(2.4)
        yield f"{c.stamp()}Using default HuggingFace chat template with detected content format: string"
        c.tick(5.1)
        for rank in r.sample(range(RANKS), RANKS):
            yield f"{c.stamp(f' TP{rank}')}Init torch distributed begin."
        for rank in range(RANKS):
            yield from self._nccl_init(rank, comm="0x5612a7c0e230", nranks=RANKS)
        for rank in range(RANKS):
            yield (
                f"[Gloo] Rank {rank} is connected to {RANKS - 1} peer ranks. Expected number "
                f"of connected peer ranks is : {RANKS - 1}"
            )
        yield f"{c.stamp(' TP0')}sglang is using nccl==2.21.5"
        c.tick(1.0)
        for rank in range(RANKS):
            yield f"{c.stamp(f' TP{rank}')}Init torch distributed ends. mem usage=0.61 GB"
        for rank in range(RANKS):
            yield f"{c.stamp(f' TP{rank}')}Load weight begin. avail mem=78.52 GB"
        shards = 37
        for done in range(shards + 1):
            rate = 0.9 + r.random()
            yield (
                f"Loading safetensors checkpoint shards: {100 * done // shards:3d}% Completed "
                f"| {done}/{shards} [00:{done:02d}<00:{shards - done:02d}, {rate:.2f}it/s]"
            )
            c.tick(1.7)
        yield ""
        for rank in range(RANKS):
            yield (
                f"{c.stamp(f' TP{rank}')}Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
                f"avail mem=61.33 GB, mem usage=17.19 GB."
            )
        for rank in range(RANKS):
            yield f"{c.stamp(f' TP{rank}')}KV Cache is allocated. #tokens: 1623040, K size: 24.77 GB, V size: 24.77 GB"
        for rank in range(RANKS):
            yield f"{c.stamp(f' TP{rank}')}Memory pool end. avail mem=9.87 GB"
        c.tick(0.6)
        for rank in range(RANKS):
            yield (
                f"{c.stamp(f' TP{rank}')}Capture cuda graph begin. This can take up to several "
                f"minutes. avail mem=9.52 GB"
            )
        sizes = [160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16, 8, 4, 2, 1]
        yield f"{c.stamp(' TP0')}Capture cuda graph bs {sorted(sizes)}"
        # tqdm rewrites the capture bar with \r: one physical line holds every update
        updates = [
            f"Capturing batches (bs={bs} avail_mem=9.{50 - i:02d} GB): "
            f"{100 * i // len(sizes):3d}%|{'█' * (i // 3):<8}| "
            f"{i}/{len(sizes)} [00:{i:02d}<00:{len(sizes) - i:02d},  1.21it/s]"
            for i, bs in enumerate(sizes)
        ]
        yield "\r".join(updates)
        c.tick(34.2)
        yield f"{c.stamp(' TP0')}Registering 5336 cuda graph addresses"
        for rank in range(RANKS):
            yield (
                f"{c.stamp(f' TP{rank}')}Capture cuda graph end. Time elapsed: 35.41 s. mem "
                f"usage=1.38 GB. avail mem=8.14 GB."
            )
        yield (
            f"{c.stamp(' TP0')}max_total_num_tokens=1623040, chunked_prefill_size=8192, "
            f"max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, "
            f"available_gpu_mem=8.14 GB"
        )
        c.tick(1.2)
        yield f"{c.stamp()}INFO:     Started server process [41190]"
        yield f"{c.stamp()}INFO:     Waiting for application startup."
        yield f"{c.stamp()}INFO:     Application startup complete."
        yield f"{c.stamp()}INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"
        c.tick(1.0)
        yield f'{c.stamp()}INFO:     127.0.0.1:51736 - "GET /model_info HTTP/1.1" 200 OK'
        yield (
            f"{c.stamp(' TP0')}Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: "
            f"0, token usage: 0.00, #running-req: 0, #queue-req: 0, "
        )
        c.tick(0.4)
        yield f'{c.stamp()}INFO:     127.0.0.1:51742 - "POST /generate HTTP/1.1" 200 OK'
        yield f"{c.stamp()}The server is fired up and ready to roll!"

    def _nccl_init(self, rank: int, *, comm: str, nranks: int) -> Iterator[str]:
        """What NCCL_DEBUG=INFO prints for one rank joining one communicator (NCCL 2.21)."""
        pid = self.pids[rank]
        p = f"{HOST}:{pid}:{pid} [{rank}] NCCL INFO "
        yield f"{p}Bootstrap : Using eth0:10.42.3.17<0>"
        yield f"{p}NET/Plugin: No plugin found (libnccl-net.so)"
        yield f"{p}cudaDriverVersion 12040"
        yield (
            f"{p}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB "
            f"[RO]; OOB eth0:10.42.3.17<0>"
        )
        yield f"{p}Using network IB"
        busid = f"{0x18 + 0x1A * rank:x}000"
        yield (
            f"{p}ncclCommInitRank comm {comm} rank {rank} nranks {nranks} cudaDev {rank} "
            f"nvmlDev {rank} busId {busid} commId 0x9f3c0a1b2c3d4e5f - Init START"
        )
        yield f"{p}Setting affinity for GPU {rank} to ffffffff,00000000,ffffffff"
        yield f"{p}comm {comm} rank {rank} nRanks {nranks} nNodes 1 localRanks {nranks} localRank {rank} MNNVL 0"
        if rank == 0:
            for channel in range(24):
                yield f"{p}Channel {channel:02d}/24 :    0   1   2   3   4   5   6   7"
        yield (
            f"{p}Trees [0] {(rank + 1) % nranks}/-1/-1->{rank}->{(rank - 1) % nranks} "
            f"[1] {(rank + 1) % nranks}/-1/-1->{rank}->{(rank - 1) % nranks}"
        )
        yield f"{p}P2P Chunksize set to 524288"
        for channel in range(24):
            yield (
                f"{p}Channel {channel:02d}/0 : {rank}[{rank}] -> {(rank + 1) % nranks}[{(rank + 1) % nranks}] "
                f"via P2P/CUMEM/read"
            )
        yield f"{p}Connected all rings"
        for channel in range(24):
            yield (
                f"{p}Channel {channel:02d}/0 : {rank}[{rank}] -> {(rank - 1) % nranks}[{(rank - 1) % nranks}] "
                f"via P2P/CUMEM/read"
            )
        yield f"{p}Connected all trees"
        yield f"{p}threadThresholds 8/8/64 | 64/8/64 | 512 | 512"
        yield f"{p}24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer"
        yield (
            f"{p}ncclCommInitRank comm {comm} rank {rank} nranks {nranks} cudaDev {rank} "
            f"nvmlDev {rank} busId {busid} commId 0x9f3c0a1b2c3d4e5f - Init COMPLETE"
        )
        yield (
            f"{p}Init timings: rank {rank} nranks {nranks} total 0.84 (kernels 0.21, "
            f"bootstrap 0.31, allgathers 0.02, topo 0.18, graphs 0.01, connections 0.09, "
            f"rest 0.02)"
        )

    # --- serving -------------------------------------------------------------------------------

    def serving(self) -> Iterator[str]:
        """Requests forever: a prefill line per batch, a decode line every 40 decode steps, one
        access line per finished request, health and metrics probes; NCCL noise now and then.

        Generating 1 GB line by line with fresh random numbers takes minutes, so the serving lines
        are drawn from a pool of pre-rendered request episodes; only the timestamps are new."""
        c, r = self.clock, self.random
        episodes = [self._episode() for _ in range(EPISODES)]
        stamps: dict[tuple[int, str], str] = {}
        base = c.now
        elapsed_us = 0
        while True:
            for offset_us, tags, body in episodes[r.randrange(EPISODES)]:
                elapsed_us += offset_us
                second = elapsed_us // 1_000_000
                key = (second, tags)
                stamp = stamps.get(key)
                if stamp is None:
                    if len(stamps) > 64:
                        stamps.clear()
                    stamp = stamps[key] = (
                        f"[{base + timedelta(seconds=second):%Y-%m-%d %H:%M:%S}{tags}] " if tags != "-" else ""
                    )
                yield stamp + body
            c.now = base + timedelta(microseconds=elapsed_us)

    def _episode(self) -> list[tuple[int, str, str]]:
        """One scheduler step as (microseconds since the previous line, rank tags, message)."""
        r = self.random
        lines: list[tuple[int, str, str]] = []
        running = r.randrange(8, 160)
        tokens = running * r.randrange(300, 2400)
        new = 1 + int(r.expovariate(0.8))
        usage = tokens / 1623040
        lines.append(
            (
                int(r.expovariate(30.0) * 1e6),
                " TP0",
                f"Prefill batch, #new-seq: {new}, #new-token: {r.randrange(20, 4096)}, #cached-token: "
                f"{r.randrange(0, 2048)}, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {r.randrange(0, 3)}, ",
            )
        )
        if r.random() < 0.6:
            lines.append(
                (
                    int(r.random() * 5e4),
                    " TP0",
                    f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
                    f"cuda graph: True, "
                    f"gen throughput (token/s): {r.uniform(800, 3200):.2f}, #queue-req: {r.randrange(0, 3)}, ",
                )
            )
        for _ in range(new):
            client = f"10.42.{r.randrange(0, 8)}.{r.randrange(2, 250)}:{r.randrange(30000, 65000)}"
            lines.append(
                (int(r.random() * 2e4), "", f'INFO:     {client} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
            )
        roll = r.random()
        if roll < 0.02:
            lines.append((0, "", f'INFO:     127.0.0.1:{r.randrange(30000, 65000)} - "GET /health HTTP/1.1" 200 OK'))
        elif roll < 0.03:
            lines.append((0, "", f'INFO:     10.42.0.5:{r.randrange(30000, 65000)} - "GET /metrics HTTP/1.1" 200 OK'))
        elif roll < 0.034:
            rank = r.randrange(RANKS)
            pid = self.pids[rank]
            lines.append(
                (
                    0,
                    "-",
                    f"{HOST}:{pid}:{pid + 93} [{rank}] NCCL INFO Channel {r.randrange(32):02d}/1 : {rank}[{rank}] -> "
                    f"{(rank + 1) % RANKS}[{(rank + 1) % RANKS}] via P2P/CUMEM/read",
                )
            )
        return lines

    # --- the end -------------------------------------------------------------------------------

    def crash(self) -> Iterator[str]:
        c = self.clock
        c.tick(0.3)
        yield f"{c.stamp(' TP3')}Scheduler hit an exception: Traceback (most recent call last):"
        frames = [
            (
                "/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py",
                2354,
                "run_scheduler_process",
                "scheduler.event_loop_overlap()",
            ),
            (
                "/usr/local/lib/python3.11/dist-packages/torch/utils/_contextlib.py",
                116,
                "decorate_context",
                "return func(*args, **kwargs)",
            ),
            (
                "/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py",
                665,
                "event_loop_overlap",
                "batch_result = self.run_batch(batch)",
            ),
            (
                "/usr/local/lib/python3.11/dist-packages/sglang/srt/model_executor/model_runner.py",
                1021,
                "forward_extend",
                "return self.model.forward(",
            ),
        ]
        for path, line, function, code in frames:
            yield f'  File "{path}", line {line}, in {function}'
            yield f"    {code}"
        yield (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB. "
            "GPU 3 has a total capacity of 79.11 GiB "
            "of which 1.02 GiB is free. Process 41221 has 78.08 GiB memory in use."
        )
        yield ""
        c.tick(0.1)
        yield f"{c.stamp()}Received sigquit from a child process. It usually means the child failed."
        yield "Killed"

    def lines(self, size: int) -> Iterator[str]:
        """About `size` bytes of log (startup, serving, crash), as lines without their newline."""
        tail = list(self._crash_preview())
        budget = size - sum(len(line.encode()) + 1 for line in tail)
        written = 0
        for line in self.startup():
            written += len(line.encode()) + 1
            yield line
        for line in self.serving():
            if written >= budget:
                break
            written += len(line) + 1  # serving lines are ASCII
            yield line
        yield from self.crash()

    def _crash_preview(self) -> Iterator[str]:
        saved = self.clock.now
        yield from self.crash()
        self.clock.now = saved


def write_log(path: Path, size: int, seed: int = 20260101, shape: str = "sglang-pooled") -> Path:
    """Write a log of about `size` bytes to `path` (deterministic for a seed)."""
    write_logs(path, size, seed, shape)
    return path


def write_logs(path: Path, size: int, seed: int = 20260101, shape: str = "sglang-pooled") -> list[Path]:
    """Write a shape's log(s), about `size` bytes in all: `path` itself, or for a per-rank shape one
    file per rank beside it (`NAME.rank3.log`; lines without a rank go to rank 0's, as a launcher
    with one log per local rank writes them)."""
    per_rank = shape_per_rank(shape)
    outputs: dict[int, list[str]] = {}
    files: dict[int, Path] = {}
    handles = {}
    try:
        for line in shape_lines(shape, seed, size):
            rank = rank_of(line) if per_rank else 0
            if rank not in handles:
                files[rank] = path.with_suffix(f".rank{rank}.log") if per_rank else path
                handles[rank] = files[rank].open("w", encoding="utf-8", newline="\n")
                outputs[rank] = []
            batch = outputs[rank]
            batch.append(line)
            if len(batch) >= WRITE_BATCH // 128:
                handles[rank].write("\n".join(batch) + "\n")
                batch.clear()
        for rank, batch in outputs.items():
            if batch:
                handles[rank].write("\n".join(batch) + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    return [files[rank] for rank in sorted(files)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--size", default="100M", help="approximate size: 100M, 1G, ...")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="sglang-pooled")
    args = parser.parse_args(argv)
    write_log(args.path, parse_size(args.size), args.seed, args.shape)


if __name__ == "__main__":
    main()
