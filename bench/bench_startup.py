"""Benchmark logphase's start-up: `--help`, `--version`, and `analyze` on small fixture logs with a cold
cache, a warm cache and no cache (LOGPHASE_NO_CACHE), best of N fresh processes; and the import-time
top 10 of a warm `analyze`.

Targets (issue 13): a small log analysed in ≤ 150 ms wall; `logphase --help` ≤ 100 ms. Each run is a
new interpreter, as a user's is; the byte-code files are written first (as `pip install` does),
since PYTHONDONTWRITEBYTECODE would make every run compile logphase's sources again."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = (
    "fixtures/logs/other/empty.log",
    "fixtures/logs/sglang/v030-time-only-ready.log",
    "fixtures/logs/sglang/tp8-ready-serving.log",
    "fixtures/logs/sglang/eagle3-tp8-warmup-health-503.log",  # `make demo`'s
)
REPEATS = int(os.environ.get("LOGPHASE_BENCH_REPEATS", "5"))


def _env(cache: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "LOGPHASE_NO_CACHE")}
    if cache is None:
        env["LOGPHASE_NO_CACHE"] = "1"
    else:
        env["XDG_CACHE_HOME"] = str(cache)
    return env


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run: the CPU time (user + system) hardly moves with the machine's load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(args: list[str], mode: str) -> tuple[float, float, float]:
    """(best wall, median wall, best CPU) seconds of REPEATS runs; `cold`: each run with a new,
    empty cache folder; `warm`: one folder, filled by a run before; `none`: LOGPHASE_NO_CACHE."""
    argv = [sys.executable, "-m", "logphase", *args]
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        warm = Path(scratch) / "warm"
        if mode == "warm":
            _run(argv, _env(warm))  # fills it
        for index in range(REPEATS):
            if mode == "cold":
                runs.append(_run(argv, _env(Path(scratch) / f"cold-{index}")))
            else:
                runs.append(_run(argv, _env(warm if mode == "warm" else None)))
    walls = sorted(wall for wall, _ in runs)
    return walls[0], walls[len(walls) // 2], min(cpu for _, cpu in runs)


def import_top(log: str, count: int = 10) -> tuple[float, list[tuple[float, float, str]]]:
    """The total import time of a warm `analyze` (-X importtime, the least of 3 runs) and its `count`
    modules of most self time (ms)."""
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        env = _env(Path(scratch))
        argv = [sys.executable, "-X", "importtime", "-m", "logphase", "analyze", "--post-mortem", log]
        subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False)  # warm the cache
        for _ in range(3):
            stderr = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False, text=True).stderr
            rows = []
            for line in stderr.splitlines():
                found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
                if found:
                    rows.append((int(found[1]) / 1000, int(found[2]) / 1000, found[4]))
            runs.append((sum(self_ms for self_ms, _, _ in rows), rows))
    total, rows = min(runs, key=lambda run: run[0])
    return total, sorted(rows, reverse=True)[:count]


def main() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "logphase")], env=_env(None), check=False)
    print(f"Python {sys.version.split()[0]}, {REPEATS} runs each: best and median wall, best CPU (user + system)")
    print("| command | cache | best ms | median ms | CPU ms |")
    print("|---|---|---|---|---|")
    for args in (["--help"], ["--version"]):
        best, median, cpu = timed(args, "warm")
        print(f"| logphase {' '.join(args)} | - | {best * 1000:.0f} | {median * 1000:.0f} | {cpu * 1000:.0f} |")
    for log in LOGS:
        for mode in ("cold", "warm", "none"):
            best, median, cpu = timed(["analyze", "--post-mortem", log], mode)
            times = f"{best * 1000:.0f} | {median * 1000:.0f} | {cpu * 1000:.0f}"
            print(f"| analyze --post-mortem {Path(log).name} | {mode} | {times} |")
    total, top = import_top(LOGS[-1])
    print(f"\nImports of a warm `analyze` ({Path(LOGS[-1]).name}): {total:.0f} ms in all; top 10 by self time:")
    print("| module | self ms | cumulative ms |")
    print("|---|---|---|")
    for self_ms, cumulative_ms, name in top:
        print(f"| {name} | {self_ms:.1f} | {cumulative_ms:.1f} |")


if __name__ == "__main__":
    main()
