"""Paste-proof: every fixture and realworld log, through every wrapper people collect and paste logs in
(and pairs of them), gets the answer the plain log gets (issue 12 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paste.harness import (
    COMBINATIONS,
    FIXTURE_LOGS,
    REAL_LOGS,
    differences,
    judge_plain,
    judge_wrapped,
)

# Where invariance cannot hold, and why. The wrapping is seeded, so these are exact.
CANNOT_HOLD: dict[tuple[str, str], str] = {
    # a six-line excerpt whose one long line the paste cut: one line at the longest length cannot be told
    # from a log whose longest line ends there, so the cut is not joined and the CUDA error's text is the
    # cut piece (the verdict and the phases still hold)
    ("034_sglang-draft-extend-capture-no-kernel-image.log", "srun-label+hard-wrap"): "one cut line in 6",
}


def _check(log: Path, tmp_path: Path) -> None:
    # GIVEN a log's answer when read plain
    plain = judge_plain(log)
    mismatches = {}
    for names in COMBINATIONS:
        # WHEN the same log is read as the wrapper(s) wrote it
        found = differences(plain, judge_wrapped(log, names, tmp_path))
        if found and (log.name, "+".join(names)) not in CANNOT_HOLD:
            mismatches["+".join(names)] = found
    # THEN the verdict, the phase, the furthest phase and the root cause (text and rank) are the same
    assert mismatches == {}


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_fixture_log_wrapped_gets_the_plain_answer(log: Path, tmp_path: Path) -> None:
    _check(log, tmp_path)


@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda p: p.stem[:3])
def test_a_realworld_log_wrapped_gets_the_plain_answer(log: Path, tmp_path: Path) -> None:
    _check(log, tmp_path)


def test_the_suite_covers_every_wrapper_and_some_pairs() -> None:
    # GIVEN the wrappers of issue 12 item 3 WHEN the suite's combinations are listed THEN each is there
    singles = {names[0] for names in COMBINATIONS if len(names) == 1}
    assert singles >= {
        "docker-t",
        "docker-desktop",
        "cri",
        "journald-short",
        "journald-short-iso",
        "journald-short-precise",
        "kubectl-prefix",
        "compose",
        "stern",
        "srun-label",
        "torchrun-tee",
        "ray-actor",
        "ray-task",
        "loki-export",
        "cloudwatch-export",
        "markdown-quote",
        "hard-wrap",
        "crlf",
        "ansi",
    }
    assert len([names for names in COMBINATIONS if len(names) == 2]) >= 5
