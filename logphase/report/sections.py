"""The Report's optional sections as the formats read them: Protocols the producers' own objects meet.

`baselines.Comparison`, `stacks.model.StacksReport` and `flight_recorder.FlightReport` fill these
sections as they are; the Protocols name only what a format shows and `to_json()`, so report/ needs
none of the stages that build them, and a field a format reads cannot go missing unnoticed (mypy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from logphase.phases import Phase


class Section(Protocol):
    """A section's JSON form is its producer's: `Report.to_json()` nests it unchanged."""

    def to_json(self) -> dict[str, Any]: ...


class BaselineSection(Section, Protocol):
    """This run against an earlier one (`--baseline`)."""

    def summary(self) -> str: ...

    def headline_eta(self) -> str | None: ...  # the time left, for the first lines

    def reference_phase_ends(self) -> Sequence[tuple[Phase, float]]:
        """Where the earlier run's phases ended, in seconds after its first timestamp (the picture's ticks)."""
        ...


class StallSection(Protocol):
    @property
    def summary(self) -> str: ...


class StacksSection(Section, Protocol):
    """Stack dumps printed into the log, merged; `stall` is set when some ranks look stuck."""

    @property
    def stall(self) -> StallSection | None: ...


class PendingCollective(Protocol):
    @property
    def frames(self) -> Sequence[str]: ...  # innermost first: `all_reduce (torch/distributed/…:3068)`


class FlightGroupSection(Protocol):
    """One process group across the flight-recorder dumps."""

    @property
    def pending(self) -> PendingCollective | None: ...

    def summary(self) -> str | None: ...


class FlightSection(Section, Protocol):
    """The torch flight-recorder dumps given with the logs, judged per process group."""

    @property
    def dumps(self) -> Sequence[object]: ...

    @property
    def groups(self) -> Sequence[FlightGroupSection]: ...


class NodesSection(Section, Protocol):
    """Where the logs came from when a cluster's engine collected them (`analyze --hosts/--slurm/--k8s/--ray`):
    each node, the nodes that gave none and why, the clocks that differ."""

    def lines(self) -> Sequence[str]:
        """What the report says of the nodes, a line each: how many gave logs, each that gave none with why."""
        ...

    def node_of(self, path: str) -> str | None:
        """The node a source named `node:path` came from."""
        ...
