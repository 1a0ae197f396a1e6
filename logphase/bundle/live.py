"""Live stacks for the bundle (an edge: py-spy on running processes); what cannot be read becomes a note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from logphase.errors import SnapshotError
from logphase.stacks import pyspy
from logphase.stacks.model import ProcessSnapshot


@dataclass(frozen=True)
class LiveStacks:
    """The snapshots taken, and a line for each process or reason that gave none."""

    snapshots: list[ProcessSnapshot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
    """One py-spy snapshot of each process. py-spy missing or denied, a process that exited in
    the meantime: said in the notes, never an error (the bundle is still worth having)."""
    try:
        py_spy = pyspy.find_py_spy(py_spy_path)
        snapshots, _ = pyspy.snapshot(procs, py_spy=py_spy, timeout_s=timeout_s, host=host)
    except SnapshotError as error:
        return LiveStacks(notes=[f"no live stacks: {error.message} ({error.hint})" if error.hint else error.message])
    notes = [f"pid {s.pid} ({s.title}): {s.error}" for s in snapshots if s.error and not s.skipped]
    return LiveStacks(snapshots=snapshots, notes=notes)
