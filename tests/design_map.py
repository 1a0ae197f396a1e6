"""docs/design.md's layer table and module map, made from the code: the layers that tests/test_architecture.py
enforces and each module's opening line. `python -m tests.design_map` rewrites them; a test checks them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "logphase"
DESIGN = REPO / "docs" / "design.md"

# The layers, lowest first: a unit (a package or a root module of logphase/) imports only units of lower
# layers, never one of its own layer nor above, so there is no cycle between units.
LAYERS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("phases", "errors", "durations", "ranks", "jobs", "disk_cache", "bounded"),
        "the vocabulary, errors and small shared facts; the one parser of numbers, rank ids and dates from input",
    ),
    (("packs", "frames", "outputs"), "the rules as data; what opens a stack dump; output files written safely"),
    (("logs",), "reading: inputs, a line's wrappers (envelopes), lines into events and a timeline"),
    (("stacks",), "stack dumps into snapshots (in the wrappers logs/envelope.py reads)"),
    (
        ("scan", "flight_recorder", "inventory", "nodes"),
        "what reads both, or reads for one purpose; the other nodes of a cluster, reached through its engine",
    ),
    (("baselines",), "recorded runs, their statistics and store, and the setup a log says it ran"),
    (("judging",), "verdicts, confidence, exit codes (pure: no files, processes, clock or store)"),
    (("report",), "the Report, built once, and its formats"),
    (("pipeline",), "the one assembly"),
    (
        ("watch", "bundle", "api"),
        "what runs it: the live watch (its loop an edge: follow, probe, process, clock); the bug-report "
        "archive; the library's door (logphase.analyze)",
    ),
    (("cli",), "the only package that uses click or prints; options, the environment, exit codes"),
    (("__main__",), "`python -m logphase`"),
)

TABLE_BEGIN = "<!-- layer table: made by `python -m tests.design_map` -->"
TABLE_END = "<!-- end of the layer table -->"
MAP_BEGIN = "<!-- module map: made by `python -m tests.design_map` from each module's opening line -->"
MAP_END = "<!-- end of the module map -->"


def layer_table() -> str:
    rows = ["| layer | units | what they own |", "|---|---|---|"]
    rows += [f"| {index} | {', '.join(units)} | {what} |" for index, (units, what) in enumerate(LAYERS)]
    return "\n".join(rows)


def opening_line(path: Path) -> str:
    """The first line of the module's docstring (every module has one: tests/test_architecture.py)."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    return docstring.split("\n\n")[0].replace("\n", " ")


def module_map() -> str:
    """Each layer's units, each unit's modules with their opening lines, as a code block."""
    out = ["```"]
    for index, (units, what) in enumerate(LAYERS):
        out.append(f"layer {index}: {what}")
        for unit in units:
            folder = PACKAGE / unit
            paths = sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{unit}.py"]
            for path in paths:
                name = path.relative_to(PACKAGE).as_posix()
                out.append(f"  {name:<28} {opening_line(path)}")
        out.append("")
    out[-1] = "```"
    return "\n".join(out)


def _between(text: str, begin: str, end: str, body: str) -> str:
    pattern = re.compile(re.escape(begin) + r"\n(?:.*?\n)?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"docs/design.md lacks the markers {begin!r} … {end!r}")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def design_text(text: str) -> str:
    """`text` (docs/design.md) with its layer table and module map made anew."""
    return _between(_between(text, TABLE_BEGIN, TABLE_END, layer_table()), MAP_BEGIN, MAP_END, module_map())


if __name__ == "__main__":
    DESIGN.write_text(design_text(DESIGN.read_text()))
