"""Every rule as the dominant line (issue 27): a log per line kind, half of it that kind's lines; analyze's speed.

Kinds (bench/kinds.py): every rule with examples, and every group of inventory templates the fast
path tells apart; those whose rule makes an event the timeline counts are read line by line by
design and left out unless LOGPHASE_BENCH_RULE_ALL is set. Each log: LOGPHASE_BENCH_RULE_LINES
lines (default 8000), the kind's lines half of them among a seeded mix of serving lines of its
system's format. Each is analysed in-process (`logphase.analyze`'s pipeline, post-mortem, one job,
the fast path whatever the log's length, a scanner cache shared by the run), CPU seconds of the
worker process (other sessions on the machine then count less), less those of its first quarter
(the head, the compiles: what any log costs once);
best of LOGPHASE_BENCH_RULE_REPEATS (default 1). The floor beside it: bench_floor's one pass (read,
literals, learned templates) of its background alone at the same line count. Workers:
LOGPHASE_BENCH_WORKERS (default the CPU count); kinds: LOGPHASE_BENCH_KINDS, a comma list of
substrings of their names (default all); seed: LOGPHASE_BENCH_SEED (default 13). Prints the worst
kinds and the spread for BENCHMARKS.md; LOGPHASE_BENCH_RULE_ROWS names a file for every kind's row
(tab-separated: kind, MB/s, x floor), to compare two runs kind by kind."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.bench_floor import best_of, learned_patterns, one_pass
from bench.kinds import SGLANG_SERVING, VLLM_SERVING, Kind, dominant_lines, inventory_kinds, rule_kinds
from bench.shapes import Shape
from logphase.logs.fast.scanners import accelerated, make_scanner
from logphase.packs import PackSet, load_packs

WORST_SHOWN = 15
SHORTER = 4  # the log whose time is taken off: a quarter of the kind's
TARGET = 3.0  # the worst kind's time over the median's (issue 27)


@dataclass(frozen=True)
class Timing:
    name: str
    bytes: int
    seconds: float


_PACKS: list[PackSet] = []


def _packs() -> PackSet:
    if not _PACKS:
        _PACKS.append(load_packs())
    return _PACKS[0]


def write_kind_log(path: Path, kind: Kind, seed: int, lines: int) -> int:
    text = "\n".join(dominant_lines(kind, _packs(), seed, lines)) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text.encode())


def time_kind(kind: Kind, folder: str, seed: int, lines: int, repeats: int) -> Timing:
    """CPU seconds analyze spends on the kind's log past its first quarter, and those bytes: the log
    and its first quarter each analysed (written, analysed, deleted), the difference of the two. What
    every log costs once (the head read line by line, the scanners compiled) is left out of both."""
    packs = _packs()
    path = Path(folder) / f"kind-{os.getpid()}.log"
    cache = Path(folder) / "cache"
    seconds, sizes = [], []
    for count in (lines // SHORTER, lines):
        sizes.append(write_kind_log(path, kind, seed, count))  # the shorter is the longer's start (one seed)
        try:
            seconds.append(min(_analyze_cpu(path, packs, cache) for _ in range(repeats)))
        finally:
            path.unlink()
    return Timing(kind.name, sizes[1] - sizes[0], seconds[1] - seconds[0])


def warm(folder: str, seed: int) -> None:
    """A worker's first analyze compiles the packs' regexes and imports the pipeline: done on a log of
    no kind's lines before any is timed."""
    path = Path(folder) / f"warm-{os.getpid()}.log"
    write_kind_log(path, Kind("background", (), SGLANG_SERVING), seed, 2000)
    try:
        _analyze_cpu(path, _packs(), Path(folder) / "cache")
    finally:
        path.unlink()


def _analyze_cpu(path: Path, packs: PackSet, cache: Path) -> float:
    """analyze's CPU seconds on the log, by the fast path whatever its length: the first quarter is
    short enough (PLAIN_LINES) that analyze would read it plainly, and the difference of the two
    runs would then hold the fast path's fixed cost (its plan, scanners and head), not the kind's."""
    from datetime import datetime

    from logphase import pipeline
    from logphase.api import open_run

    started = time.process_time()
    sources, flight = open_run([path], packs)
    options = pipeline.Options(as_of=datetime.now(), post_mortem=True, flight=flight, fast=True, caches=cache)
    pipeline.report(sources, packs, options)
    return time.process_time() - started


def background_floor(shape: Shape, folder: str, seed: int, lines: int) -> tuple[float, int]:
    """bench_floor's one pass over the background alone (no kind's lines), CPU seconds, and its bytes."""
    path = Path(folder) / "background.log"
    empty = Kind("background", (), shape)
    size = write_kind_log(path, empty, seed, lines)
    try:
        plain, anchored = learned_patterns(path, _packs())
        scanner = make_scanner(plain + ([(anchored, False)] if anchored else []))
        return best_of(3, partial(one_pass, path, scanner)), size
    finally:
        path.unlink()


def main() -> None:
    if not accelerated():
        print("hyperscan is not installed: the rule bench measures the hyperscan scan only\n")
        return
    lines = int(os.environ.get("LOGPHASE_BENCH_RULE_LINES") or 8000)
    repeats = int(os.environ.get("LOGPHASE_BENCH_RULE_REPEATS") or 1)
    workers = int(os.environ.get("LOGPHASE_BENCH_WORKERS") or os.cpu_count() or 1)
    seed = int(os.environ.get("LOGPHASE_BENCH_SEED") or 13)
    wanted = [w.strip() for w in os.environ.get("LOGPHASE_BENCH_KINDS", "").split(",") if w.strip()]
    packs = _packs()
    kinds = rule_kinds(packs) + inventory_kinds(packs)
    if wanted:
        kinds = [kind for kind in kinds if any(w in kind.name for w in wanted)]
    by_design = [kind for kind in kinds if kind.read_by_design]
    if not os.environ.get("LOGPHASE_BENCH_RULE_ALL"):
        kinds = [kind for kind in kinds if not kind.read_by_design]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="logphase-rules-") as folder:
        floors = {id(shape): background_floor(shape, folder, seed, lines) for shape in (SGLANG_SERVING, VLLM_SERVING)}
        with ProcessPoolExecutor(workers, initializer=warm, initargs=(folder, seed)) as pool:
            timings = list(pool.map(partial(time_kind, folder=folder, seed=seed, lines=lines, repeats=repeats), kinds))
    elapsed = time.perf_counter() - started
    report(kinds, timings, floors, lines=lines, seed=seed, workers=workers, elapsed=elapsed)
    if not os.environ.get("LOGPHASE_BENCH_RULE_ALL"):
        print(
            f"Not measured: {len(by_design)} kinds whose rule makes an event the timeline counts (a begin, an end, "
            "a failure, a bar, a rank's tag), each of whose lines the matcher reads by design; "
            "LOGPHASE_BENCH_RULE_ALL=1 measures them too.\n"
        )


def report(
    kinds: list[Kind],
    timings: list[Timing],
    floors: dict[int, tuple[float, int]],
    *,
    lines: int,
    seed: int,
    workers: int,
    elapsed: float,
) -> None:
    def per_mb(floor: tuple[float, int]) -> float:
        return floor[0] / (floor[1] / 1e6)

    rows = []
    for kind, timing in zip(kinds, timings, strict=True):
        # no faster than the floor: a difference below it is the machine's noise
        seconds_per_mb = max(timing.seconds / (timing.bytes / 1e6), per_mb(floors[id(kind.shape)]))
        rows.append((seconds_per_mb / per_mb(floors[id(kind.shape)]), seconds_per_mb, timing))
    rows.sort(key=lambda row: row[0], reverse=True)
    ratios = [row[0] for row in rows]
    median, worst = statistics.median(ratios), ratios[0]
    median_mbs = statistics.median(1 / row[1] for row in rows)
    print("## Every rule as the dominant line\n")
    print(
        f"{len(rows)} kinds (rules with examples, groups of inventory templates), {lines} lines each, half of "
        f"them the kind's; seed {seed}; {workers} workers, {elapsed:.0f} s. CPU seconds of in-process analyze "
        "(one job, post-mortem) per MB past the log's first quarter, as a multiple of the floor (bench_floor's "
        "one pass over the background alone, same line count): "
        + ", ".join(f"{name} {1 / per_mb(floors[id(shape)]):.0f} MB/s" for name, shape in _BACKGROUNDS)
        + ".\n"
    )
    print(
        f"Median kind: {median:.1f} x floor ({median_mbs:.1f} MB/s); worst: {rows[0][2].name} {worst:.1f} x floor "
        f"({1 / rows[0][1]:.2f} MB/s), {worst / median:.1f} x the median (target <= {TARGET:.0f}: "
        f"{'met' if worst <= TARGET * median else 'NOT met'}).\n"
    )
    print("| kind | MB/s | x floor | x median |")
    print("|---|---|---|---|")
    for ratio, seconds_per_mb, timing in rows[:WORST_SHOWN]:
        print(f"| {timing.name} | {1 / seconds_per_mb:.2f} | {ratio:.1f} | {ratio / median:.1f} |")
    rows_file = os.environ.get("LOGPHASE_BENCH_RULE_ROWS")
    if rows_file:
        Path(rows_file).write_text(
            "".join(f"{timing.name}\t{1 / seconds:.3f}\t{ratio:.1f}\n" for ratio, seconds, timing in rows),
            encoding="utf-8",
        )
    over = sum(1 for ratio in ratios if ratio > TARGET * median)
    near = sum(1 for ratio in ratios if ratio <= 10)
    far = sum(1 for ratio in ratios if ratio > 100)
    print(
        f"\n{over} kinds over {TARGET:.0f} x the median; {near} within 10 x the floor (their lines summarised), "
        f"{far} over 100 x (read about line by line).\n",
        flush=True,
    )


_BACKGROUNDS = (("SGLang serving", SGLANG_SERVING), ("vLLM serving", VLLM_SERVING))


if __name__ == "__main__":
    main()
