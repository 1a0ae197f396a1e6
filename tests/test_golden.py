"""Golden fixtures: every fixtures/logs/<system>/<case>.log with its <case>.expected.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_json

CASES = sorted(p for p in (FIXTURES / "logs").glob("*/*.log") if not p.name.endswith(".part.log"))


def _expected(log: Path) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(log.with_name(log.name.removesuffix(".log") + ".expected.json").read_text())
    return expected


def _check(actual: dict[str, Any], expect: dict[str, Any]) -> None:
    for key, wanted in expect.items():
        if key == "root_cause" and wanted is not None:
            root = actual["root_cause"]
            assert root is not None, f"expected a root cause at line {wanted.get('line')}, got none"
            assert root["line"] == wanted["line"], (root["line"], root["text"])
            if "rank" in wanted:
                assert root["rank"] == wanted["rank"]
            assert wanted["text_contains"] in root["text"]
        else:
            assert actual[key] == wanted, f"{key}: {actual[key]!r} != {wanted!r} ({actual['reason']})"


def test_there_are_enough_golden_cases() -> None:
    # GIVEN the fixture corpus WHEN counted THEN it covers the 30 cases at least
    assert len(CASES) >= 30


@pytest.mark.parametrize("log", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_case(log: Path) -> None:
    # GIVEN a fixture log and its hand-judged expectation
    spec = _expected(log)
    files = [str(log.with_name(name)) for name in spec.get("files", [log.name])]
    # WHEN analysed with each set of arguments it names
    for scenario in [spec, *spec.get("also", [])]:
        exit_code, actual = run_json("analyze", *files, *scenario.get("args", []))
        # THEN the verdict, phases, culprits and root cause are the expected ones
        _check(actual, scenario["expect"])
        assert exit_code == scenario["exit_code"], actual["reason"]
