"""`python -m bench` (make bench): runs every bench/bench_*.py module's main(), in name order."""

from __future__ import annotations

import importlib
from pathlib import Path


def main() -> None:
    for path in sorted(Path(__file__).parent.glob("bench_*.py")):
        module = importlib.import_module(f"bench.{path.stem}")
        print(f"== {path.stem}", flush=True)
        module.main()


if __name__ == "__main__":
    main()
