"""The floor of one pass over a log on one core, against grep and analyze: what issue 13's target leaves for the rest.

For each generated shape, in this process, files in the page cache, best of two: `read` reads the
file in the fast path's 8 MB slices (cut at newlines) and counts its lines; `+ literals` also scans
each slice with the packs' literals and triggers in one hyperscan database (what `grep -c -E` does);
`+ templates` adds the one line-anchored pattern of the line templates the fast path learned on that
log (the lines on none of them: the least a scan must tell apart for the report's clock, which every
line moves). The last is a floor of any scan that keeps that contract, the summarising, the clock and
the matcher not counted; halved, the best two cores could do. analyze is the CLI, `--jobs 1` and the
default (with the CLI's peak RSS, GNU time's). Sizes: LOGPHASE_BENCH_SIZES (default 100M); shapes:
LOGPHASE_BENCH_SHAPES (default every shape); seed: LOGPHASE_BENCH_SEED (default 13). Prints a
Markdown table for BENCHMARKS.md."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

from bench.bench_analyze import best, ere, pack_literals
from bench.loggen import parse_size, write_logs
from bench.shapes import SHAPES
from logphase.frames import TRIGGER
from logphase.logs.fast import FastLines, plan_for
from logphase.logs.fast.scanners import Scanner, accelerated, make_scanner
from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import open_sources
from logphase.packs import PackSet, load_packs

SLICE = 8 << 20  # the fast path's chunk (logs/fast/lines.py reads about as much at a time)
AS_OF = datetime(2030, 1, 1)


def learned_patterns(path: Path, packs: PackSet) -> tuple[list[tuple[bytes, bool]], bytes | None]:
    """The literal and trigger patterns of the fast path's scan of `path`, and the line-anchored
    pattern of the templates it learned there (None: it learned none)."""
    fast = FastLines(open_sources([str(path)])[0], plan_for(packs, (TRIGGER,)), AS_OF, context=(2, 2), plain_head=500)
    fast.attach(SourceMatcher(packs, AS_OF))
    assert fast.matcher is not None
    for line in fast:
        fast.matcher.match_line(line)
    plain = fast.scan.patterns[: fast.scan.plain_patterns]
    if fast.scan.compiled_templates:  # their complement closes the plain patterns (a trigger may start with `^`)
        return plain[:-1], plain[-1][0]
    return plain, None


def one_pass(path: Path, scanner: Scanner | None) -> float:
    """Seconds to read `path` in slices cut at newlines, count its lines, and scan each slice."""
    started = time.perf_counter()
    lines = 0
    carry = b""
    with path.open("rb") as log:
        while block := log.read(SLICE):
            data = carry + block
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            lines += data.count(b"\n", 0, cut)
            if scanner is not None:
                scanner.matches(data, 0, cut)
    return time.perf_counter() - started


def best_of(repeats: int, step: Callable[[], float]) -> float:
    return min(step() for _ in range(repeats))


def main() -> None:
    if not accelerated():
        print("hyperscan is not installed: the floor is measured with hyperscan only\n")
        return
    sizes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SIZES", "100M").split(",") if s.strip()]
    shapes = [s.strip() for s in os.environ.get("LOGPHASE_BENCH_SHAPES", ",".join(SHAPES)).split(",") if s.strip()]
    seed = int(os.environ.get("LOGPHASE_BENCH_SEED") or 13)
    packs = load_packs()
    logphase = shutil.which("logphase") or str(Path(sys.executable).parent / "logphase")
    print("## The floor of one pass, on one core\n")
    print(f"Seed {seed}. Seconds, best of two; `x grep` is each time over grep's on the same file.\n")
    print(
        "| size | shape | grep | read | + literals | + templates | floor x grep | halved | "
        "analyze --jobs 1 | analyze | x grep | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="logphase-floor-") as folder:
        pattern = Path(folder) / "literals.txt"
        pattern.write_text("|".join(ere(literal) for literal in pack_literals()) + "\n", encoding="utf-8")
        for size in sizes:
            for shape in shapes:
                logs = write_logs(Path(folder) / f"floor-{size}-{shape}.log", parse_size(size), seed=seed, shape=shape)
                names = [str(log) for log in logs]
                try:
                    grep = best("grep", ["grep", "-c", "-E", "-f", str(pattern), *names], 2).seconds
                    read = literals = templates = 0.0
                    for log in logs:
                        plain, anchored = learned_patterns(log, packs)
                        with_literals = make_scanner(plain)
                        with_templates = make_scanner(plain + ([(anchored, False)] if anchored else []))
                        read += best_of(2, partial(one_pass, log, None))
                        literals += best_of(2, partial(one_pass, log, with_literals))
                        templates += best_of(2, partial(one_pass, log, with_templates))
                    one = best("analyze", [logphase, "analyze", "--post-mortem", "--jobs", "1", *names], 2).seconds
                    default = best("analyze", [logphase, "analyze", "--post-mortem", *names], 2)
                finally:
                    for log in logs:
                        log.unlink()
                print(
                    f"| {size} | {shape} | {grep:.3f} | {read:.3f} | {literals:.3f} | {templates:.3f} "
                    f"| {templates / grep:.1f} | {templates / 2 / grep:.1f} | {one:.2f} | {default.seconds:.2f} "
                    f"| {default.seconds / grep:.1f} | {default.rss_mb:.0f} |",
                    flush=True,
                )
    print()


if __name__ == "__main__":
    main()
