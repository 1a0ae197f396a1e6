"""Classify where each rank waits with the stall signatures of `patterns/stacks.toml` and merge the
ranks into groups; judging/stacks.py judges them (pure: snapshots in, StacksReport out)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from logphase.frames import frame_key_of
from logphase.judging.stacks import WAIT_STATES, judge_stacks
from logphase.packs import StallSignature
from logphase.ranks import list_ranks, natural_key
from logphase.stacks.model import (
    MAX_FRAMES,
    NODE_ROLE,
    Classification,
    Frame,
    GpuReading,
    Group,
    ProcessSnapshot,
    StacksReport,
    StallFinding,
    ThreadStack,
    TreeNode,
)
from logphase.stacks.tree import build_tree, divergence_frame, lines_of, path_of, selected_threads

# States that name the startup phase a wait happens in ("waits in all_reduce inside capture").
CONTEXT_STATES = frozenset({"weight_load", "kv_cache", "cuda_graph", "compile", "import", "rendezvous"})
RANK_ROLES = frozenset({"scheduler", "worker"})


class Classifier:
    """Frame key → best signature, cached: the same frames recur on every rank."""

    def __init__(self, signatures: Sequence[StallSignature]) -> None:
        self.signatures = sorted(signatures, key=lambda s: -s.priority)
        self.cache: dict[str, StallSignature | None] = {}

    def signature_for(self, key: str) -> StallSignature | None:
        if key not in self.cache:
            self.cache[key] = next((s for s in self.signatures if s.pattern.search(key) is not None), None)
        return self.cache[key]

    def classify(self, frames: Sequence[Frame]) -> Classification:
        """The highest-priority signature among the frames wins (innermost on ties); the nearest
        phase frame outside it is its context."""
        keys = [frame_key_of(frame.function, frame.file, native=frame.native) for frame in frames]
        matches = [(index, self.signature_for(key)) for index, key in enumerate(keys)]
        best: tuple[int, StallSignature] | None = None
        for index, signature in matches:
            if signature is not None and (best is None or signature.priority > best[1].priority):
                best = (index, signature)
        if best is None:
            innermost = next((f for f in frames if not f.native), frames[0] if frames else None)
            return Classification(state="unknown", frame=innermost)
        index, signature = best
        context = None
        for outer_index, outer in matches[index + 1 :]:
            if outer is not None and outer.state in CONTEXT_STATES and outer.state != signature.state:
                context = frames[outer_index]
                break
        return Classification(state=signature.state, frame=frames[index], context=context, signature=signature.id)


def classify(frames: Sequence[Frame], signatures: Sequence[StallSignature]) -> Classification:
    return Classifier(signatures).classify(frames)


# --- summarize ------------------------------------------------------------------------------------


def combine_samples(snapshots: Iterable[ProcessSnapshot]) -> list[ProcessSnapshot]:
    """Several dumps of one process (a log with two watchdog dumps, repeated --from files) become one
    snapshot: the last stacks, `moving` when any two differ."""
    order: list[tuple[str | None, int | None] | int] = []
    latest: dict[tuple[str | None, int | None] | int, ProcessSnapshot] = {}
    history: dict[tuple[str | None, int | None] | int, set[tuple[tuple[str, ...], ...]]] = {}
    for index, snap in enumerate(snapshots):
        key: tuple[str | None, int | None] | int = (snap.host, snap.pid) if snap.pid is not None else index
        if key not in latest:
            order.append(key)
            history[key] = set()
        stacks = tuple(tuple(str(f) for f in t.frames) for t in snap.threads)
        if snap.threads:
            history[key].add(stacks)
        previous = latest.get(key)
        if previous is not None and not snap.threads and previous.threads:
            snap = replace(previous, error=snap.error or previous.error)
        latest[key] = snap
    out = []
    for key in order:
        snap = latest[key]
        if len(history[key]) > 1:
            snap = replace(snap, moving=True)
        out.append(snap)
    return out


def unique_labels(snapshots: Sequence[ProcessSnapshot], *, by_node: bool = False) -> list[str]:
    """Each process' label; ranks that repeat across hosts get `host:` in front, else `(pid N)`. `by_node`:
    every process of a host gets `host:` (node × local rank), and a node that gave no answer is its name."""
    labels = []
    anonymous = 0
    for snap in snapshots:
        if snap.role == NODE_ROLE and snap.host:
            labels.append(snap.host)
        elif by_node and snap.host:
            labels.append(f"{snap.host}:{snap.label}")
        elif snap.label == "?" or (snap.pid is None and not snap.rank):
            anonymous += 1
            labels.append(f"{snap.role or 'process'} #{anonymous}")
        else:
            labels.append(snap.label)
    counts: dict[str, int] = {}
    for snap, label in zip(snapshots, labels, strict=True):
        counts[label] = counts.get(label, 0) + (1 if snap.threads else 0)
    out = []
    for snap, label in zip(snapshots, labels, strict=True):
        if counts[label] > 1 or (not snap.threads and counts[label] > 0):
            if snap.host and not by_node:
                label = f"{snap.host}:{label}"
            elif snap.pid is not None and not label.endswith(str(snap.pid)):
                label = f"{label} (pid {snap.pid})"
        out.append(label)
    return out


@dataclass
class _Member:
    label: str
    snap: ProcessSnapshot
    threads: list[ThreadStack]
    peer: bool
    gpu_busy: bool | None = None  # NVML: its kernels kept its GPU busy over the reading's window


# Where a rank waits for its peers: NCCL's kernels busy-poll there while a collective hangs, so a busy GPU
# is no progress (model.py GPU_BUSY_PCT); everywhere else (gpu_sync: waiting for its own kernels) it is.
PEER_WAITS = frozenset({"collective_wait", "rendezvous"})


def _working(member: _Member, classifier: Classifier) -> bool | None:
    """Whether the process works: its stack changed between samples, or it stayed on the CPU in the
    same stack (a loop, a kernel launch) — except where it waits: NCCL and CUDA busy-poll while a
    collective hangs, so CPU time there is no progress. One sample (no motion to compare) is judged by
    py-spy's own mark on the main thread: active (running) works where it does not wait, idle (in a
    system call) does not work. A rank whose kernels keep its GPU busy (NVML) works, wherever its Python
    thread waits for them, unless it waits for its peers."""
    snap = member.snap
    main = next((t for t in member.threads if t.main), member.threads[0])
    if member.gpu_busy and not snap.moving and classifier.classify(main.frames).state not in PEER_WAITS:
        return True
    busy = snap.busy if snap.busy is not None or snap.moving is not None else main.active
    if snap.moving or busy is None:
        return snap.moving
    if not busy:
        return snap.moving if snap.moving is not None else False
    return classifier.classify(main.frames).state not in WAIT_STATES


def summarize(
    snapshots: Iterable[ProcessSnapshot],
    signatures: Sequence[StallSignature],
    *,
    threads: str = "main",
    samples: int = 1,
    interval_s: float = 0.0,
    skew_s: float | None = None,
    notes: Sequence[str] = (),
    by_node: bool = False,
    gpus: GpuReading | None = None,
) -> StacksReport:
    """Merge, classify and judge: the pure end of `logphase stacks` (and of `analyze` for dumps in logs).
    `by_node`: the snapshots come from many nodes (logphase/nodes): each rank is named `node:rank`, and the
    nodes that gave no answer are named in the headline. `gpus`: this machine's GPUs read at the time (NVML),
    each process on them named as the report names it."""
    processes = combine_samples(snapshots)
    labels = unique_labels(processes, by_node=by_node)
    classifier = Classifier(signatures)
    gpu_busy = gpus.busy_pids if gpus is not None else {}

    members: list[_Member] = []
    rankish = [p for p in processes if (p.rank or p.role in RANK_ROLES) and selected_threads(p, threads)]
    for snap, label in zip(processes, labels, strict=True):
        chosen = selected_threads(snap, threads) if not snap.skipped else []
        if not chosen:
            continue
        peer = (bool(snap.rank) or snap.role in RANK_ROLES) if rankish else True
        # NVML names the pids of its own machine: a process read on another host is none of them
        on_gpu = (
            gpu_busy.get(snap.pid)
            if snap.pid is not None and gpus is not None and snap.host in (None, gpus.host)
            else None
        )
        members.append(_Member(label=label, snap=snap, threads=chosen, peer=peer, gpu_busy=on_gpu))

    # equivalence classes: same merged path(s), same motion, same fate
    classes: dict[tuple[bool, tuple[tuple[str, ...], ...], bool | None, bool], list[_Member]] = {}
    for member in members:
        key = (
            member.peer,
            tuple(path_of(t) for t in member.threads),
            _working(member, classifier),
            bool(member.snap.fatal),
        )
        classes.setdefault(key, []).append(member)
    groups: list[Group] = []
    for key, group_members in classes.items():
        first = group_members[0]
        representative = next((t for t in first.threads if t.main), first.threads[0])
        cls = classifier.classify(representative.frames)
        state = "crashed" if first.snap.fatal else cls.state
        ordered = sorted(group_members, key=lambda m: natural_key(m.label))
        read_on_gpu = [m.gpu_busy for m in ordered if m.gpu_busy is not None]
        groups.append(
            Group(
                labels=tuple(m.label for m in ordered),
                pids=tuple(m.snap.pid for m in ordered),
                state=state,
                frames=representative.frames,
                classification=cls,
                moving=key[2],
                peer=bool(key[0]),
                cpu_pct=tuple(m.snap.cpu_pct for m in ordered),
                gpu_busy=any(read_on_gpu) if read_on_gpu else None,
            )
        )
    groups.sort(key=lambda g: (not g.peer, -len(g.labels), natural_key(g.labels[0])))

    threads_read = [(member.label, thread) for member in members for thread in member.threads]
    tree = build_tree(
        ((label, path_of(thread), None) for label, thread in threads_read),
        (lines_of(thread) for _, thread in threads_read),
    )
    tree = _mark_states(tree, groups)

    peer_groups = [g for g in groups if g.peer]
    peer_threads = [next((t for t in m.threads if t.main), m.threads[0]) for m in members if m.peer]
    divergence = divergence_frame(peer_threads) if len(peer_groups) > 1 else None
    fatal_by_label = {m.label: m.snap.fatal for m in members}
    judgement = judge_stacks(peer_groups, groups, fatal_by_label, samples, processes=processes)

    all_notes = list(notes)
    for snap, label in zip(processes, labels, strict=True):
        if snap.error and not snap.skipped:
            all_notes.append(f"{label}: {snap.error}")
        cut = max((thread.cut for thread in snap.threads), default=0)
        if cut:
            all_notes.append(
                f"{label}: stack cut at {MAX_FRAMES} frames (the innermost kept, {cut:,} outer ones left out)"
            )

    if gpus is not None:
        gpus = _named_gpu_processes(gpus, processes, labels)
        all_notes.extend(_gpu_notes(gpus))

    summary = judgement.summary
    silent = [label for snap, label in zip(processes, labels, strict=True) if snap.role == NODE_ROLE]
    if silent:
        # never hidden: the rank the others wait for may be on a node that did not answer
        summary += f" — {len(silent)} node{'s' if len(silent) > 1 else ''} did not answer: {list_ranks(silent)}"
        summary += " (see `not read`)" if judgement.culprits or not judgement.stuck else ", look there first"

    stall = None
    if judgement.stuck and judgement.stall_groups:
        first_group = judgement.stall_groups[0]
        stall = StallFinding(
            state=judgement.state,
            ranks=tuple(label for g in judgement.stall_groups for label in g.labels),
            frame=first_group.classification.frame,
            summary=summary,
        )
    return StacksReport(
        samples=samples,
        interval_s=interval_s,
        processes=tuple(processes),
        groups=tuple(groups),
        tree=tree,
        culprit_ranks=judgement.culprits,
        stall=stall,
        state=judgement.state,
        summary=summary,
        stuck=judgement.stuck,
        divergence=divergence,
        skew_s=skew_s,
        notes=tuple(all_notes),
        gpus=gpus,
    )


def _named_gpu_processes(gpus: GpuReading, processes: Sequence[ProcessSnapshot], labels: Sequence[str]) -> GpuReading:
    """By pid: NVML lists the processes of this machine, so only the processes read on its host are matched."""
    here = [(snap, label) for snap, label in zip(processes, labels, strict=True) if snap.host in (None, gpus.host)]
    return gpus.with_labels({snap.pid: (label, snap.rank) for snap, label in here if snap.pid is not None})


def _gpu_notes(gpus: GpuReading) -> list[str]:
    notes = [gpus.note] if gpus.note else []
    notes += [f"GPU {gpu.index}: {gpu.error}" for gpu in gpus.gpus if gpu.error]
    listed = [p for gpu in gpus.gpus for p in gpu.processes]
    if listed and all(p.label is None for p in listed):
        notes.append(
            f"GPUs: none of the {len(listed)} process{'es' if len(listed) != 1 else ''} NVML lists is one of the "
            "processes read (another job's, or pids of another namespace: a container without the host's)"
        )
    return notes


def _mark_states(tree: TreeNode, groups: Sequence[Group]) -> TreeNode:
    """Put each group's state on the tree node of its deciding frame (for the renderers)."""
    marks: dict[tuple[str, ...], str] = {}
    for group in groups:
        frame = group.classification.frame
        if frame is None:
            continue
        path = [f.key for f in reversed(group.frames)]
        depth = len(group.frames) - next((i for i, f in enumerate(group.frames) if f is frame), len(group.frames) - 1)
        marks[tuple(path[:depth])] = group.state

    def walk(node: TreeNode, prefix: tuple[str, ...]) -> TreeNode:
        path = (*prefix, node.key) if node.key else prefix
        children = tuple(walk(child, path) for child in node.children)
        return replace(node, children=children, state=marks.get(path, node.state))

    return walk(tree, ())
