"""The dataclasses the stacks pipeline passes between its stages (all frozen, all pure)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

SCHEMA = "logphase.stacks/1"
# The frames a thread keeps, innermost first: where it waits is there, and the merged tree, its
# renderers and its JSON stay shallow (a dump of 50,000 frames was a RecursionError in each).
MAX_FRAMES = 256
# The role of an entry that stands for a whole node that gave no answer (logphase/nodes): its host is its label.
NODE_ROLE = "node"


@dataclass(frozen=True)
class Frame:
    """One Python (or native) frame: `function (file:line)` as py-spy prints it."""

    function: str
    file: str
    line: int | None = None
    native: bool = False

    @property
    def key(self) -> str:
        """`function (file)`: what stall signatures are matched against and what the tree merges on."""
        return f"{self.function} ({self.file})"

    def __str__(self) -> str:
        return f"{self.function} ({self.file}:{self.line})" if self.line else self.key


@dataclass(frozen=True)
class ThreadStack:
    """One thread of one process; `frames` innermost first, as py-spy and faulthandler print them."""

    thread_id: str
    name: str | None
    frames: tuple[Frame, ...]
    active: bool | None = None  # py-spy's mark: running (True), or idle in a system call (False)
    main: bool = False
    cut: int = 0  # the outermost frames left out past MAX_FRAMES
    gil: bool | None = None  # py-spy's mark: the thread held the GIL when sampled

    def __post_init__(self) -> None:
        if len(self.frames) > MAX_FRAMES:
            object.__setattr__(self, "cut", self.cut + len(self.frames) - MAX_FRAMES)
            object.__setattr__(self, "frames", self.frames[:MAX_FRAMES])


@dataclass(frozen=True)
class ProcessSnapshot:
    """What is known about one process: identity, its threads' stacks, and what went wrong reading it.

    `threads` is the last sample; `moving` is None after one sample, else whether any sample differed."""

    pid: int | None
    threads: tuple[ThreadStack, ...] = ()
    ppid: int | None = None
    rank: str | None = None
    role: str | None = None
    title: str | None = None
    host: str | None = None
    error: str | None = None
    fatal: str | None = None  # "Fatal Python error: Aborted": the dump was written by a dying process
    moving: bool | None = None
    # on the CPU between the first and the last sample (its CPU time grew, or py-spy marked its main
    # thread active in every sample): working even when its stack looks the same, unless it waits
    busy: bool | None = None
    source: str | None = None  # "py-spy", "faulthandler", "py-spy text", "pystack", "json", a file name
    skipped: bool = False  # listed but deliberately not snapshotted (not Python, a helper process)
    # CPU time it used over the sampling window (/proc/PID/stat utime + stime), in % of one core; None: not read
    cpu_pct: float | None = None

    @property
    def label(self) -> str:
        """How the process is named in trees and headlines: its rank, else its role and pid (a node: its name)."""
        if self.role == NODE_ROLE and self.host:
            return self.host
        if self.rank:
            return self.rank
        if self.role and self.pid is not None:
            return f"{self.role} {self.pid}"
        if self.pid is not None:
            return f"pid {self.pid}"
        return self.role or "?"

    def main_thread(self) -> ThreadStack | None:
        for thread in self.threads:
            if thread.main:
                return thread
        return None


@dataclass(frozen=True)
class TreeNode:
    """A node of the STAT-style prefix tree: one frame reached by `labels` (outermost frame at depth 1)."""

    key: str
    labels: tuple[str, ...]
    children: tuple[TreeNode, ...] = ()
    state: str | None = None  # set on the node where a stall signature decided a thread's state
    lines: tuple[int, ...] = ()  # the line numbers the threads through it are at in this frame, in order


@dataclass(frozen=True)
class Classification:
    """Where one thread waits: the state, the frame that decided it, and the phase frame around it."""

    state: str
    frame: Frame | None = None
    context: Frame | None = None
    signature: str | None = None


@dataclass(frozen=True)
class Group:
    """An equivalence class: processes whose selected threads have the same merged path."""

    labels: tuple[str, ...]
    pids: tuple[int | None, ...]
    state: str
    frames: tuple[Frame, ...]  # innermost first (main thread, or the first selected thread)
    classification: Classification
    moving: bool | None = None
    peer: bool = True  # a rank (compared with the others) rather than a main/helper process
    cpu_pct: tuple[float | None, ...] = ()  # each member's CPU %, in the order of `labels`
    gpu_busy: bool | None = None  # NVML saw its kernels keep their GPU busy (None: no GPU reading names it)


@dataclass(frozen=True)
class StallFinding:
    state: str
    ranks: tuple[str, ...]
    frame: Frame | None
    summary: str


# A process whose kernels ran at least this share of NVML's sampling window is busy on its GPU: a spinning
# kernel (a compute loop, NCCL's busy-poll in a hung collective) reads near 100 %, a rank blocked on a pipe,
# a lock or the CPU reads 0; the share between is rare and a few percent of stray work is not "busy".
GPU_BUSY_PCT = 10


@dataclass(frozen=True)
class GpuProcess:
    """One process NVML lists on a GPU: its memory there, how busy its kernels kept the GPU, and who it is
    in the stacks report (`label`, `rank`: None when it is none of the processes read)."""

    pid: int
    memory_bytes: int | None = None
    sm_pct: int | None = None  # mean SM utilisation of its samples in the window; None: NVML gave none to read
    label: str | None = None
    rank: str | None = None

    @property
    def busy(self) -> bool | None:
        return None if self.sm_pct is None else self.sm_pct >= GPU_BUSY_PCT


@dataclass(frozen=True)
class Gpu:
    """One GPU as NVML saw it: utilisation (share of the last sample period with a kernel running),
    memory, and the compute processes on it; `error`: what could not be read of it."""

    index: int
    name: str | None = None
    uuid: str | None = None
    utilisation_pct: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class GpuReading:
    """This machine's GPUs at the stall (NVML), or why there is no reading (`note`: no NVML, no driver,
    no GPU). `window_s`: how far back the per-process utilisation samples were read."""

    gpus: tuple[Gpu, ...] = ()
    driver: str | None = None
    nvml: str | None = None  # the NVML library's version
    window_s: float | None = None
    note: str | None = None
    host: str | None = None

    def with_labels(self, labels: dict[int, tuple[str, str | None]]) -> GpuReading:
        """Each GPU process named as the stacks report names the process of its pid: (label, rank)."""
        gpus = tuple(
            replace(
                gpu,
                processes=tuple(
                    replace(p, label=labels[p.pid][0], rank=labels[p.pid][1]) if p.pid in labels else p
                    for p in gpu.processes
                ),
            )
            for gpu in self.gpus
        )
        return replace(self, gpus=gpus)

    @property
    def busy_pids(self) -> dict[int, bool]:
        """Each process NVML tells of: whether its kernels kept its GPU busy (a pid on several GPUs: on any)."""
        out: dict[int, bool] = {}
        for gpu in self.gpus:
            for process in gpu.processes:
                if process.busy is not None:
                    out[process.pid] = out.get(process.pid, False) or process.busy
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "source": "nvml",
            "host": self.host,
            "driver": self.driver,
            "nvml": self.nvml,
            "window_s": self.window_s,
            "note": self.note,
            "devices": [
                {
                    "index": gpu.index,
                    "name": gpu.name,
                    "uuid": gpu.uuid,
                    "utilisation_pct": gpu.utilisation_pct,
                    "memory_used_bytes": gpu.memory_used_bytes,
                    "memory_total_bytes": gpu.memory_total_bytes,
                    "error": gpu.error,
                    "processes": [
                        {
                            "pid": p.pid,
                            "label": p.label,
                            "rank": p.rank,
                            "memory_bytes": p.memory_bytes,
                            "sm_pct": p.sm_pct,
                            "busy": p.busy,
                        }
                        for p in gpu.processes
                    ],
                }
                for gpu in self.gpus
            ],
        }


@dataclass(frozen=True)
class StacksReport:
    samples: int
    interval_s: float
    processes: tuple[ProcessSnapshot, ...]
    groups: tuple[Group, ...]
    tree: TreeNode
    culprit_ranks: tuple[str, ...]
    stall: StallFinding | None
    state: str
    summary: str
    stuck: bool
    divergence: Frame | None = None
    skew_s: float | None = None
    notes: tuple[str, ...] = field(default=())
    gpus: GpuReading | None = None  # live stacks on this machine: its GPUs (NVML); None when not read (dumps)

    @property
    def readable(self) -> int:
        return sum(1 for p in self.processes if p.threads)

    def to_json(self) -> dict[str, Any]:
        """The docs/design.md §5 `stacks` contract, plus `state`, `summary`, `divergence`, `skew_s`,
        per-process `threads` (so that `logphase stacks --from out.json` reads it back losslessly) and `gpus`
        (this machine's GPUs at the time, NVML's; null when not read)."""
        return {
            "schema": SCHEMA,
            "samples": self.samples,
            "interval_s": self.interval_s,
            "state": self.state,
            "summary": self.summary,
            "processes": [
                {
                    "pid": p.pid,
                    "ppid": p.ppid,
                    "rank": p.rank,
                    "role": p.role,
                    "title": p.title,
                    "error": p.error,
                    "moving": p.moving,
                    "host": p.host,
                    "label": p.label,
                    "fatal": p.fatal,
                    "source": p.source,
                    "skipped": p.skipped,
                    "cpu_pct": p.cpu_pct,
                    "threads": [
                        {
                            "id": t.thread_id,
                            "name": t.name,
                            "active": t.active,
                            "gil": t.gil,
                            "main": t.main,
                            "frames": [str(f) for f in t.frames],
                        }
                        for t in p.threads
                    ],
                }
                for p in self.processes
            ],
            "groups": [
                {
                    "ranks": list(g.labels),
                    "pids": list(g.pids),
                    "state": g.state,
                    "frames": [str(f) for f in g.frames],
                    "moving": g.moving,
                    "peer": g.peer,
                    "cpu_pct": list(g.cpu_pct),
                    "gpu_busy": g.gpu_busy,
                    "frame": str(g.classification.frame) if g.classification.frame else None,
                    "context": str(g.classification.context) if g.classification.context else None,
                }
                for g in self.groups
            ],
            "culprit_ranks": list(self.culprit_ranks),
            "stall": None
            if self.stall is None
            else {
                "state": self.stall.state,
                "ranks": list(self.stall.ranks),
                "frame": str(self.stall.frame) if self.stall.frame else None,
                "summary": self.stall.summary,
            },
            "divergence": str(self.divergence) if self.divergence else None,
            "skew_s": self.skew_s,
            "notes": list(self.notes),
            "gpus": self.gpus.to_json() if self.gpus is not None else None,
        }
