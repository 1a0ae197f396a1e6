"""The accuracy scoring (bench/accuracy.py): its rules on hand-made cases, and the floors of
fixtures/realworld/floors.toml held by every batch of the real-world corpus."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.accuracy import (
    FLOORS,
    NO_REPORT,
    Answer,
    Case,
    Score,
    accuracy,
    batch_name,
    confusion,
    default_case_files,
    line_as_filed,
    load_batch,
    logs_folder,
    main,
    no_report,
    parse_cases,
    parse_floors,
    rank_numbers,
    score_case,
    score_files,
    shortfalls,
    tally,
    verdict_class,
)
from tests import test_realworld
from tests.conftest import REALWORLD

CRASHED = Case(
    id="900",
    batch="dev",
    log=Path("logs/900_vllm-oom.log"),
    system="vllm",
    last_phase="weight_load",
    verdict="crashed",
    culprit_ranks=(),
    root_cause_line="torch.OutOfMemoryError: CUDA out of memory",
)
RIGHT = Answer(
    furthest_phase="weight_load",
    verdict="crashed",
    culprit_ranks=(),
    root_cause="(VllmWorker rank=0) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    root_cause_line_number=12,
    reason="a traceback at line 12",
)


def _scores(*pairs: tuple[Case, Answer]) -> list[Score]:
    return [score_case(case, answer) for case, answer in pairs]


# --- one case --------------------------------------------------------------------------------------


def test_an_answer_that_matches_every_label_is_right_on_all_four() -> None:
    # GIVEN a crash at weight_load whose root-cause line the answer's line contains
    # WHEN it is scored
    score = score_case(CRASHED, RIGHT)
    # THEN every measure is right and nothing is missed
    assert score.measured() == {"phase": True, "verdict": True, "cause": True, "culprits": True}
    assert score.missed() == []


def test_stalled_and_progressing_are_one_verdict_class() -> None:
    # GIVEN a case labelled stalled
    stalled = replace(CRASHED, verdict="stalled", root_cause_line="")
    # WHEN the answer says progressing, then crashed
    # THEN progressing is right (both are "open"), crashed is not
    assert score_case(stalled, replace(RIGHT, verdict="progressing")).verdict is True
    assert score_case(stalled, replace(RIGHT, verdict="crashed")).verdict is False
    assert [verdict_class(v) for v in ("stalled", "progressing", "ready", "timeout")] == [
        "open",
        "open",
        "ready",
        "timeout",
    ]


def test_another_phase_is_a_phase_miss_only() -> None:
    # GIVEN the right verdict and cause but a phase one step short
    score = score_case(CRASHED, replace(RIGHT, furthest_phase="dist_init"))
    # THEN only the phase is missed
    assert score.missed() == ["phase"]


def test_the_cause_is_scored_only_where_the_case_names_a_line() -> None:
    # GIVEN a ready case (no root-cause line) and an answer with a root cause of its own
    ready = replace(CRASHED, last_phase="ready", verdict="ready", root_cause_line="")
    # WHEN it is scored
    score = score_case(ready, replace(RIGHT, furthest_phase="ready", verdict="ready"))
    # THEN the cause is not scored (None), neither right nor wrong
    assert score.cause is None
    assert score.missed() == []


def test_the_cause_is_wrong_without_a_root_cause_or_with_another_line() -> None:
    # GIVEN a case naming its root-cause line
    # WHEN the answer has no root cause, or one that does not contain the labelled text
    missing = score_case(CRASHED, replace(RIGHT, root_cause=None, root_cause_line_number=None))
    other = score_case(CRASHED, replace(RIGHT, root_cause="NCCL error: unhandled system error"))
    # THEN the cause is wrong in both
    assert missing.cause is False
    assert other.cause is False


def test_the_cause_is_right_where_the_file_s_line_at_the_reported_number_holds_the_label(tmp_path: Path) -> None:
    # GIVEN a docker log whose labelled line is quoted as the file holds it, stamp and all, and a report quoting
    # that line (line 2) without its envelope
    log = tmp_path / "901_tgi.log"
    log.write_text(
        "2024-11-06T04:42:04.101Z  INFO text_generation_launcher: Starting shard rank=0\n"
        "2024-11-06T04:42:14.833Z  INFO text_generation_launcher: Waiting for shard to be ready... rank=0\n"
    )
    stamped = replace(CRASHED, log=log, root_cause_line="2024-11-06T04:42:14.833Z  INFO text_generation_launcher: Wait")
    quoted = "INFO text_generation_launcher: Waiting for shard to be ready... rank=0"
    # WHEN the file's line 2, 1 or 3 is taken as filed
    filed = [line_as_filed(log, number) for number in (2, 1, 3)]
    # THEN line 2 is the labelled line as filed, line 1 another, line 3 the empty rest after the last newline
    assert (
        filed[0] == "2024-11-06T04:42:14.833Z  INFO text_generation_launcher: Waiting for shard to be ready... rank=0"
    )
    assert filed[2] == ""
    right = replace(RIGHT, root_cause=quoted, root_cause_line_number=2, root_cause_as_filed=filed[0])
    wrong = replace(RIGHT, root_cause=quoted, root_cause_line_number=1, root_cause_as_filed=filed[1])
    assert score_case(stamped, right).cause is True
    assert score_case(stamped, wrong).cause is False
    assert line_as_filed(log, 4) is None and line_as_filed(log, None) is None


def test_culprits_are_compared_as_rank_numbers() -> None:
    # GIVEN a case whose culprit is rank 0, and one whose culprits are 1 and 3
    rank0 = replace(CRASHED, culprit_ranks=(0,))
    ranks13 = replace(CRASHED, culprit_ranks=(1, 3))
    # WHEN the answers name them as the report does (TP0; DP0 TP3 and rank 1, any order)
    # THEN they are right; an extra culprit, or none where one is labelled, is wrong
    assert score_case(rank0, replace(RIGHT, culprit_ranks=("TP0",))).culprits is True
    assert score_case(ranks13, replace(RIGHT, culprit_ranks=("DP0 TP3", "rank 1"))).culprits is True
    assert score_case(ranks13, replace(RIGHT, culprit_ranks=("TP1", "TP3", "TP5"))).culprits is False
    assert score_case(rank0, RIGHT).culprits is False
    assert rank_numbers(["main", "TP2"]) == [-1, 2]


def test_the_rules_are_those_of_test_realworld() -> None:
    # GIVEN every verdict and ranks with and without numbers
    verdicts = ["ready", "finished", "progressing", "stalled", "crashed", "aborted", "timeout", "unknown"]
    ranks = ["TP0", "DP0 TP3", "rank 5", "PP1 TP2", "main"]
    # THEN the scoring and tests/test_realworld.py class and number them alike
    assert [verdict_class(v) for v in verdicts] == [test_realworld.verdict_class(v) for v in verdicts]
    assert rank_numbers(ranks) == test_realworld.rank_numbers(ranks) == [-1, 0, 2, 3, 5]


def test_no_report_is_wrong_on_every_measure() -> None:
    # GIVEN logphase gave no report for a case (it failed on the file)
    score = score_case(CRASHED, no_report("exit 3, no JSON report: cannot read"))
    # THEN phase, verdict and cause are missed; no culprit named is right where none is labelled
    assert score.missed() == ["phase", "verdict", "cause"]
    assert score.answer.verdict == NO_REPORT


# --- many cases -------------------------------------------------------------------------------------


def test_the_tally_counts_the_cause_only_over_cases_naming_a_line() -> None:
    # GIVEN three cases: all right; phase and cause wrong; a ready one (no cause line) with culprits wrong
    ready = replace(CRASHED, id="901", last_phase="ready", verdict="ready", root_cause_line="")
    scores = _scores(
        (CRASHED, RIGHT),
        (CRASHED, replace(RIGHT, furthest_phase="kv_cache", root_cause="something else")),
        (ready, replace(RIGHT, furthest_phase="ready", verdict="ready", culprit_ranks=("TP4",))),
    )
    # WHEN they are tallied
    figures = tally(scores)
    # THEN each measure counts its right answers over the cases scored on it
    assert figures.cases == 3
    assert figures.right == {"phase": 2, "verdict": 3, "cause": 1, "culprits": 2}
    assert figures.scored == {"phase": 3, "verdict": 3, "cause": 2, "culprits": 3}
    assert figures.fraction("cause") == 0.5
    assert tally(_scores((ready, RIGHT))).fraction("cause") is None


def test_accuracy_groups_by_batch_system_and_labelled_verdict() -> None:
    # GIVEN a dev crash (vllm) answered right, a batch-2 stall (sglang) answered progressing, and a
    # batch-2 progressing case (sglang) answered crashed
    stall = replace(CRASHED, id="201", batch="b2", system="sglang", verdict="stalled", root_cause_line="")
    moving = replace(stall, id="202", verdict="progressing")
    scores = _scores(
        (CRASHED, RIGHT),
        (stall, replace(RIGHT, verdict="progressing", root_cause=None)),
        (moving, RIGHT),
    )
    # WHEN the accuracy is computed
    result = accuracy(scores)
    # THEN batches keep their order, systems are sorted, labelled verdicts follow the design's order
    assert result.batches == ["dev", "b2"]
    assert {name: t.cases for name, t in result.per_batch.items()} == {"dev": 1, "b2": 2}
    assert list(result.per_system) == ["sglang", "vllm"]
    assert list(result.per_verdict) == ["progressing", "stalled", "crashed"]
    assert result.per_batch["b2"].right["verdict"] == 1
    assert result.per_verdict["stalled"].right["verdict"] == 1
    # AND the one case wrong on its verdict is the one miss
    assert [miss.case.id for miss in result.misses] == ["202"]
    assert result.overall.right == {"phase": 3, "verdict": 2, "cause": 1, "culprits": 3}


def test_the_confusion_matrix_counts_wanted_against_got_classes() -> None:
    # GIVEN two crashes answered crashed and open, and a stall answered progressing
    stall = replace(CRASHED, verdict="stalled")
    scores = _scores(
        (CRASHED, RIGHT), (CRASHED, replace(RIGHT, verdict="stalled")), (stall, replace(RIGHT, verdict="progressing"))
    )
    # WHEN the confusion matrix is built
    # THEN rows are wanted classes, columns got classes, in the design's order, zeros included
    assert confusion(scores) == {"open": {"open": 1, "crashed": 0}, "crashed": {"open": 1, "crashed": 1}}


# --- case files and floors ---------------------------------------------------------------------------


def test_a_case_file_is_a_batch_named_by_its_stem() -> None:
    # GIVEN the development set and a collected batch
    dev, batch = REALWORLD / "cases.toml", REALWORLD / "batches" / "vllm-2025.toml"
    # THEN the development set is "dev", a batch its stem; both name their logs from fixtures/realworld
    assert (batch_name(dev), batch_name(batch)) == ("dev", "vllm-2025")
    assert logs_folder(dev) == logs_folder(batch) == REALWORLD


def test_parse_cases_reads_the_scored_labels_and_ignores_the_optional_fields() -> None:
    # GIVEN a batch's case with the optional fields year, layout and thread_says
    text = """
[[case]]
id = "207"
file = "logs/207_vllm-v1-ray-dp-hang.log"
url = "https://github.com/example/example/issues/1"
system = "vllm"
year = 2025
layout = "docker-t"
last_phase = "weight_load"
verdict = "stalled"
culprit_ranks = [3, 1]
root_cause_line = "Loading safetensors checkpoint shards:  50%"
thread_says = "it hung"
"""
    # WHEN it is parsed
    [case] = parse_cases(text, batch="b2", folder=Path("/corpus"))
    # THEN the labels are kept, the culprits sorted, the log named from the folder
    assert case == Case(
        id="207",
        batch="b2",
        log=Path("/corpus/logs/207_vllm-v1-ray-dp-hang.log"),
        system="vllm",
        last_phase="weight_load",
        verdict="stalled",
        culprit_ranks=(1, 3),
        root_cause_line="Loading safetensors checkpoint shards:  50%",
    )


def test_a_batch_falls_short_only_on_measures_below_their_floor() -> None:
    # GIVEN a batch right on 9/10 phases, 7/10 verdicts, no cause lines, 10/10 culprits
    scores = _scores(*[(replace(CRASHED, root_cause_line=""), RIGHT)] * 7)
    scores += _scores((replace(CRASHED, root_cause_line=""), replace(RIGHT, verdict="ready")))
    scores += _scores((replace(CRASHED, root_cause_line=""), replace(RIGHT, verdict="timeout")))
    scores += _scores(
        (replace(CRASHED, root_cause_line=""), replace(RIGHT, verdict="aborted", furthest_phase="launch"))
    )
    floor = {"phase": 0.9, "verdict": 0.8, "cause": 0.9, "culprits": 1.0}
    # WHEN it is held to its floor
    # THEN only the verdict falls short (a floor met exactly holds; a measure nothing is scored on holds)
    assert shortfalls(tally(scores), floor) == ["verdict 7/10 = 0.700 < floor 0.800"]


def test_parse_floors_reads_one_table_per_batch() -> None:
    # GIVEN floors for two batches, one of them partial
    floors = parse_floors("[dev]\nphase = 0.967\nverdict = 1\n\n[b2]\ncause = 0.5\n")
    # THEN each batch has its fractions
    assert floors == {"dev": {"phase": 0.967, "verdict": 1.0}, "b2": {"cause": 0.5}}


def test_main_prints_one_json_object_for_the_given_case_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a case file of one dev-set log (its labels copied from fixtures/realworld/cases.toml)
    [labelled] = [case for case in load_batch(REALWORLD / "cases.toml") if case.id == "001"]
    (tmp_path / "one.toml").write_text(
        f'[[case]]\nid = "001"\nfile = "{labelled.log}"\nsystem = "sglang"\nlast_phase = "ready"\n'
        'verdict = "ready"\nculprit_ranks = []\nroot_cause_line = ""\n'
    )
    # WHEN it is scored with --format json
    assert main([str(tmp_path / "one.toml"), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # THEN it is one batch named by the file, one case, no cause scored
    assert result["batches"] == ["one"]
    assert result["overall"]["cases"] == 1
    assert result["overall"]["cause"] == {"right": 0, "scored": 0, "fraction": None}
    assert set(result) == {"batches", "overall", "per_batch", "per_system", "per_verdict", "confusion", "misses"}


# --- the regression guard: every batch of the corpus against its floor -------------------------------

CASE_FILES = default_case_files()


@pytest.fixture(scope="module")
def corpus_scores() -> list[Score]:
    return score_files(CASE_FILES)


def test_every_floor_names_a_batch() -> None:
    # GIVEN floors.toml WHEN its batches are listed THEN each is a case file of the corpus (not a typo)
    assert set(parse_floors(FLOORS.read_text())) <= {batch_name(path) for path in CASE_FILES}


@pytest.mark.slow  # analyses every corpus log: the full suite guards the floors
@pytest.mark.parametrize("batch", [batch_name(path) for path in CASE_FILES])
def test_the_batch_scores_at_least_its_floor(batch: str, corpus_scores: list[Score]) -> None:
    # GIVEN a batch of the corpus, scored as `make accuracy` scores it
    figures = accuracy(corpus_scores).per_batch[batch]
    floor = parse_floors(FLOORS.read_text()).get(batch)
    if floor is None:
        # a batch just collected: scored (its first look goes in ACCURACY.md), guarded once it has a floor
        pytest.skip(f"batch {batch!r} has no floor in fixtures/realworld/floors.toml: scored, not guarded")
    # THEN no measure falls below the batch's floor
    assert shortfalls(figures, floor) == []
