"""Live stacks for the bundle (an edge: py-spy on running processes, NVML on the GPUs); what cannot be read
becomes a note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from logphase.errors import SnapshotError
from logphase.stacks import pyspy
from logphase.stacks.model import GpuReading, ProcessSnapshot
from logphase.stacks.nvml import read_gpus


@dataclass(frozen=True)
class LiveStacks:
    """The snapshots taken, this machine's GPUs at the time, and a line for each process or reason that gave none."""

    snapshots: list[ProcessSnapshot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gpus: GpuReading | None = None


def find_processes(pids: Sequence[int]) -> list[pyspy.ProcInfo]:
    """Every process of the servers the pids belong to, as `logphase stacks --pid` finds them.
    A pid that does not exist is an error (a typo, or the server is gone): raised before any work."""
    found: list[pyspy.ProcInfo] = []
    seen: set[int] = set()
    for pid in pids:
        for info in pyspy.discover_tree(pid):
            if info.pid not in seen:
                seen.add(info.pid)
                found.append(info)
    return found


def take_stacks(
    procs: Sequence[pyspy.ProcInfo], *, py_spy_path: str | None, timeout_s: float, host: str | None
) -> LiveStacks:
    """One py-spy snapshot of each process, and the GPUs read (NVML). py-spy missing or denied, a process
    that exited in the meantime, no NVML: said in the notes, never an error (the bundle is still worth having)."""
    try:
        py_spy = pyspy.find_py_spy(py_spy_path)
        snapshots, _ = pyspy.snapshot(procs, py_spy=py_spy, timeout_s=timeout_s, host=host)
    except SnapshotError as error:
        return LiveStacks(notes=[f"no live stacks: {error.message} ({error.hint})" if error.hint else error.message])
    notes = [f"pid {s.pid} ({s.title}): {s.error}" for s in snapshots if s.error and not s.skipped]
    gpus = read_gpus(host=host)
    if gpus.note:
        notes.append(gpus.note)
    return LiveStacks(snapshots=snapshots, notes=notes, gpus=gpus)
