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
    flight, stacks = evidence.flight, evidence.live_stacks
    outside = (  # who, the ranks it names, what it says of them
        (
            "the flight recorder",
            flight.missing if flight else (),
            "the flight recorder names {} missing from a collective",
        ),
        ("the stacks", stacks.culprit_ranks if stacks else (), "the stacks name {} as the odd ranks out"),
    )
    for source, named, other in outside:
        if named and not ranks:
            ranks = named
            notes.append(f"culprit ranks from {source}: {', '.join(named)}")
        elif named and set(named) != set(ranks):
            notes.append(other.format(", ".join(named)))
    return Culprits(ranks, tuple(notes))
