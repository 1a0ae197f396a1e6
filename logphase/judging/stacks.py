"""Stacks judgement: the classified groups of a stack snapshot → state, culprits, headline, stuck (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from logphase.ranks import format_rank_set, list_ranks
from logphase.stacks.model import Classification, Frame, Group, ProcessSnapshot

# States that mean "blocked until another rank (or the GPU) does something".
WAIT_STATES = frozenset({"collective_wait", "rendezvous", "gpu_sync"})
ALL_IDLE = "all ranks idle in the event loop: the server is up; look at the health check, not the server"


@dataclass(frozen=True)
class StacksJudgement:
    culprits: tuple[str, ...]  # labels of the ranks to look at
    state: str
    summary: str  # the headline a person can act on
    stuck: bool
    stall_groups: tuple[Group, ...]  # the groups the stall is about


def judge_stacks(
    peer_groups: Sequence[Group],
    groups: Sequence[Group],
    fatal: Mapping[str, str | None],
    samples: int,
    *,
    processes: Sequence[ProcessSnapshot],
) -> StacksJudgement:
    """Where the ranks wait, who is behind, and whether the run is stuck (docs/design.md §3.4). `groups`
    are the classified stacks of `processes` that could be read; `peer_groups` the ranks' among them."""
    if not groups:
        unreadable = [p for p in processes if not p.skipped]
        summary = "no process could be read" if unreadable or not processes else "no Python process to read"
        return StacksJudgement((), "unknown", summary, False, ())
    if not peer_groups:
        return StacksJudgement((), "unknown", "no rank could be read", False, ())
    crashed = [g for g in groups if g.state == "crashed"]
    if crashed:
        parts = [describe(g.labels, g.classification, fatal=fatal.get(g.labels[0])) for g in crashed]
        rest = [g for g in peer_groups if g.state != "crashed"]
        if rest:
            parts += [describe(g.labels, g.classification) for g in rest[:2]]
        labels = [label for g in crashed for label in g.labels if g.peer] or [crashed[0].labels[0]]
        return StacksJudgement(tuple(labels), "crashed", "; ".join(parts), True, tuple(crashed))

    states = {g.state for g in peer_groups}
    everyone = [label for g in peer_groups for label in g.labels]
    if states == {"idle"}:
        moving_note = ""
        if any(g.moving is False for g in peer_groups) and samples > 1:
            moving_note = " (their stacks did not change; an idle server does not need to)"
        if len(everyone) == 1:
            return StacksJudgement(
                (),
                "idle",
                f"{everyone[0]} is idle in the event loop: the server is up; "
                f"look at the health check, not the server{moving_note}",
                False,
                (),
            )
        return StacksJudgement((), "idle", ALL_IDLE + moving_note, False, ())

    if len(peer_groups) == 1:
        group = peer_groups[0]
        who = "all ranks" if len(group.labels) > 1 else group.labels[0]
        text = describe(group.labels, group.classification)
        if len(group.labels) > 1:
            text = f"all ranks ({format_rank_set(group.labels)})" + text[len(list_ranks(group.labels)) :]
        if group.state in WAIT_STATES:
            if group.moving:
                return StacksJudgement(
                    (), group.state, f"{text}, but their stacks change between samples: still working", False, ()
                )
            advice = (
                ": nobody here is behind; the rank they wait for is outside these processes (another node?), "
                "or the GPU / network hangs"
                if len(group.labels) > 1
                else ": the peer it waits for is not in this snapshot; look at the other ranks"
            )
            return StacksJudgement((), group.state, text + advice, True, (group,))
        if samples == 1 and group.moving is not None:
            # one sample: py-spy's mark says running or idle, not whether the stack ever changes
            return StacksJudgement(
                (),
                group.state,
                f"{text}{motion(group.moving, samples, gpu_busy=group.gpu_busy)}; take --samples 3 to see it move",
                False,
                (),
            )
        if group.moving is True:
            return StacksJudgement(
                (), group.state, f"{text}: working, their stacks change between samples; still starting", False, ()
            )
        if group.moving is False:
            return StacksJudgement(
                (), group.state, f"{text}: frozen, the same stack in all {samples} samples ({who})", True, (group,)
            )
        return StacksJudgement(
            (), group.state, f"{text}; take --samples 3 --interval 2 to tell working from frozen", False, ()
        )

    waiting = [g for g in peer_groups if g.state in WAIT_STATES]
    others = [g for g in peer_groups if g.state not in WAIT_STATES]
    n_wait = sum(len(g.labels) for g in waiting)
    n_other = sum(len(g.labels) for g in others)
    if waiting and others and n_wait >= n_other:
        culprits = [label for g in others for label in g.labels]
        parts = [describe(g.labels, g.classification) + _gpu_words(g) for g in waiting]
        parts += [
            describe(g.labels, g.classification, still=True) + motion(g.moving, samples, gpu_busy=g.gpu_busy)
            for g in others
        ]
        verb = "is" if len(culprits) == 1 else "are"
        headline = "; ".join(parts) + f" — {list_ranks(culprits)} {verb} behind"
        return StacksJudgement(tuple(culprits), others[0].state, headline, True, tuple(others))

    sizes = [len(g.labels) for g in peer_groups]
    smallest, largest = min(sizes), max(sizes)
    biggest = next(g for g in peer_groups if len(g.labels) == largest)
    # ranks in the very same stack as the majority are never odd, whatever their motion says
    if smallest < largest and any(g.frames != biggest.frames for g in peer_groups if len(g.labels) == smallest):
        odd = [g for g in peer_groups if len(g.labels) == smallest and g.frames != biggest.frames]
        rest = [g for g in peer_groups if g not in odd]
        culprits = [label for g in odd for label in g.labels]
        verb = "differs" if len(culprits) == 1 else "differ"
        parts = [describe(g.labels, g.classification) + motion(g.moving, samples, gpu_busy=g.gpu_busy) for g in odd]
        parts += [describe(g.labels, g.classification) for g in rest]
        return StacksJudgement(
            tuple(culprits),
            odd[0].state,
            f"{list_ranks(culprits)} {verb} from the rest: " + "; ".join(parts),
            True,
            tuple(odd),
        )

    parts = [describe(g.labels, g.classification) + motion(g.moving, samples, gpu_busy=g.gpu_busy) for g in peer_groups]
    if all(g.state in WAIT_STATES for g in peer_groups):
        headline = "ranks wait in different places: " + "; ".join(parts) + " — mismatched collectives"
        return StacksJudgement((), peer_groups[0].state, headline, True, tuple(peer_groups))
    # of one sample, not moving is py-spy's idle mark: a wait, not a frozen stack
    stuck = (samples > 1 and any(g.moving is False for g in peer_groups)) or bool(waiting)
    return StacksJudgement((), peer_groups[0].state, "ranks are split: " + "; ".join(parts), stuck, tuple(peer_groups))


def frame_phrase(frame: Frame | None) -> str:
    """`all_reduce (torch.distributed)`, `load_weights (llama.py)`."""
    if frame is None:
        return "an empty stack"
    file = frame.file
    if "torch/distributed/" in file:
        where = "torch.distributed"
    elif frame.native:
        where = file
    else:
        where = file.rsplit("/", 1)[-1] if file.startswith("/") else file
    return f"{frame.function} ({where})"


def describe(labels: Sequence[str], cls: Classification, fatal: str | None = None, still: bool = False) -> str:
    """ "TP0, TP1, TP3 wait in all_reduce (torch.distributed) inside capture (cuda_graph_runner.py)"."""
    who = list_ranks(labels)
    one = len(set(labels)) == 1
    where = frame_phrase(cls.frame)
    if cls.context is not None:
        where += f" inside {cls.context.function} ({cls.context.file.rsplit('/', 1)[-1]})"
    is_ = "is" if one else "are"
    if fatal:
        return f"{who} crashed ({fatal}); last frame {where}"
    verbs = {
        "collective_wait": f"{'waits' if one else 'wait'} in {where}",
        "rendezvous": f"{'waits' if one else 'wait'} for peers in {where}",
        "gpu_sync": f"{'waits' if one else 'wait'} for the GPU in {where}",
        "subprocess_wait": f"{'waits' if one else 'wait'} for a child process in {where}",
        "idle": f"{is_} idle in {where}",
        "unknown": f"{is_} {'still ' if still else ''}in {where}",
    }
    default = f"{is_} {'still ' if still else ''}in {where} ({cls.state})"
    return f"{who} {verbs.get(cls.state, default)}"


def _gpu_words(group: Group) -> str:
    """A waiting group whose kernels keep its GPU busy (NVML): the wait is for work that runs."""
    return " (its kernels keep its GPU busy)" if group.gpu_busy else ""


def motion(moving: bool | None, samples: int = 2, *, gpu_busy: bool | None = None) -> str:
    """What a group's motion says; of one sample, what py-spy's mark on its main thread says; a group working
    by its GPU's evidence (NVML: its kernels kept the GPU busy) says so."""
    if moving is True and gpu_busy:
        return " (working: its kernels keep its GPU busy)"
    if samples == 1:
        return {True: " (working: on the CPU when sampled)", False: " (waiting: idle when sampled)", None: ""}[moving]
    if moving is True:
        return " (working: its stack changes between samples)"
    if moving is False:
        return " (frozen: the same stack in every sample)"
    return ""
