"""The (log, layout) pairs of the real-world corpus whose wrapped answer is not yet the bare one, listed
whole by `python -m tests.equivalence.layout_misses` (every corpus log through every layout).

Found when the 2026-12-02 batches joined the corpus: layouts a real paste already has (its own srun
labels, docker stamps, a log viewer's columns) meet the wrapper's, and the reading of that kind is
issue 25 A. The harness accepts a listed pair and fails on one that holds now (so the list shrinks
as the reading improves) or on any pair not listed."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.paste.harness import REAL_LOGS, measure

LISTED = Path(__file__).with_name("layout_misses.json")


def listed() -> dict[tuple[str, str], list[str]]:
    """The listed pairs and the kinds each differs in (verdict, phase, root_cause_text, ...)."""
    if not LISTED.exists():
        return {}
    rows = json.loads(LISTED.read_text())
    return {(row["log"], row["layout"]): row["differs"] for row in rows}


def main(argv: Sequence[str]) -> int:
    logs = list(REAL_LOGS)
    total, failures = measure(logs)
    rows = [{"log": log, "layout": layout, "differs": kinds} for log, layout, kinds in sorted(failures)]
    LISTED.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{len(logs)} logs, {total} pairs, {len(rows)} differ: written to {LISTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
