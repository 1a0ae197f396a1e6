"""Numbers, dates and ranks that break parsers (issue 29): each read through logphase/bounded.py, so a
5,000-digit number, a rank of 10^30, a year 9999, a `²` or `٣` and a JSON field of the wrong type are
bad input or absent, never a traceback."""

from __future__ import annotations

import json
import pickle
import random
import re
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.bounded import (
    LAST_YEAR,
    MAX_NUMBER,
    MAX_RANK,
    from_epoch,
    in_calendar,
    rank_label,
    read_int,
    read_signed,
)
from logphase.ranks import format_rank_set, natural_key
from logphase.stacks.dumps_json import parse_json_text
from tests.conftest import FIXTURES
from tests.hostile.child import assert_handled, run_cli

HOSTILE_NUMBERS = ["9" * 5000, "1" + "0" * 30, "99999999999999999999", "²", "٣", "0000", "9999"]


@pytest.mark.parametrize("text", ["9" * 5000, "1" + "0" * 30, "²", "٣", "", "-1", "1.5", " 1"])
def test_what_is_no_bounded_number_reads_as_none(text: str) -> None:
    # GIVEN text a log could hold where a number belongs WHEN read THEN absent, never an exception
    assert read_int(text) is None


def test_numbers_ranks_and_signs_within_their_bounds() -> None:
    assert read_int("0042") == 42
    assert read_int(str(MAX_NUMBER)) == MAX_NUMBER
    assert read_int("1" + "0" * 18) is None  # 19 digits
    assert rank_label(str(MAX_RANK)) == f"rank {MAX_RANK}"
    assert rank_label(str(MAX_RANK + 1)) is None
    assert rank_label("3", "local_rank") == "local_rank 3"
    # a counter torch may print negative (`last completed NCCL work: -1`), bounded the same way
    assert (read_signed("-1"), read_signed("174"), read_signed("-" + "9" * 5000), read_signed("-²")) == (
        -1,
        174,
        None,
        None,
    )


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789²٣ -x"), max_size=24))
def test_any_text_reads_as_its_ascii_number_or_none(text: str) -> None:
    value = read_int(text)
    if re.fullmatch(r"[0-9]{1,18}", text):
        assert value == int(text)
    else:
        assert value is None


def test_dates_out_of_the_calendars_bounds_read_as_none() -> None:
    assert in_calendar(datetime(9999, 12, 31)) is None
    assert in_calendar(datetime(1, 1, 1)) is None
    assert in_calendar(datetime(1900, 1, 1)) == datetime(1900, 1, 1)  # strptime's year of a year-less stamp
    assert from_epoch("1700000000") == datetime(2023, 11, 14, 22, 13, 20)
    assert from_epoch("1700000000123") == datetime(2023, 11, 14, 22, 13, 20, 123000)  # milliseconds
    assert from_epoch("9" * 19) is None and from_epoch("9" * 400) is None and from_epoch("٣") is None
    assert from_epoch(str(int(datetime(LAST_YEAR + 1, 6, 1).timestamp()))) is None


def test_rank_names_with_any_digits_sort_and_group() -> None:
    # GIVEN rank names with a 5,000-digit number, a superscript and an Arabic-Indic digit
    names = ["rank 10", "rank 2", "rank " + "9" * 5000, "TP²", "TP٣"]
    # WHEN sorted and grouped THEN numeric order for ASCII digits; the others stay text
    assert sorted(names, key=natural_key)[:3] == ["TP²", "TP٣", "rank 2"]
    assert sorted(names, key=natural_key)[-1] == "rank " + "9" * 5000
    assert format_rank_set(["rank 1", "rank 2", "TP²"]) == "TP², rank[1-2]"


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"schema": "logphase.stacks/1", "processes": [{"pid": [1]}]}, "'pid' is a list"),
        ({"schema": "logphase.stacks/1", "processes": [{"pid": 1, "rank": {"a": 1}}]}, "'rank' is a dict"),
        ({"schema": "logphase.stacks/1", "processes": [{"threads": [{"frames": [7]}]}]}, "'frames[0]' is a int"),
        ([{"pid": 10**30, "frames": []}], "'pid' is a int, expected a whole number"),
        ([{"frames": [{"name": "f", "line": "12"}]}], "'line' is a str"),
    ],
)
def test_a_stack_json_field_of_the_wrong_type_is_named(document: object, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        parse_json_text(json.dumps(document))


# --- the CLI in a child process, on generated inputs (seeded) ----------------------------------------

LOGS = sorted((FIXTURES / "logs").rglob("*.log"))


def _with_numbers(seed: int) -> str:
    """A fixture log whose digit runs are replaced, one in three, by a hostile number."""
    chosen = random.Random(seed)
    lines = chosen.choice(LOGS).read_text(errors="replace").splitlines()[:300]
    number = chosen.choice(HOSTILE_NUMBERS)
    swap = lambda found: number if chosen.random() < 0.3 else found.group(0)  # noqa: E731
    return "\n".join(re.sub(r"[0-9]+", swap, line) for line in lines) + "\n"


COMMANDS = [
    ["analyze", "--post-mortem", "LOG", "--record", "--db", "runs.db"],
    ["analyze", "--post-mortem", "LOG", "--format", "json"],
    ["runs", "add", "LOG", "--db", "runs.db"],
    ["stacks", "--from", "LOG"],
]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_logs_with_hostile_numbers_and_dates(tmp_path: Path, seed: int) -> None:
    log = tmp_path / "run.log"
    log.write_text(_with_numbers(seed))
    for command in COMMANDS:
        ran = run_cli([str(log) if arg == "LOG" else arg for arg in command], tmp_path)
        assert_handled(ran, (0, 3, 4, 5, 6))


_FR = {
    "version": "2.10",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
    "pg_status": {"0": {"last_enqueued_collective": 3, "last_completed_collective": 2}},
    "entries": [
        {
            "collective_seq_id": 3,
            "process_group": ["0", "default_pg"],
            "profiling_name": "nccl:all_reduce",
            "state": "scheduled",
            "input_sizes": [[4, 4]],
            "frames": [{"name": "f", "filename": "a.py", "line": 3}],
        }
    ],
}
_WRONG = [[1], {"a": 1}, 10**30, "²", True, None, 1.5e308, [[[]]]]


def _mutated(document: object, chosen: random.Random) -> object:
    """`document` with one to three values, anywhere in it, replaced by a value of another type."""
    copy = json.loads(json.dumps(document))
    for _ in range(chosen.randint(1, 3)):
        node, key = copy, None
        while isinstance(node, dict | list) and node and chosen.random() < 0.8:
            key = chosen.choice(list(node)) if isinstance(node, dict) else chosen.randrange(len(node))
            if not isinstance(node[key], dict | list) or chosen.random() < 0.3:
                node[key] = chosen.choice(_WRONG)
                break
            node = node[key]
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_dumps_with_fields_of_the_wrong_type(tmp_path: Path, seed: int) -> None:
    chosen = random.Random(seed)
    fr = tmp_path / "fr-rank-0"
    fr.write_bytes(pickle.dumps(_mutated(_FR, chosen), protocol=2))
    empty = FIXTURES / "logs" / "other" / "empty.log"
    assert_handled(run_cli(["analyze", "--post-mortem", str(empty), str(fr)], tmp_path), (0, 3, 4, 5, 6))
    stacks = tmp_path / "stacks.json"
    pyspy = [{"pid": 11, "thread_id": 1, "thread_name": "MainThread", "frames": [{"name": "f", "filename": "a.py"}]}]
    stacks.write_text(json.dumps(_mutated(pyspy, chosen)))
    ran = run_cli(["stacks", "--from", str(stacks)], tmp_path)
    assert_handled(ran, (0, 3, 4))
    if ran.code == 3 and "JSON" in ran.stderr:  # a field of the wrong type: named
        assert re.search(r" is (null|a \w+), expected ", ran.stderr), ran.stderr
