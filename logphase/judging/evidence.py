"""Evidence from outside the log judgement — stack dumps (printed in the log or taken live with --pid)
and torch flight-recorder dumps — weighed into the run's culprits, notes and reason (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the dump readers are imported where dumps are read
    from logphase.flight_recorder import FlightReport
    from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class Evidence:
    live_stacks: StacksReport | None = None  # every rank's stack taken now (--pid): odd ranks out stand out
    flight: FlightReport | None = None  # torch flight-recorder dumps given with the logs


@dataclass(frozen=True)
class Culprits:
    """The ranks to blame, and what the outside evidence said about them."""

    ranks: tuple[str, ...]
    notes: tuple[str, ...] = ()


def weigh_culprits(from_logs: tuple[str, ...], evidence: Evidence) -> Culprits:
    """The logs' culprits stand; where the logs named none, the flight recorder's ranks missing from a
    collective, else the live stacks' odd ranks out, are the culprits, and a note says where they came
    from (dumps printed in a log are the dying process's, not a comparison of ranks). Evidence that
    names other ranks than the logs is a note, never silently dropped."""
    ranks = from_logs
    notes: list[str] = []
    flight = evidence.flight
    if flight is not None and flight.missing:
        if not ranks:
            ranks = flight.missing
            notes.append(f"culprit ranks from the flight recorder: {', '.join(flight.missing)}")
        elif set(flight.missing) != set(ranks):
            notes.append(f"the flight recorder names {', '.join(flight.missing)} missing from a collective")
    stacks = evidence.live_stacks
    if stacks is not None and stacks.culprit_ranks:
        if not ranks:
            ranks = stacks.culprit_ranks
            notes.append(f"culprit ranks from the stacks: {', '.join(stacks.culprit_ranks)}")
        elif set(stacks.culprit_ranks) != set(ranks):
            notes.append(f"the stacks name {', '.join(stacks.culprit_ranks)} as the odd ranks out")
    return Culprits(ranks, tuple(notes))
