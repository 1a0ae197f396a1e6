"""Benchmark logphase's start-up: `--help`, `--version`, and `analyze` on small fixture logs with a cold
cache, a warm cache and no cache (LOGPHASE_NO_CACHE), best of N fresh processes; and the import-time
top 10 of a warm `analyze`.

Targets (issue 13): a small log analysed in ≤ 150 ms wall; `logphase --help` ≤ 100 ms. Each run is a
new interpreter, as a user's is; the byte-code files are written first (as `pip install` does),
since PYTHONDONTWRITEBYTECODE would make every run compile logphase's sources again."""

from __future__ import annotations

import os
import re
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


def _wall(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def timed(args: list[str], mode: str) -> tuple[float, float]:
    """(best, median) seconds of REPEATS runs; `cold`: each run with a new, empty cache folder."""
    argv = [sys.executable, "-m", "logphase", *args]
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        warm = Path(scratch) / "warm"
        if mode == "warm":
            _wall(argv, _env(warm))  # fills it
        for index in range(REPEATS):
            if mode == "cold":
                times.append(_wall(argv, _env(Path(scratch) / f"cold-{index}")))
            else:
                times.append(_wall(argv, _env(warm if mode == "warm" else None)))
    times.sort()
    return times[0], times[len(times) // 2]


def import_top(log: str, count: int = 10) -> tuple[float, list[tuple[float, float, str]]]:
    """The total import time of a warm `analyze` and its `count` modules of most self time (ms)."""
    with tempfile.TemporaryDirectory() as scratch:
        env = _env(Path(scratch))
        argv = [sys.executable, "-X", "importtime", "-m", "logphase", "analyze", "--post-mortem", log]
        subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False)  # warm the cache
        stderr = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False, text=True).stderr
    rows = []
    for line in stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if found:
            rows.append((int(found[1]) / 1000, int(found[2]) / 1000, found[4]))
    total = sum(self_ms for self_ms, _, _ in rows)
    return total, sorted(rows, reverse=True)[:count]


def main() -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "logphase")], env=_env(None), check=False)
    print(f"Python {sys.version.split()[0]}, best / median of {REPEATS} runs, wall ms")
    print("| command | cache | best ms | median ms |")
    print("|---|---|---|---|")
    for args in (["--help"], ["--version"]):
        best, median = timed(args, "warm")
        print(f"| logphase {' '.join(args)} | - | {best * 1000:.0f} | {median * 1000:.0f} |")
    for log in LOGS:
        for mode in ("cold", "warm", "none"):
            best, median = timed(["analyze", "--post-mortem", log], mode)
            print(f"| analyze --post-mortem {Path(log).name} | {mode} | {best * 1000:.0f} | {median * 1000:.0f} |")
    total, top = import_top(LOGS[-1])
    print(f"\nImports of a warm `analyze` ({Path(LOGS[-1]).name}): {total:.0f} ms in all; top 10 by self time:")
    print("| module | self ms | cumulative ms |")
    print("|---|---|---|")
    for self_ms, cumulative_ms, name in top:
        print(f"| {name} | {self_ms:.1f} | {cumulative_ms:.1f} |")


if __name__ == "__main__":
    main()
