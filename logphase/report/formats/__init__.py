"""Output formats: the `Format` every format module meets, and the `OutputFormat` that `--format` names.

Adding a format is one module here with a class that has every `Format` method, one `OutputFormat`
member, and its case in `pick` (mypy flags the missing case and any missing method).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, assert_never

if TYPE_CHECKING:
    from logphase.baselines.records import RunRecord
    from logphase.report.model import Report
    from logphase.stacks.model import StacksReport

__all__ = ["DEFAULT_WIDTH", "Format", "OutputFormat", "pick"]

# Where no terminal says its width (a pipe, a file): as wide as the phase table with long rank sets.
DEFAULT_WIDTH = 100


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"
    LINE = "line"


class Format(Protocol):
    """How one format writes each document logphase prints; every text ends with a newline."""

    def analysis(self, report: Report) -> str:
        """`logphase analyze`: every section of the Report."""
        ...

    def stacks(self, report: StacksReport) -> str:
        """`logphase stacks`: the merged stacks, their groups and the processes not read."""
        ...

    def runs(self, runs: Sequence[RunRecord], *, db: Path | None) -> str:
        """`logphase runs list`: the recorded runs of the store at `db` (None: there is no store
        yet); nothing when there are none, except where the format is a document (JSON)."""
        ...

    def run(self, run: RunRecord) -> str:
        """`logphase runs show`: one run's setup, outcome, stop point and phase times."""
        ...


def pick(choice: OutputFormat, *, colour: bool = False, width: int = DEFAULT_WIDTH) -> Format:
    """The format `--format` names; `colour` paints a terminal's table and `width` (its columns)
    scales its timeline; both are ignored elsewhere. A format's module is imported when it is
    picked: the others' imports (html, tabulate) are start-up time a run does not need."""
    match choice:
        case OutputFormat.TABLE:
            from logphase.report.formats.table import TableFormat

            return TableFormat(colour=colour, width=width)
        case OutputFormat.JSON:
            from logphase.report.formats.json import JsonFormat

            return JsonFormat()
        case OutputFormat.MARKDOWN:
            from logphase.report.formats.markdown import MarkdownFormat

            return MarkdownFormat()
        case OutputFormat.HTML:
            from logphase.report.formats.html import HtmlFormat

            return HtmlFormat()
        case OutputFormat.LINE:
            from logphase.report.formats.line import LineFormat

            return LineFormat()
        case _:
            assert_never(choice)
