"""Steady runs: the events of one steady rule on one rank, booked as the matcher reads them (pure)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

from logphase.logs.matcher import Event
from logphase.logs.reader import Line
from logphase.logs.timeline import DRAFT_REPEATED
from logphase.packs import Rule
from logphase.phases import FAILURE_KINDS, MAIN_PROCESS_PHASES, EventKind


@dataclass
class Run:
    """The events of one steady rule on one rank since the matcher last saw one: `stage` 0 none
    yet, 1 one seen, 2 two seen with nothing in between that could change what the next does."""

    rule: Rule
    rank: str | None
    stage: int = 0
    member: int = -1  # offset of the last member the matcher saw, in this chunk
    carried: tuple[int, bytes] | None = None  # the last member of the previous chunk: (number, bytes)
    held: list[Line] = field(default_factory=list)  # FollowRuns: members due, the matcher has not read them


Runs = dict[tuple[str, str | None], Run]  # (steady rule id, rank) → its run


def book_runs(runs: Runs, steady: Container[str], event: Event) -> Run | None:
    """Advance the runs as the matcher reads one event; the run a steady event belongs to. A run
    is stable (stage 2) after two events with nothing between that could change what the next
    does: a new phase on the rank, or a bar without a rank (it goes to the lowest rank)."""
    rule = event.rule
    if rule.id in steady:
        key = (rule.id, event.rank)
        run = runs.get(key)
        if run is None or run.stage == 0:
            _reset_rank(runs, event.rank, keep=key)
            run = runs[key] = Run(rule, event.rank, stage=1)
        else:
            run.stage = 2
        return run
    if event.phase is not None and event.kind not in FAILURE_KINDS:
        if event.kind is EventKind.PROGRESS and event.rank is None and event.phase not in MAIN_PROCESS_PHASES:
            for run in runs.values():
                run.stage = 0
        else:
            _reset_rank(runs, event.rank, keep=None)
    return None


def _reset_rank(runs: Runs, rank: str | None, keep: tuple[str, str | None] | None) -> None:
    """An event that may move a rank's phase past the CUDA graphs changes where its next
    dist_init / weight_load / kv_cache / cuda_graph marks go (the draft's spans)."""
    for key, run in runs.items():
        if key != keep and run.rank == rank and run.rule.phase in DRAFT_REPEATED:
            run.stage = 0
