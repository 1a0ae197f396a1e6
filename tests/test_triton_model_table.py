"""Triton's model status table (core src/server.cc, drawn by common src/table_printer.cc): every line of it one
length, `+---+` dividers and `| cell | cell | cell |` rows, a long Status cut at its column's width into further rows
with the other cells blank. A version UNAVAILABLE with a load error is the failure; the TensorRT-LLM exception's
text ends on the row that holds its `(file:line)`."""

from __future__ import annotations

from pathlib import Path

from logphase.logs.envelope import sniff
from tests.conftest import judge_text, root_text

WIDTH = 60  # the Status column's share: the rows are cut there


def divider() -> str:
    return "+" + "-" * 16 + "+" + "-" * 9 + "+" + "-" * (WIDTH + 2) + "+"


def rows(model: str, version: str, status: str) -> list[str]:
    """One record as table_printer.cc AddRow draws it: the Status cut every WIDTH characters, the other cells
    blank on the further rows."""
    pieces = [status[i : i + WIDTH] for i in range(0, len(status), WIDTH)] or [""]
    out = []
    for n, piece in enumerate(pieces):
        first = n == 0
        out.append(f"| {(model if first else ''):<14} | {(version if first else ''):<7} | {piece:<{WIDTH}} |")
    return out


ASSERTION = (
    "UNAVAILABLE: Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion "
    "failed: mpiSize == tp * pp (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:80)"
)


def table(*records: list[str]) -> list[str]:
    return [divider(), *rows("Model", "Version", "Status"), divider(), *(r for rec in records for r in rec), divider()]


def test_a_model_table_is_neither_a_hard_wrap_nor_a_column_rule() -> None:
    # GIVEN Triton's model table: every line one length, each row starting with the table's `| `
    ready = [rows(model, "1", "READY") for model in ("postprocessing", "preprocessing", "ensemble")]
    lines = table(*ready)
    # WHEN sniffed THEN no line is taken for a cut one, and the rows keep their edge
    found = sniff(lines, reads=lambda line: False)
    assert (found.wrap_width, found.layers) == (None, ())


def test_an_unavailable_tensorrt_llm_model_is_the_crash_and_its_assertion_the_cause(tmp_path: Path) -> None:
    # GIVEN the table of a server whose tensorrt_llm model failed its assertion, the assertion's text cut over rows
    failed = rows("tensorrt_llm", "1", ASSERTION)
    lines = table(rows("postprocessing", "1", "READY"), failed)
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN it crashed, the cause the record's last row: the one on which the assertion's text ends with its
    # source location (`worldConfig.cpp:80)`)
    assert report["verdict"] == "crashed", report["reason"]
    assert root_text(report) == failed[-1]


def test_a_ready_table_is_no_failure(tmp_path: Path) -> None:
    # GIVEN a table whose every model is READY, one unloaded (`UNAVAILABLE: unloaded`, no error)
    lines = table(rows("postprocessing", "1", "READY"), rows("tensorrt_llm", "1", "UNAVAILABLE: unloaded"))
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN nothing crashed
    assert report["verdict"] != "crashed", report["reason"]
