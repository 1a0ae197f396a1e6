"""Benchmark `logphase analyze` on logs of every shape against `grep -c -E`, `wc -l` and lnav, same file, same run.

Sizes: LOGPHASE_BENCH_SIZES (e.g. `100M` or `100M,1G`; default 100M); shapes: LOGPHASE_BENCH_SHAPES
(default every shape of bench/shapes.py); the seed: LOGPHASE_BENCH_SEED (default: a fresh one,
printed, so no run can be tuned to). Logs are generated into a temporary folder and deleted
afterwards. Target (issue 13): on the worst shape, analyze within 2x the grep time, peak RSS at most
150 MB. Prints a Markdown section for BENCHMARKS.md."""

from __future__ import annotations

import os
import platform
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from bench.loggen import parse_size, write_logs
from bench.shapes import SHAPES

DEFAULT_SIZES = "100M"
# Best of N runs (the file is in the page cache after the first read; the best run is the one
# least disturbed by the rest of the machine).
REPEATS = {"100M": 2}
TARGET_RATIO = 2.0
TARGET_RSS_MB = 150.0
# The log viewer a user would open instead (issue 27): headless, its index of the files built and counted.
LNAV_ARGS = ("lnav", "-n", "-c", ";SELECT count(*) FROM all_logs")


@dataclass(frozen=True)
class Run:
    tool: str
    seconds: float
    rss_mb: float
    output: str
    code: int


def timed(tool: str, argv: list[str]) -> Run:
    """Wall time and peak RSS of one child process. GNU time reports the RSS of the command
    itself; wait4's rusage would count the forked Python before its exec."""
    gnu_time = Path("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        prefix = [str(gnu_time), "-o", rss.name, "-f", "%M"] if gnu_time.exists() else []
        start = time.perf_counter()
        child = subprocess.run([*prefix, *argv], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        seconds = time.perf_counter() - start
        reported = rss.read().strip().splitlines()
    rss_kb = float(reported[-1]) if reported and reported[-1].isdigit() else float("nan")
    return Run(tool, seconds, rss_kb / 1024, child.stdout.decode(errors="replace"), child.returncode)


def best(tool: str, argv: list[str], repeats: int) -> Run:
    return min((timed(tool, argv) for _ in range(repeats)), key=lambda run: run.seconds)


def pack_literals() -> list[str]:
    """The literals the packs filter on (each rule's prefilter literal, or the factors the fast
    path derives for it), as one list for grep."""
    from logphase.frames import TRIGGER
    from logphase.logs.fast import plan_for
    from logphase.packs import load_packs

    packs = load_packs()
    plan = plan_for(packs, (TRIGGER,))
    literals = {rule.literal for rule in packs.rules if rule.literal}
    literals |= {factor.text.decode() for factor in plan.candidates}
    literals |= {factor.decode() for factor in plan.steady}
    return sorted(literals)


def ere(literal: str) -> str:
    return re.sub(r"([][.*+?^$(){}|\\])", r"\\\1", literal)


def machine() -> dict[str, str]:
    model = ""
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with open("/proc/meminfo", encoding="utf-8") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    grep = subprocess.run(["grep", "--version"], capture_output=True, text=True, check=False).stdout.splitlines()
    versions = {
        "python": platform.python_version(),
        "logphase": metadata.version("logphase"),
        "regex": metadata.version("regex"),
        "hyperscan": _version("hyperscan"),
        "grep": grep[0] if grep else "?",
    }
    return {"cpus": str(os.cpu_count()), "cpu": model or platform.processor(), "memory": memory, **versions}


def lnav_version(lnav: str) -> str:
    found = subprocess.run([lnav, "-V"], capture_output=True, text=True, check=False).stdout.strip()
    return found or "lnav (version unknown)"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed (pure-Python scan)"


def main() -> None:
    sizes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SIZES", DEFAULT_SIZES).split(",") if s.strip()]
    shapes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SHAPES", ",".join(SHAPES)).split(",") if s.strip()]
    seed = int(os.environ.get("LOGPHASE_BENCH_SEED") or random.SystemRandom().randrange(1 << 31))
    literals = pack_literals()
    info = machine()
    print("## analyze on generated logs\n")
    print(
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM. Versions: Python {info['python']}, "
        f"logphase {info['logphase']}, regex {info['regex']}, hyperscan {info['hyperscan']}, {info['grep']}.\n"
    )
    print(f"grep pattern: one `-E` alternation of the {len(literals)} literals the packs filter on. Seed {seed}.\n")
    lnav = shutil.which("lnav")
    print(
        f"lnav: {lnav_version(lnav) if lnav else 'not installed (`apt-get install lnav`): its columns are empty'}; "
        f"`{shlex.join(LNAV_ARGS)} FILE`, the log indexed and its lines counted.\n"
    )
    print("| size | shape | lines | wc -l s | grep s | lnav s | analyze s | x grep | x lnav | peak RSS MB | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst: tuple[float, str, Run] | None = None
    with tempfile.TemporaryDirectory(prefix="logphase-bench-") as folder:
        pattern = Path(folder) / "literals.txt"
        pattern.write_text("|".join(ere(literal) for literal in literals) + "\n", encoding="utf-8")
        for size in sizes:
            wanted = parse_size(size)
            free = shutil.disk_usage(folder).free
            if free < 2 * wanted:
                print(f"| {size} | - | skipped: {free >> 20} MB free in {folder} | | | | | | | | |")
                continue
            for shape in shapes:
                wc, grep, viewer, analyze = measure(
                    Path(folder) / f"bench-{size}-{shape}.log", wanted, shape, seed, pattern, lnav
                )
                counts = wc.output.split()
                lines = (counts[-2] if len(counts) > 2 else counts[0]) if counts else "?"
                verdict = re.search(r'"verdict": "(\w+)"', analyze.output)
                failed = "" if analyze.code in (0, 4, 5, 6) else f" (exit {analyze.code})"
                ratio = analyze.seconds / grep.seconds
                viewed = f"{viewer.seconds:.2f}" if viewer else ""
                over_lnav = f"{analyze.seconds / viewer.seconds:.1f}" if viewer else ""
                print(
                    f"| {size} | {shape} | {lines} | {wc.seconds:.2f} | {grep.seconds:.2f} | {viewed} "
                    f"| {analyze.seconds:.2f} | {ratio:.1f} | {over_lnav} | {analyze.rss_mb:.0f} "
                    f"| {verdict.group(1) if verdict else '?'}{failed} |",
                    flush=True,
                )
                if worst is None or ratio > worst[0]:
                    worst = (ratio, f"{size} {shape}", analyze)
    if worst is not None:
        ratio, where, analyze = worst
        ok = ratio <= TARGET_RATIO and analyze.rss_mb <= TARGET_RSS_MB
        print(
            f"\nWorst shape: {where}: analyze / grep = {ratio:.2f} (target <= {TARGET_RATIO}), peak RSS "
            f"{analyze.rss_mb:.0f} MB (target <= {TARGET_RSS_MB:.0f}): {'met' if ok else 'NOT met'}\n",
            flush=True,
        )


def measure(
    path: Path, size: int, shape: str, seed: int, pattern: Path, lnav: str | None
) -> tuple[Run, Run, Run | None, Run]:
    """wc -l, grep, lnav (where installed) and analyze on one generated log or set of per-rank logs
    (deleted afterwards), files in the page cache. wc's output ends with the line count (a total for
    several files)."""
    logs = write_logs(path, size, seed=seed, shape=shape)
    try:
        for log in logs:
            with log.open("rb") as warm:  # every tool reads from the page cache
                while warm.read(1 << 24):
                    pass
        repeats = REPEATS.get(f"{size >> 20}M", 2) if size < 1 << 30 else 1
        logphase = shutil.which("logphase") or str(Path(sys.executable).parent / "logphase")
        names = [str(log) for log in logs]
        wc = best("wc -l", ["wc", "-l", *names], repeats)
        grep = best("grep -c -E", ["grep", "-c", "-E", "-f", str(pattern), *names], repeats)
        viewer = best("lnav", [lnav, *LNAV_ARGS[1:], *names], repeats) if lnav else None
        analyze = best("logphase analyze", [logphase, "analyze", "--post-mortem", "--format", "json", *names], repeats)
        return wc, grep, viewer, analyze
    finally:
        for log in logs:
            log.unlink()


if __name__ == "__main__":
    main()
