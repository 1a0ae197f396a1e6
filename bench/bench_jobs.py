"""Benchmark `logphase analyze --jobs 1` against `--jobs N` on generated logs: wall time, memory of the process tree.

Sizes: LOGPHASE_BENCH_SIZES (default 100M); shapes: LOGPHASE_BENCH_SHAPES (default: the shapes the
fast path reads: sglang-0.5, vllm-v1, nccl-storm, per-rank); jobs: LOGPHASE_BENCH_JOBS (default 2);
seed: LOGPHASE_BENCH_SEED (default 13); repeats: LOGPHASE_BENCH_REPEATS (default 3 below 1 GB, 1
from it). Best of the runs, alternated. CPU: user + system seconds of the tree (the CLI and the
workers it reaped): what a split adds or saves, on a shared machine whose wall times are set by the
other processes. Memory: the tree (the CLI and its workers) is sampled every 10 ms from /proc: the
peak of the sum of RSS (pages a worker shares with its parent after the fork counted in each: an
upper bound) and of the sum of PSS (shared pages split among the processes that map them: what the
tree takes). Prints a Markdown table for BENCHMARKS.md and checks the reports are the same."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.loggen import parse_size, write_logs

SHAPES = "sglang-0.5,vllm-v1,nccl-storm,per-rank"
SAMPLE_S = 0.01


@dataclass(frozen=True)
class Run:
    seconds: float
    cpu_seconds: float  # user + system of the CLI and its reaped workers
    walk_seconds: float  # user + system of the CLI's process alone (the walk), as last sampled
    rss_mb: float  # peak of the tree's summed RSS
    pss_mb: float  # peak of the tree's summed PSS
    output: bytes


def tree(root: int) -> list[int]:
    """The process and its descendants (from /proc/PID/task/*/children)."""
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                    pending += [int(child) for child in children.read().split()]
        except OSError:
            continue
    return found


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB; zeros once it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def own_cpu(pid: int) -> float:
    """User + system seconds of one process, its children not counted; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        peak_rss = peak_pss = 0
        walk = 0.0
        while child.poll() is None:
            walk = max(walk, own_cpu(child.pid))
            sums = [memory_kb(pid) for pid in tree(child.pid)]
            peak_rss = max(peak_rss, sum(rss for rss, _ in sums))
            peak_pss = max(peak_pss, sum(pss for _, pss in sums))
            time.sleep(SAMPLE_S)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        out.seek(0)
        return Run(seconds, cpu, walk, peak_rss / 1024, peak_pss / 1024, out.read())


def main() -> None:
    sizes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SIZES", "100M").split(",") if s.strip()]
    shapes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SHAPES", SHAPES).split(",") if s.strip()]
    jobs = int(os.environ.get("LOGPHASE_BENCH_JOBS", "2"))
    seed = int(os.environ.get("LOGPHASE_BENCH_SEED", "13"))
    logphase = shutil.which("logphase") or str(Path(sys.executable).parent / "logphase")
    print(f"## `analyze --jobs 1` vs `--jobs {jobs}` ({os.cpu_count()} CPUs, seed {seed})\n")
    print(
        f"| size | shape | --jobs 1 s | --jobs {jobs} s | speed-up | CPU s, 1 / {jobs} | walk CPU s, 1 / {jobs} "
        f"| peak RSS MB, 1 / {jobs} (sum) | peak PSS MB, 1 / {jobs} (sum) | same report |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="logphase-jobs-") as folder:
        for size in sizes:
            wanted = parse_size(size)
            if shutil.disk_usage(folder).free < 2 * wanted:
                print(f"| {size} | - | skipped: too little disk in {folder} | | | | | | | |")
                continue
            for shape in shapes:
                logs = write_logs(Path(folder) / f"jobs-{size}-{shape}.log", wanted, seed=seed, shape=shape)
                try:
                    repeats = int(os.environ.get("LOGPHASE_BENCH_REPEATS", "0")) or (3 if wanted < 1 << 30 else 1)
                    argv = [logphase, "analyze", "--post-mortem", "--format", "json", "--as-of", "2030-01-01 00:00:00"]
                    names = [str(log) for log in logs]
                    runs: dict[int, list[Run]] = {1: [], jobs: []}
                    for _ in range(repeats):  # alternated: a busy moment of the machine slows both alike
                        for count in runs:
                            runs[count].append(timed([*argv, "--jobs", str(count), *names]))
                    one, many = (min(runs[count], key=lambda r: r.seconds) for count in (1, jobs))
                    print(
                        f"| {size} | {shape} | {one.seconds:.2f} | {many.seconds:.2f} | "
                        f"{one.seconds / many.seconds:.2f} | {one.cpu_seconds:.2f} / {many.cpu_seconds:.2f} | "
                        f"{one.walk_seconds:.2f} / {many.walk_seconds:.2f} | "
                        f"{one.rss_mb:.0f} / {many.rss_mb:.0f} | "
                        f"{one.pss_mb:.0f} / {many.pss_mb:.0f} | {'yes' if one.output == many.output else 'NO'} |",
                        flush=True,
                    )
                finally:
                    for log in logs:
                        log.unlink()


if __name__ == "__main__":
    main()
