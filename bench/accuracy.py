"""Scoring logphase against the labelled real-world logs (fixtures/realworld): `python -m bench.accuracy`.

Every case file is a batch: fixtures/realworld/cases.toml (the development set, "dev") and each
fixtures/realworld/batches/*.toml (named by its stem), or the files given on the command line. Each
case is analysed as tests/test_realworld.py analyses it (`analyze --post-mortem`, the JSON report, in
this process) and scored on four measures: the furthest phase, the verdict class (stalled and
progressing are one class, "open"), the root-cause line (only where the case names one) and the
culprit ranks. Prints the accuracy overall, per batch, per system and per labelled verdict, the
verdict-class confusion matrix and the misses (`--format json`: the same as one JSON object).
ACCURACY.md says what the figures mean and keeps each batch's first look."""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tabulate import tabulate

from logphase.cli import main as logphase_main
from logphase.logs.timeline import rank_number
from logphase.phases import Verdict

REALWORLD = Path(__file__).resolve().parent.parent / "fixtures" / "realworld"
FLOORS = REALWORLD / "floors.toml"
MEASURES = ("phase", "verdict", "cause", "culprits")
# fixtures/realworld/README.md: a post-mortem reader cannot always tell these apart in a short excerpt
OPEN = frozenset({"stalled", "progressing"})
NO_REPORT = "no report"  # the verdict of a case logphase gave no report for (it failed or refused the file)
# Misses show this much of a root-cause line: enough to recognise it, short enough for a terminal
SHOWN_CHARS = 110


def verdict_class(verdict: str) -> str:
    """The verdict as it is scored: stalled and progressing are one class, "open"."""
    return "open" if verdict in OPEN else verdict


def rank_numbers(ranks: Iterable[str]) -> list[int]:
    """Culprits as the labels write them, sorted: the TP (or global) rank number; -1 for a rank without one."""
    numbers = (rank_number(rank) for rank in ranks)
    return sorted(-1 if number is None else number for number in numbers)


def _verdict_order(verdict: str) -> tuple[int, str]:
    """The design's order of verdicts (docs/design.md §1), "open" where progressing stands, others last."""
    order = [known.value for known in Verdict]
    position = order.index("progressing") if verdict == "open" else order.index(verdict) if verdict in order else None
    return (len(order) if position is None else position, verdict)


# --- cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One labelled log: what a careful reader of the file says logphase should report."""

    id: str
    batch: str
    log: Path
    system: str
    last_phase: str
    verdict: str
    culprit_ranks: tuple[int, ...]  # sorted
    root_cause_line: str  # "" where the case names none (ready, finished, and some progressing)


def batch_name(path: Path) -> str:
    """A case file's batch: its stem; the development set (cases.toml) is "dev"."""
    return "dev" if path.stem == "cases" else path.stem


def logs_folder(path: Path) -> Path:
    """The folder a case file's `file` paths start from: fixtures/realworld, for cases.toml beside
    the logs and for batches/*.toml one folder below them alike."""
    return path.parent.parent if path.parent.name == "batches" else path.parent


def parse_cases(text: str, *, batch: str, folder: Path) -> list[Case]:
    """A case file's cases (the optional fields year, layout, thread_says, notes are not scored)."""
    return [
        Case(
            id=str(entry["id"]),
            batch=batch,
            log=folder / entry["file"],
            system=entry["system"],
            last_phase=entry["last_phase"],
            verdict=entry["verdict"],
            culprit_ranks=tuple(sorted(entry["culprit_ranks"])),
            root_cause_line=entry["root_cause_line"],
        )
        for entry in tomllib.loads(text).get("case", [])
    ]


def load_batch(path: Path) -> list[Case]:
    return parse_cases(path.read_text(encoding="utf-8"), batch=batch_name(path), folder=logs_folder(path))


def default_case_files(realworld: Path = REALWORLD) -> list[Path]:
    """The development set, then every collected batch in name order."""
    return [realworld / "cases.toml", *sorted((realworld / "batches").glob("*.toml"))]


# --- scoring one case ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What logphase's report said about one case (NO_REPORT and why, where it gave none)."""

    furthest_phase: str | None
    verdict: str
    culprit_ranks: tuple[str, ...]
    root_cause: str | None  # the root-cause line's text
    root_cause_line_number: int | None
    reason: str
    # the file's line at that number as the file holds it: the label quotes the file, the report quotes the line
    # without its envelope (a docker stamp, a kubectl prefix), so either holding the label is the labelled line
    root_cause_as_filed: str | None = None


def answer_from_report(report: Mapping[str, Any]) -> Answer:
    """The scored fields of an analysis report (schema logphase.analysis/1)."""
    root = report.get("root_cause")
    return Answer(
        furthest_phase=report.get("furthest_phase"),
        verdict=report["verdict"],
        culprit_ranks=tuple(report.get("culprit_ranks") or ()),
        root_cause=root["text"] if root else None,
        root_cause_line_number=root.get("line") if root else None,
        reason=report.get("reason") or "",
    )


def no_report(why: str) -> Answer:
    return Answer(None, NO_REPORT, (), None, None, why)


@dataclass(frozen=True)
class Score:
    """One case's answer against its labels: right or wrong per measure; cause None where the case
    names no root-cause line (not scored)."""

    case: Case
    answer: Answer
    phase: bool
    verdict: bool
    cause: bool | None
    culprits: bool

    def measured(self) -> dict[str, bool | None]:
        return {"phase": self.phase, "verdict": self.verdict, "cause": self.cause, "culprits": self.culprits}

    def missed(self) -> list[str]:
        return [measure for measure, right in self.measured().items() if right is False]


def score_case(case: Case, answer: Answer) -> Score:
    """The rules of tests/test_realworld.py, each measure on its own."""
    cause = None
    if case.root_cause_line:
        cause = any(case.root_cause_line in text for text in (answer.root_cause, answer.root_cause_as_filed) if text)
    return Score(
        case=case,
        answer=answer,
        phase=answer.furthest_phase == case.last_phase,
        verdict=verdict_class(answer.verdict) == verdict_class(case.verdict),
        cause=cause,
        culprits=rank_numbers(answer.culprit_ranks) == list(case.culprit_ranks),
    )


# --- aggregating ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    """A group of cases: per measure, the answers right out of the cases scored on it."""

    cases: int
    right: Mapping[str, int]
    scored: Mapping[str, int]

    def fraction(self, measure: str) -> float | None:
        """None where no case of the group is scored on the measure (no root-cause lines)."""
        return self.right[measure] / self.scored[measure] if self.scored[measure] else None


def tally(scores: Sequence[Score]) -> Tally:
    right: Counter[str] = Counter()
    scored: Counter[str] = Counter()
    for score in scores:
        for measure, result in score.measured().items():
            if result is not None:
                scored[measure] += 1
                right[measure] += result
    return Tally(
        cases=len(scores),
        right={measure: right[measure] for measure in MEASURES},
        scored={measure: scored[measure] for measure in MEASURES},
    )


def tally_by(
    scores: Sequence[Score], group: Callable[[Score], str], order: Callable[[str], Any] | None = None
) -> dict[str, Tally]:
    """A tally per group, in `order` of the group names (None: the order they first appear in)."""
    groups: dict[str, list[Score]] = {}
    for score in scores:
        groups.setdefault(group(score), []).append(score)
    names = sorted(groups, key=order) if order is not None else list(groups)
    return {name: tally(groups[name]) for name in names}


def confusion(scores: Sequence[Score]) -> dict[str, dict[str, int]]:
    """Verdict classes: wanted → got → cases, both in the design's order of verdicts."""
    counts = Counter((verdict_class(s.case.verdict), verdict_class(s.answer.verdict)) for s in scores)
    wanted = sorted({want for want, _ in counts}, key=_verdict_order)
    got = sorted({answer for _, answer in counts}, key=_verdict_order)
    return {want: {answer: counts[want, answer] for answer in got} for want in wanted}


@dataclass(frozen=True)
class Accuracy:
    """Everything the scoring reports: tallies overall and per group, the confusion matrix, the misses."""

    batches: list[str]
    overall: Tally
    per_batch: dict[str, Tally]
    per_system: dict[str, Tally]
    per_verdict: dict[str, Tally]  # by the labelled verdict, stalled and progressing apart
    confusion: dict[str, dict[str, int]]
    misses: list[Score]  # the cases wrong on at least one measure, in case order


def accuracy(scores: Sequence[Score]) -> Accuracy:
    per_batch = tally_by(scores, lambda s: s.case.batch)
    return Accuracy(
        batches=list(per_batch),
        overall=tally(scores),
        per_batch=per_batch,
        per_system=tally_by(scores, lambda s: s.case.system, order=str),
        per_verdict=tally_by(scores, lambda s: s.case.verdict, order=_verdict_order),
        confusion=confusion(scores),
        misses=[score for score in scores if score.missed()],
    )


# --- floors (the regression guard of tests/test_accuracy.py) -------------------------------------


def parse_floors(text: str) -> dict[str, dict[str, float]]:
    """floors.toml: one table per batch, the least fraction accepted per measure."""
    return {batch: {m: float(v) for m, v in floor.items()} for batch, floor in tomllib.loads(text).items()}


def shortfalls(figures: Tally, floor: Mapping[str, float]) -> list[str]:
    """The measures of a batch below its floor, each with its figure and floor; a measure no case is
    scored on (no root-cause lines) falls short of nothing."""
    found = []
    for measure in MEASURES:
        fraction = figures.fraction(measure)
        if measure in floor and fraction is not None and fraction < floor[measure]:
            right, scored = figures.right[measure], figures.scored[measure]
            found.append(f"{measure} {right}/{scored} = {fraction:.3f} < floor {floor[measure]:.3f}")
    return found


# --- output --------------------------------------------------------------------------------------


def _tally_json(figures: Tally) -> dict[str, Any]:
    measures = {
        measure: {
            "right": figures.right[measure],
            "scored": figures.scored[measure],
            "fraction": None if (fraction := figures.fraction(measure)) is None else round(fraction, 4),
        }
        for measure in MEASURES
    }
    return {"cases": figures.cases, **measures}


def _wanted(case: Case) -> dict[str, Any]:
    return {
        "phase": case.last_phase,
        "verdict": case.verdict,
        "culprit_ranks": list(case.culprit_ranks),
        "root_cause_line": case.root_cause_line,
    }


def _got(answer: Answer) -> dict[str, Any]:
    return {
        "phase": answer.furthest_phase,
        "verdict": answer.verdict,
        "culprit_ranks": list(answer.culprit_ranks),
        "root_cause": answer.root_cause,
        "root_cause_line_number": answer.root_cause_line_number,
        "reason": answer.reason,
    }


def to_json(result: Accuracy) -> dict[str, Any]:
    return {
        "batches": result.batches,
        "overall": _tally_json(result.overall),
        "per_batch": {name: _tally_json(figures) for name, figures in result.per_batch.items()},
        "per_system": {name: _tally_json(figures) for name, figures in result.per_system.items()},
        "per_verdict": {name: _tally_json(figures) for name, figures in result.per_verdict.items()},
        "confusion": result.confusion,
        "misses": [
            {
                "id": miss.case.id,
                "batch": miss.case.batch,
                "system": miss.case.system,
                "log": str(miss.case.log),
                "missed": miss.missed(),
                "wanted": _wanted(miss.case),
                "got": _got(miss.answer),
            }
            for miss in result.misses
        ],
    }


def _cell(figures: Tally, measure: str) -> str:
    fraction = figures.fraction(measure)
    if fraction is None:
        return "-"
    return f"{figures.right[measure]}/{figures.scored[measure]} {fraction:.0%}"


def _tally_table(title: str, column: str, tallies: Mapping[str, Tally]) -> str:
    rows = [[name, figures.cases, *(_cell(figures, m) for m in MEASURES)] for name, figures in tallies.items()]
    return f"{title}\n" + tabulate(rows, headers=[column, "cases", *MEASURES], disable_numparse=True)


def _shorten(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _described(missed: list[str], labels: Mapping[str, Any]) -> str:
    """The missed measures' values, one per line (the culprits as rank numbers, as the labels have them)."""
    return "\n".join(f"{measure}: {labels[measure]}" for measure in missed)


def _miss_row(miss: Score) -> list[str]:
    case, answer = miss.case, miss.answer
    missed = miss.missed()
    wanted = {
        "phase": case.last_phase,
        "verdict": case.verdict,
        "cause": _shorten(case.root_cause_line),
        "culprits": list(case.culprit_ranks),
    }
    got = {
        "phase": answer.furthest_phase or "(none)",
        "verdict": answer.verdict,
        "cause": "(none)" if answer.root_cause is None else "(see report)",
        "culprits": rank_numbers(answer.culprit_ranks),
    }
    report = _shorten(answer.reason)
    if answer.root_cause is not None:
        report += f"\nline {answer.root_cause_line_number}: {_shorten(answer.root_cause)}"
    return [case.id, case.batch, _described(missed, wanted), _described(missed, got), report]


def to_text(result: Accuracy) -> str:
    overall = {"all": result.overall}
    confusion_rows = [[want, *row.values()] for want, row in result.confusion.items()]
    got_classes = list(next(iter(result.confusion.values()), {}))
    sections = [
        f"logphase accuracy on the labelled real-world logs: {result.overall.cases} cases, "
        f"batches {', '.join(result.batches)} (a cell: right/scored; cause only where a case names its line)",
        _tally_table("Overall", "", overall),
        _tally_table("Per batch", "batch", result.per_batch),
        _tally_table("Per system", "system", result.per_system),
        _tally_table(
            "Per labelled verdict (scored by class: stalled and progressing are one, open)",
            "verdict",
            result.per_verdict,
        ),
        "Verdict class, wanted (rows) × got (columns)\n"
        + tabulate(confusion_rows, headers=["wanted \\ got", *got_classes], disable_numparse=True),
        f"Misses ({len(result.misses)})\n"
        + tabulate(
            [_miss_row(miss) for miss in result.misses],
            headers=["id", "batch", "wanted", "got", "the report's reason / root-cause line"],
            disable_numparse=True,
        ),
    ]
    return "\n\n".join(sections) + "\n"


# --- the I/O edge: running logphase, reading files, printing --------------------------------------


def analyse(case: Case) -> Answer:
    """logphase's report on one case, got as tests/conftest.py's run_json gets it: the CLI in this
    process, `analyze --post-mortem LOG --format json`. A case logphase fails on is scored, not fatal."""
    result = CliRunner().invoke(logphase_main, ["analyze", "--post-mortem", str(case.log), "--format", "json"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return no_report(f"logphase raised {type(result.exception).__name__}: {result.exception}")
    try:
        report = json.loads(result.stdout)
    except ValueError:
        said = next((line for line in result.stderr.splitlines() if line.strip()), "nothing on stderr")
        return no_report(f"exit {result.exit_code}, no JSON report: {said}")
    answer = answer_from_report(report)
    return replace(answer, root_cause_as_filed=line_as_filed(case.log, answer.root_cause_line_number))


def line_as_filed(log: Path, number: int | None) -> str | None:
    """Line `number` (1-based) of the file as it holds it, wrappers and all; None past its end."""
    if number is None or number < 1:
        return None
    lines = log.read_bytes().split(b"\n")
    return lines[number - 1].decode("utf-8", "replace") if number <= len(lines) else None


def score_files(case_files: Sequence[Path], analyser: Callable[[Case], Answer] = analyse) -> list[Score]:
    return [score_case(case, analyser(case)) for path in case_files for case in load_batch(path)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.splitlines()[0])
    parser.add_argument(
        "case_files",
        nargs="*",
        type=Path,
        metavar="CASES.toml",
        help="case files to score, each a batch (default: fixtures/realworld/cases.toml and batches/*.toml)",
    )
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    result = accuracy(score_files(args.case_files or default_case_files()))
    if args.format == "json":
        sys.stdout.write(json.dumps(to_json(result), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(to_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
