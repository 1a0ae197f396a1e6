"""Every output format renders every section of a Report; `--format` picks the format for each command."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from logphase import __version__
from logphase.phases import Phase, Verdict
from logphase.report.formats import OutputFormat, pick
from logphase.report.model import ContextLine, InputSummary, LastLine, RankRow, Report, RootCause, SpanRow
from logphase.stacks.stalls import summarize
from tests.conftest import FIXTURES, run_cli

# --- sections as the producers (baselines.Comparison, StacksReport, FlightReport) offer them -----


@dataclass(frozen=True)
class Comparison:
    said: str

    def summary(self) -> str:
        return self.said

    def headline_eta(self) -> str | None:
        return None

    def reference_phase_ends(self) -> list[tuple[Phase, float]]:
        return [(Phase.WEIGHT_LOAD, 20.0), (Phase.CUDA_GRAPH, 30.0)]

    def to_json(self) -> dict[str, Any]:
        return {"ref": "auto", "summary": self.said}


@dataclass(frozen=True)
class Stall:
    summary: str


@dataclass(frozen=True)
class Stacks:
    stall: Stall | None

    def to_json(self) -> dict[str, Any]:
        return {"schema": "logphase.stacks/1", "summary": self.stall.summary if self.stall else "all idle"}


@dataclass(frozen=True)
class Pending:
    frames: tuple[str, ...]


@dataclass(frozen=True)
class FlightGroup:
    pending: Pending | None
    said: str | None

    def summary(self) -> str | None:
        return self.said


@dataclass(frozen=True)
class Flight:
    dumps: tuple[str, ...]
    groups: tuple[FlightGroup, ...]

    def to_json(self) -> dict[str, Any]:
        return {"dumps": list(self.dumps), "summary": " | ".join(g.said for g in self.groups if g.said)}


BASELINE = "120 lines vs 300 in the run that hung (stopped in cuda_graph at line 300): before its stall point"
STALL = "TP0 waits in all_reduce (torch/distributed/distributed_c10d.py): TP1 is elsewhere"
COLLECTIVE = "collective #4 nccl:all_reduce of default_pg: enqueued by TP0 (scheduled); TP1 never enqueued it"
NOTES = ("culprit ranks from the flight recorder: TP1", "the log names no other rank")


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-05-01 {clock}")


def span(phase: Phase, rank: str, start: str, end: str | None, progress: dict[str, Any] | None = None) -> SpanRow:
    return SpanRow(
        phase=phase,
        rank=rank,
        draft=False,
        path="server.log",
        start_line=2,
        end_line=5,
        start=at(start),
        end=at(end) if end else None,
        seconds=(at(end) - at(start)).total_seconds() if end else None,
        ended=end is not None and phase is Phase.WEIGHT_LOAD,
        progress=progress,
    )


def full_report(flight: Flight | None = None) -> Report:
    """A crash of TP1 in CUDA-graph capture with every optional section filled."""
    return Report(
        inputs=(InputSummary("server.log", 120, 9000),),
        system="sglang",
        version="0.5.6",
        ranks=("TP0", "TP1"),
        phase=Phase.CUDA_GRAPH,
        furthest_phase=Phase.CUDA_GRAPH,
        verdict=Verdict.CRASHED,
        reason="TP1 crashed during cuda_graph: RuntimeError: CUDA error (line 9)",
        culprit_ranks=("TP1",),
        root_cause=RootCause(
            line=9,
            text="RuntimeError: CUDA error",
            rule="sglang.fail.cuda_error",
            rank="TP1",
            path="server.log",
            context=(
                ContextLine(8, "[TP1] Capture cuda graph begin"),
                ContextLine(9, "RuntimeError: CUDA error"),
                ContextLine(10, ""),
            ),
            time=at("10:00:45"),
        ),
        phases=(
            span(Phase.WEIGHT_LOAD, "TP0", "10:00:00", "10:00:30", {"done": 15, "total": 15}),
            span(Phase.WEIGHT_LOAD, "TP1", "10:00:01", "10:00:40"),
            span(Phase.CUDA_GRAPH, "TP0", "10:00:41", None),
            span(Phase.CUDA_GRAPH, "TP1", "10:00:42", "10:00:45"),
        ),
        last_line=LastLine(10, "", at("10:00:45"), "server.log"),
        as_of=at("10:05:00"),
        post_mortem=True,
        silence_s=None,
        budget_s=None,
        rank_rows=(
            RankRow("TP0", Phase.CUDA_GRAPH, Phase.CUDA_GRAPH, 8, at("10:00:44")),
            RankRow("TP1", Phase.CUDA_GRAPH, Phase.CUDA_GRAPH, 9, at("10:00:45")),
        ),
        baseline=Comparison(BASELINE),
        stacks=Stacks(Stall(STALL)),
        flight_recorder=flight
        or Flight(
            dumps=("fr-0", "fr-1"),
            groups=(
                FlightGroup(
                    Pending(("all_reduce (torch/distributed/distributed_c10d.py:3068)", "run_step (train.py:213)")),
                    COLLECTIVE,
                ),
                FlightGroup(None, None),  # a group with nothing in flight says nothing
            ),
        ),
        notes=NOTES,
    )


EMPTY_LINE = ""  # the table writes the context's empty line 10 after `| `, as it writes every line
FACTS = "sglang 0.5.6 · 2 ranks (TP[0-1]) · server.log: 120 lines · last line 10 at 2026-05-01 10:00:45 · post-mortem"

TABLE = f"""\
logphase: CRASHED at cuda_graph — TP1 crashed during cuda_graph: RuntimeError: CUDA error (line 9)
  {FACTS}

phase        ranks    start     end       took    progress
-----------  -------  --------  --------  ------  ----------
weight_load  TP[0-1]  10:00:00  10:00:40  40s     15/15
cuda_graph   TP[0-1]  10:00:41  10:00:45  4s

Ranks diverge:
rank    phase       last progress      line
------  ----------  ---------------  ------
TP0     cuda_graph  10:00:44              8
TP1     cuda_graph  10:00:45              9

Culprit ranks: TP1

Root cause at server.log:9 (sglang.fail.cuda_error, TP1):
     8 | [TP1] Capture cuda graph begin
  >  9 | RuntimeError: CUDA error
    10 | {EMPTY_LINE}

Baseline: {BASELINE}

Stacks in the log: {STALL}

Flight recorder: {COLLECTIVE}
  issued from run_step (train.py:213)

note: {NOTES[0]}
note: {NOTES[1]}
"""

MARKDOWN = f"""\
**logphase: CRASHED** at `cuda_graph` — TP1 crashed during cuda_graph: RuntimeError: CUDA error (line 9)

{FACTS}

| phase       | ranks   | start    | end      | took   | progress   |
|-------------|---------|----------|----------|--------|------------|
| weight_load | TP[0-1] | 10:00:00 | 10:00:40 | 40s    | 15/15      |
| cuda_graph  | TP[0-1] | 10:00:41 | 10:00:45 | 4s     |            |

| rank   | phase      | last progress   |   line |
|--------|------------|-----------------|--------|
| TP0    | cuda_graph | 10:00:44        |      8 |
| TP1    | cuda_graph | 10:00:45        |      9 |

Culprit ranks: `TP1`

<details open><summary>Root cause: line 9</summary>

```
     8 | [TP1] Capture cuda graph begin
     9 | RuntimeError: CUDA error
    10 |
```
</details>

- **Baseline:** {BASELINE}
- **Stacks in the log:** {STALL}
- **Flight recorder:** {COLLECTIVE}
  issued from run_step (train.py:213)
- **note:** {NOTES[0]}
- **note:** {NOTES[1]}

<sub>generated by logphase {__version__}</sub>
"""


def test_the_table_shows_every_section() -> None:
    # GIVEN a report with phases, culprits, a root cause, a baseline, in-log stacks, a flight recorder and notes
    # WHEN written as a table THEN each section is there, in this order and wording
    assert pick(OutputFormat.TABLE).analysis(full_report()) == TABLE


def test_markdown_shows_every_section_the_table_shows() -> None:
    # GIVEN the same report WHEN written as markdown THEN the same sections, marked up to paste
    assert pick(OutputFormat.MARKDOWN).analysis(full_report()) == MARKDOWN


def test_json_nests_each_section_as_its_producer_writes_it() -> None:
    # GIVEN the same report WHEN written as JSON THEN each section is its own to_json(), and the notes a list
    document = json.loads(pick(OutputFormat.JSON).analysis(full_report()))
    assert document["schema"] == "logphase.analysis/1"
    assert document["baseline"] == {"ref": "auto", "summary": BASELINE}
    assert document["stacks"] == {"schema": "logphase.stacks/1", "summary": STALL}
    assert document["flight_recorder"] == {"dumps": ["fr-0", "fr-1"], "summary": COLLECTIVE}
    assert document["notes"] == list(NOTES)


@pytest.mark.parametrize("choice", [OutputFormat.TABLE, OutputFormat.MARKDOWN])
def test_a_flight_recorder_with_nothing_in_flight_says_so(choice: OutputFormat) -> None:
    # GIVEN two dumps whose groups have no pending collective
    report = full_report(Flight(dumps=("fr-0", "fr-1"), groups=(FlightGroup(None, None),)))
    # WHEN written THEN the section says how many dumps were read and that nothing was in flight
    assert "Flight recorder:" + ("** " if choice is OutputFormat.MARKDOWN else " ") + (
        "2 dump(s), no collective in flight"
    ) in pick(choice).analysis(report)


@pytest.mark.parametrize("choice", list(OutputFormat))
def test_every_output_format_writes_both_documents(choice: OutputFormat) -> None:
    # GIVEN any member of OutputFormat (a new one included) WHEN its format writes an analysis and a stacks
    # report THEN both are text ending in a newline that names the verdict / the stacks summary
    stacks_report = summarize([], [])
    chosen = pick(choice)
    assert chosen.analysis(full_report()).endswith("\n")
    assert "crashed" in chosen.analysis(full_report()).lower()
    assert chosen.stacks(stacks_report).endswith("\n")
    assert stacks_report.summary in chosen.stacks(stacks_report)


GPU2 = FIXTURES / "real" / "gpu-h200x2"
SEGFAULT = FIXTURES / "logs" / "sglang" / "faulthandler-segfault-capture.log"


def test_analyze_shows_the_same_sections_in_every_format() -> None:
    # GIVEN a log with a faulthandler dump of the crashed process, and flight-recorder dumps where rank 1
    # never joined all_reduce #4 (the log names no culprit: the dumps do, with a note)
    args = ("analyze", "--post-mortem", str(SEGFAULT), str(GPU2 / "fr" / "fr-rank-0"), str(GPU2 / "fr" / "fr-rank-1"))
    # WHEN analysed in each format
    document = json.loads(run_cli(*args, "--format", "json").stdout)
    table = run_cli(*args, "--format", "table").stdout
    markdown = run_cli(*args, "--format", "markdown").stdout
    # THEN the stacks, the flight recorder and the note JSON holds are in the table and in markdown
    stall, flight = document["stacks"]["stall"]["summary"], document["flight_recorder"]["summary"]
    assert document["notes"] == ["culprit ranks from the flight recorder: rank 1"]
    for line in [f"Stacks in the log: {stall}", f"Flight recorder: {flight}", f"note: {document['notes'][0]}"]:
        assert line in table.splitlines()
    for line in [f"Stacks in the log:** {stall}", f"Flight recorder:** {flight}", f"note:** {document['notes'][0]}"]:
        assert f"- **{line}" in markdown.splitlines()
    assert "  issued from run_step (nccl_hang_capture.py:213)" in markdown.splitlines()


def test_analyze_markdown_shows_the_baseline(tmp_path: Path) -> None:
    # GIVEN a relaunch of 392 lines and the earlier run that hung in CUDA-graph capture after 247
    logs = FIXTURES / "logs" / "sglang"
    hung, relaunch = logs / "eagle3-tp8-hung-cuda-graph-247.log", logs / "eagle3-tp8-warmup-health-503.log"
    # WHEN the relaunch is analysed against it as markdown
    args = ("analyze", "--post-mortem", "--db", str(tmp_path / "none.db"), str(relaunch), "--baseline", str(hung))
    markdown = run_cli(*args, "--format", "markdown").stdout
    # THEN the comparison is in it, as in the table
    said = "392 lines vs 247 in the run that hung (stopped in cuda_graph at line 247): past its stall point"
    assert f"- **Baseline:** {said}" in markdown


@pytest.mark.parametrize("command", [("analyze", "--post-mortem", str(SEGFAULT)), ("stacks", "--from", str(SEGFAULT))])
def test_format_takes_the_name_in_any_case_and_refuses_others(command: tuple[str, ...]) -> None:
    # GIVEN a command with --format
    # WHEN given MARKDOWN THEN markdown; WHEN given html THEN a usage error that names the choices
    assert run_cli(*command, "--format", "MARKDOWN").stdout == run_cli(*command, "--format", "markdown").stdout
    refused = run_cli(*command, "--format", "html")
    assert refused.exit_code == 2
    assert "'html' is not one of 'table', 'json', 'markdown'" in refused.output
