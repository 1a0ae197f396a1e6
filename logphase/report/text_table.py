"""Plain-text tables in tabulate's "simple" layout, written without importing tabulate.

tabulate's import costs a small log's `analyze` ~13 ms of its ~170 (it imports `importlib.metadata`
for its version), more than laying out the table. What the terminal report's tables hold (text,
whole numbers, empty cells, ASCII) is laid out here exactly as tabulate lays it out; any other
table (a float column, colour codes, wide or non-ASCII characters, several lines in a cell, cells
that are not text) is handed to tabulate itself, imported then."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# tabulate's number with thousands separators (`1,000`, `.5`): what it reads as a number besides
# what int() and float() accept
_THOUSANDS = re.compile(r"^(([+-]?[0-9]{1,3})(?:,([0-9]{3}))*)?(?(1)\.[0-9]*|\.[0-9]+)?$")
_GAP = "  "  # between columns
_HEADER_ROOM = 2  # tabulate's MIN_PADDING: a column is at least its header and two spaces wide
ELLIPSIS = "…"  # ends a cell cut to fit the width (one column wide)
# A column narrowed to fit keeps at least this much of its cells (or its header, when wider).
MIN_CUT = 8


def fit(
    rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None, whole: Sequence[str] = ()
) -> list[list[str]]:
    """The rows with the widest text columns cut (`…`) until the table's lines fit `width` columns (None:
    as they are), the widest first. A column never narrows below its header or MIN_CUT; the columns named
    in `whole` (short words a reader needs entire: `working (on CPU)`) narrow only once no other can; a
    table that cannot fit then is as narrow as it can be."""
    fitted = [list(row) for row in rows]
    if width is None or not rows:
        return fitted
    widths = [max(len(header) + _HEADER_ROOM, *(len(row[i]) for row in rows)) for i, header in enumerate(headers)]
    floors = [min(w, max(len(header) + _HEADER_ROOM, MIN_CUT)) for w, header in zip(widths, headers, strict=True)]
    kept = {i for i, header in enumerate(headers) if header in whole}
    excess = sum(widths) + len(_GAP) * (len(widths) - 1) - width
    while excess > 0:
        narrower = [i for i in range(len(widths)) if widths[i] > floors[i] and i not in kept]
        narrower = narrower or [i for i in range(len(widths)) if widths[i] > floors[i]]
        if not narrower:
            break
        widest = max(narrower, key=lambda i: widths[i])  # the widest first: short columns stay whole longest
        widths[widest] -= 1
        excess -= 1
    for row in fitted:
        for i, cell in enumerate(row):
            if len(cell) > widths[i]:
                row[i] = cell[: widths[i] - 1].rstrip() + ELLIPSIS
    return fitted


def simple_table(
    rows: Sequence[Sequence[object]], headers: Sequence[str], width: int | None = None, whole: Sequence[str] = ()
) -> str:
    """`tabulate(rows, headers=headers)` (its "simple" format), byte for byte; with `width`, text cells
    cut to fit it (`fit`, `whole` its columns cut last)."""
    if width is not None and all(isinstance(cell, str) for row in rows for cell in row):
        rows = fit([[str(cell) for cell in row] for row in rows], headers, width, whole)
    columns = _text_columns(rows, len(headers))
    if columns is None or not all(header.isascii() and header.isprintable() for header in headers):
        from tabulate import tabulate  # a table this module does not lay out: tabulate's own

        return tabulate(rows, headers=headers)
    head: list[str] = []
    rule: list[str] = []
    body: list[list[str]] = [[] for _ in rows]
    for header, cells in zip(headers, columns, strict=True):
        kind = _column_kind(cells)
        if kind is None:
            from tabulate import tabulate

            return tabulate(rows, headers=headers)
        # a number column is right-aligned as it is; a text column is stripped and left-aligned
        shown = cells if kind == "number" else [cell.strip() for cell in cells]
        width = max(len(header) + _HEADER_ROOM, *(len(cell) for cell in shown))
        head.append(header.rjust(width) if kind == "number" else header.ljust(width))
        rule.append("-" * width)
        for row, cell in zip(body, shown, strict=True):
            row.append(cell.rjust(width) if kind == "number" else cell.ljust(width))
    lines = [head, rule, *body]
    return "\n".join(_GAP.join(line).rstrip() for line in lines)


def _text_columns(rows: Sequence[Sequence[object]], width: int) -> list[list[str]] | None:
    """The columns of a table of one-line ASCII text cells, as many as there are headers; None for
    any other table."""
    if not rows:
        return None
    columns: list[list[str]] = [[] for _ in range(width)]
    for row in rows:
        if len(row) != width:
            return None
        for column, cell in zip(columns, row, strict=True):
            # isprintable: no colour codes, line breaks, tabs or tabulate's separating-line mark; a cut
            # cell's ellipsis is one column wide, as tabulate counts it
            if not isinstance(cell, str) or not cell.replace(ELLIPSIS, ".").isascii() or not cell.isprintable():
                return None
            column.append(cell)
    return columns


def _column_kind(cells: list[str]) -> str | None:
    """tabulate's reading of a column of text: "number" (whole numbers, empty cells and True/False:
    right-aligned), "text" (left-aligned), None (a column of fractions: tabulate rewrites them)."""
    rank = 1  # tabulate starts from bool: a column of empty cells is laid out as text
    for cell in cells:
        rank = max(rank, _cell_rank(cell))
    if rank == 2:
        return "number"
    return "text" if rank != 3 else None


def _cell_rank(cell: str) -> int:
    """tabulate's type of a text cell, in its order of generality: 0 empty, 1 True/False, 2 whole
    number, 3 fraction, 5 text."""
    if not cell:
        return 0
    if cell in ("True", "False"):
        return 1
    thousands = _THOUSANDS.match(cell) is not None
    if _converts(int, cell) or (thousands and "." not in cell):
        return 2
    if thousands or (_converts(float, cell) and _finite_or_named(cell)):
        return 3
    return 5


def _converts(kind: type[int] | type[float], cell: str) -> bool:
    try:
        kind(cell)
    except ValueError:
        return False
    return True


def _finite_or_named(cell: str) -> bool:
    """A float text that is not an overflow to infinity (`1e999`), or names one (`inf`, `nan`)."""
    return math.isfinite(float(cell)) or cell.lower() in ("inf", "-inf", "nan")
