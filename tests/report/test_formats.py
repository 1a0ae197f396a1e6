"""Every output format renders every section of a Report; `--format` picks the format for each command."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from logphase import __version__
from logphase.judging.stalls import summarize
from logphase.logs.reader import ContextLine
from logphase.phases import Phase, Verdict
from logphase.report.formats import OutputFormat, pick
from logphase.report.model import InputSummary, LastLine, RankRow, Report, RootCause, SpanRow
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

# The timeline at the default 100 columns: labels 8 wide + 2, `  < crashed` 11, so 79 columns for the
# 45 s from 10:00:00 to the last line at 10:00:45, 45/79 = 0.57 s each. A bar covers the column of its
# start to the column its end reaches: TP0 weight_load 0-30 s → columns 0-52, its cuda_graph (no end:
# to the log's end) 41-45 s → 71-78; TP1 1-40 s → 1-70 and 42-45 s → 73-78. The baseline run's
# weight_load ended at 20 s (column 35), its cuda_graph at 30 s (52); the root cause at 45 s (78),
# its words before the caret as they do not fit after it.
TIMELINE = "\n".join(
    [
        "Timeline, 45s (a column is 0.57s):",
        " " * 10 + "10:00:00" + " " * 63 + "10:00:45",
        "TP0" + " " * 7 + "W" * 53 + " " * 18 + "G" * 8,
        "TP1" + " " * 7 + " " + "W" * 70 + " " * 2 + "G" * 6 + "  < crashed",
        "baseline" + " " * 2 + " " * 35 + "W" + " " * 16 + "G",
        " " * 10 + " " * 59 + "root cause, line 9 ^",
        " " * 10 + "W weight_load · G cuda_graph",
        " " * 10 + "baseline: where the earlier run's phases ended, from its first timestamp",
    ]
)

TABLE = f"""\
logphase: CRASHED at cuda_graph — TP1 crashed during cuda_graph: RuntimeError: CUDA error (line 9)
  {FACTS}

{TIMELINE}

phase        ranks    start     end       took    progress
-----------  -------  --------  --------  ------  ----------
weight_load  TP[0-1]  10:00:00  10:00:40  40s     15/15
cuda_graph   TP[0-1]  10:00:41  10:00:45  4s

Ranks:
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

# Mermaid's gantt: a section per rank group (the culprit's marked, its tasks `crit`), a task per phase
# from its start to its end (`done` when it ended, `active` when not: to the log's end), the baseline
# run's phase ends and the root cause as milestones.
GANTT = """\
```mermaid
gantt
    dateFormat YYYY-MM-DD HH:mm:ss
    axisFormat %H:%M:%S
    section TP0
    weight_load :done, 2026-05-01 10:00:00, 2026-05-01 10:00:30
    cuda_graph :active, 2026-05-01 10:00:41, 2026-05-01 10:00:45
    section TP1 (crashed)
    weight_load :crit, done, 2026-05-01 10:00:01, 2026-05-01 10:00:40
    cuda_graph :crit, active, 2026-05-01 10:00:42, 2026-05-01 10:00:45
    section baseline
    weight_load ended in the baseline run :milestone, 2026-05-01 10:00:20, 0s
    cuda_graph ended in the baseline run :milestone, 2026-05-01 10:00:30, 0s
    section cause
    root cause, line 9 :milestone, crit, 2026-05-01 10:00:45, 0s
```
"""

MARKDOWN = f"""\
**logphase: CRASHED** at `cuda_graph` — TP1 crashed during cuda_graph: RuntimeError: CUDA error (line 9)

{FACTS}

{GANTT}
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
    assert document["notes"] == [
        "TP0: the times of 63 progress-bar ticks (lines 26–60) inferred from the bar's own elapsed time: "
        "they carry no stamp",
        "culprit ranks from the flight recorder: rank 1",
    ]
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
    # WHEN given MARKDOWN THEN markdown; WHEN given yaml THEN a usage error that names the choices
    assert run_cli(*command, "--format", "MARKDOWN").stdout == run_cli(*command, "--format", "markdown").stdout
    refused = run_cli(*command, "--format", "yaml")
    assert refused.exit_code == 2
    assert "'yaml' is not one of 'table', 'json', 'markdown', 'html'" in refused.output


def test_mermaid_names_escape_colon_and_hash() -> None:
    # GIVEN rank names with Mermaid's separators in them (`:` ends a task name, `#` opens an entity)
    def rank_span(rank: str) -> SpanRow:
        return replace(span(Phase.WEIGHT_LOAD, "TP0", "10:00:00", "10:00:30"), rank=rank)

    report = replace(full_report(), phases=(rank_span("node:1 #0"),), culprit_ranks=(), baseline=None)
    # WHEN written as markdown THEN the section names them as entities
    assert "    section node#58;1 #35;0" in pick(OutputFormat.MARKDOWN).analysis(report).splitlines()


def test_a_log_without_timestamps_says_so_in_one_line() -> None:
    # GIVEN a report whose phases carry no time
    untimed = tuple(replace(s, start=None, end=None, seconds=None) for s in full_report().phases)
    report = replace(full_report(), phases=untimed)
    expected = "Timeline: the log has no timestamps, so there is no time axis."
    # WHEN written as a table or as markdown THEN no axis, one line that says why
    assert expected in pick(OutputFormat.TABLE).analysis(report).splitlines()
    assert f"_{expected}_" in pick(OutputFormat.MARKDOWN).analysis(report).splitlines()
    assert "mermaid" not in pick(OutputFormat.MARKDOWN).analysis(report)


def test_the_timeline_is_scaled_to_the_width_and_painted_only_with_colour() -> None:
    # GIVEN the report WHEN drawn at 60 columns (TP1's row: 10 of label, 39 columns, `  < crashed`)
    rows = pick(OutputFormat.TABLE, width=60).analysis(full_report()).splitlines()
    tp1 = next(row for row in rows if row.startswith("TP1 "))
    assert len(tp1) == 60
    assert tp1.endswith("G  < crashed")
    # THEN plain characters without colour; with colour, weight_load's W on a blue ground
    assert "\x1b[" not in "\n".join(rows)
    painted = pick(OutputFormat.TABLE, colour=True, width=60).analysis(full_report())
    assert "\x1b[97;44mWWW" in painted


LOGS = FIXTURES / "logs" / "sglang"
EAGLE3_WARMUP = LOGS / "eagle3-tp8-warmup-health-503.log"


def test_analyze_draws_the_ranks_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the 8-rank EAGLE3 log (launch 09:12:06, uvicorn's /health 503 until 09:21:13) in 100 columns
    monkeypatch.setenv("COLUMNS", "100")
    # WHEN analysed post-mortem
    table = run_cli("analyze", "--post-mortem", str(EAGLE3_WARMUP)).stdout
    # THEN 547 s over 91 columns (6.0 s each): the main process (launch, tokenizer, http_start, warmup to
    # the end), TP0 (its own warmup line), TP[1-7] alike; the last progress (line 261, 09:16:16) marked
    timeline = """\
Timeline, 9m07s (a column is 6.0s):
         09:12:06                                                                           09:21:13
main     LT                                       HUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUU
TP0       DDWWWWWWWWWWWWWWWWWWWWWWWWWKGGGGGGGEEgggU
TP[1-7]   DDWWWWWWWWWWWWWWWWWWWWWWWWWKGGGGGGGEEgggg
                                                  ^ last progress, line 261
         L launch · D dist_init · T tokenizer · W weight_load · K kv_cache · G cuda_graph
         E draft_init · g cuda_graph (draft) · H http_start · U warmup
"""
    assert timeline in table


def test_analyze_marks_the_crashed_rank_and_the_root_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN TP3 out of memory in CUDA-graph capture (line 117, 20:16:16), the other ranks cut down after it,
    # in 100 columns
    monkeypatch.setenv("COLUMNS", "100")
    table = run_cli("analyze", "--post-mortem", str(LOGS / "capture-oom-tp3-sigquit-cascade.log")).stdout
    # THEN 104 s over 76 columns (100 less 13 of labels, 11 of `  < crashed`): the seven alike ranks in
    # one row (their starts within 2 s: 2 % of the axis), TP3 apart and marked crashed, the root cause's
    # moment at the axis's end
    timeline = """\
Timeline, 1m44s (a column is 1.4s):
             20:14:32                                                            20:16:16
main         LLLLLT
TP[0-2,4-7]      DDDDWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWKG
TP3              DDDWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWKG  < crashed
                                                                   root cause, line 117 ^
             L launch · D dist_init · T tokenizer · W weight_load · K kv_cache · G cuda_graph
"""
    assert timeline in table
