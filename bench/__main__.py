"""`python -m bench` (make bench): runs every bench/bench_*.py module's main(), in name order, and writes BENCHMARKS.md.

What the modules print is the current table: BENCHMARKS.md is rewritten with it after a run of them
all, and the table it held before is moved to bench/history/ under the date of its run. Named
modules (`python -m bench bench_rules`) only print.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
CURRENT = ROOT / "BENCHMARKS.md"
HISTORY = Path(__file__).resolve().parent / "history"
RUN_LINE = re.compile(r"^Run: (\d{4}-\d{2}-\d{2}) ", re.MULTILINE)
HEADER = """# Benchmarks

Written by `make bench` (`python -m bench`) from its last full run: every table below is what its
module printed. Earlier runs are in bench/history/, one file per day. Absolute times depend on the
machine and on what else runs on it: compare the ratios of one run (each to grep, lnav or the floor
measured beside it), not seconds across runs.

"""


class Tee(io.TextIOBase):
    """Writes to the terminal and keeps a copy."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.copy = out, io.StringIO()

    def write(self, text: str) -> int:
        self.out.write(text)
        return self.copy.write(text)

    def flush(self) -> None:
        self.out.flush()


def main(argv: list[str]) -> None:
    names = argv or [path.stem for path in sorted(Path(__file__).parent.glob("bench_*.py"))]
    tee = Tee(sys.stdout)
    started = datetime.now(UTC)
    with contextlib.redirect_stdout(tee):
        for name in names:
            module = importlib.import_module(f"bench.{name}")
            print(f"<!-- bench/{name}.py -->", flush=True)
            module.main()
    if not argv:
        write_current(tee.copy.getvalue(), started)


def write_current(tables: str, started: datetime) -> None:
    """BENCHMARKS.md from this run's tables; the run it held before, to its day's history file."""
    if CURRENT.exists():
        before = CURRENT.read_text(encoding="utf-8")
        found = RUN_LINE.search(before)
        day = found.group(1) if found else "before-2026-12-02"
        HISTORY.mkdir(exist_ok=True)
        kept = HISTORY / f"{day}.md"
        earlier = kept.read_text(encoding="utf-8") + "\n\n" if kept.exists() else ""
        kept.write_text(earlier + before, encoding="utf-8")
    run = f"Run: {started:%Y-%m-%d %H:%M} UTC.\n\n"
    CURRENT.write_text(HEADER + run + tables, encoding="utf-8")
    print(f"\nwrote {CURRENT.name}; the run before it is in {HISTORY.relative_to(ROOT)}/")


if __name__ == "__main__":
    main(sys.argv[1:])
