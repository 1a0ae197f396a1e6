"""The labelled real-world logs (fixtures/realworld, copied from ../shared/realworld): phase, verdict,
culprits, root-cause line. Cases added to ../shared/realworld since the copy run too when it is beside
the checkout."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from bench.accuracy import line_as_filed
from logphase.logs.timeline import rank_number
from tests.conftest import REALWORLD, SHARED, run_json


def _cases(folder: Path) -> list[dict[str, Any]]:
    listed = folder / "cases.toml"
    cases = tomllib.loads(listed.read_text())["case"] if listed.exists() else []
    return [{**case, "folder": folder} for case in cases]


COPIED = _cases(REALWORLD)
CASES = COPIED + [
    case for case in _cases(SHARED / "realworld") if case["id"] not in {copied["id"] for copied in COPIED}
]
# The README says a post-mortem reader cannot always tell these apart in a short excerpt.
OPEN = {"stalled", "progressing"}


def verdict_class(verdict: str) -> str:
    return "open" if verdict in OPEN else verdict


def rank_numbers(ranks: list[str]) -> list[int]:
    # -1 for a rank without a number; TP0 is 0 (`rank_number(rank) or -1` made it -1 too)
    numbers = (rank_number(rank) for rank in ranks)
    return sorted(-1 if number is None else number for number in numbers)


# Labels logphase disagrees with, and why (also in the issue note). The test pins our answer, so a
# change in either direction is noticed.
DISAGREE: dict[str, dict[str, Any]] = {
    # The excerpt ends with the warmup thread's `GET /get_model_info` (its deprecation warning): the
    # reference's startup table (sglang.md §2.1 #28) puts that request in warmup, not http_start.
    "004": {"last_phase": "warmup"},
}


def test_the_real_world_copy_is_there() -> None:
    # GIVEN a clone WHEN the copied cases are listed THEN every labelled log is there (31 cases: batches 1-2)
    assert len(COPIED) >= 31
    assert all((REALWORLD / case["file"]).exists() for case in COPIED)
    assert all(case["url"].startswith("https://") for case in COPIED)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['id']}-{c['system']}")
def test_realworld_case(case: dict[str, Any]) -> None:
    # GIVEN a real log excerpt a user pasted, analysed post-mortem as a pasted excerpt is finished
    case = {**case, **DISAGREE.get(case["id"], {})}
    _, report = run_json("analyze", "--post-mortem", str(case["folder"] / case["file"]))
    # THEN the verdict class, the furthest phase, the culprits and the root-cause line match the labels
    assert verdict_class(report["verdict"]) == verdict_class(case["verdict"]), report["reason"]
    assert report["furthest_phase"] == case["last_phase"], report["reason"]
    assert rank_numbers(report["culprit_ranks"]) == sorted(case["culprit_ranks"])
    if case["root_cause_line"]:
        assert report["root_cause"] is not None, report["reason"]
        # the label quotes the file's line, the report that line without its envelope: either holds it
        filed = line_as_filed(case["folder"] / case["file"], report["root_cause"]["line"])
        assert any(case["root_cause_line"] in text for text in (report["root_cause"]["text"], filed) if text)
