"""Evidence from outside the log judgement — stack dumps, flight-recorder dumps, the watch's own
verdict — combined into the report's culprits, notes and verdict (pure)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from logphase.phases import Verdict
from logphase.report.model import Report

if TYPE_CHECKING:  # types only: the dump readers are imported where dumps are read
    from logphase.flight_recorder import FlightReport
    from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class WatchVerdict:
    """What `watch` decided with what only it saw: the health endpoint, the process, arrival times."""

    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class Evidence:
    stacks: StacksReport | None = None  # dumps printed into the logs
    flight: FlightReport | None = None  # torch flight-recorder dumps given with the logs
    watched: WatchVerdict | None = None


def with_evidence(report: Report, evidence: Evidence) -> Report:
    if evidence.stacks is not None:
        report = replace(report, stacks=evidence.stacks)
    if evidence.flight is not None:
        report = with_flight_recorder(report, evidence.flight)
    if evidence.watched is not None:
        report = replace(report, verdict=evidence.watched.verdict, reason=evidence.watched.reason)
    return report


def with_flight_recorder(report: Report, flight: FlightReport) -> Report:
    """The flight recorder's finding in the report; the ranks it names missing from a collective
    are the culprits when the logs named none, and a note when the logs named others."""
    culprits = report.culprit_ranks
    notes = list(report.notes)
    missing = flight.missing
    if missing and not culprits:
        culprits = missing
        notes.append(f"culprit ranks from the flight recorder: {', '.join(missing)}")
    elif missing and set(missing) != set(culprits):
        notes.append(f"the flight recorder names {', '.join(missing)} missing from a collective")
    reason = report.reason
    if not report.inputs and report.verdict is Verdict.UNKNOWN:
        reason = "no log given; see the flight recorder"
    return replace(report, flight_recorder=flight, culprit_ranks=culprits, notes=tuple(notes), reason=reason)
