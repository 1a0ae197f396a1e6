"""How many processes scan a run's logs (`--jobs`): the count, the size below which one does, the range size."""

from __future__ import annotations

import os
from dataclasses import dataclass

RANGE_BYTES = 4 << 20  # one worker task: big enough that its start-up and the pickling are noise
# Below this many bytes of plain files in all, one job: starting workers costs more than they save
# (2 cores, BENCHMARKS.md: --jobs 2 was 0.86-1.08x at 8 MB, 0.94x at 16 MB, 1.17-1.46x at 32 MB).
MIN_PARALLEL_BYTES = 32 << 20


@dataclass(frozen=True)
class Jobs:
    """How many processes scan a run's logs: the walk plus `count - 1` workers, where the plain
    files add up to `min_bytes` or more; each worker task is `range_bytes` of one file."""

    count: int = 1
    min_bytes: int = MIN_PARALLEL_BYTES
    range_bytes: int = RANGE_BYTES

    def __post_init__(self) -> None:
        if self.count < 1 or self.range_bytes < 1 or self.min_bytes < 0:
            raise ValueError(f"jobs: count and range_bytes must be at least 1, min_bytes at least 0: {self}")


ONE_JOB = Jobs()


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
