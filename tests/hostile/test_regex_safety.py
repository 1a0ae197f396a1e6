"""Hostile inputs for regexes, in a child process like tests/hostile/test_hostile_inputs.py: lines built
to make a shipped rule or the template miner backtrack, and packs whose regexes would; every command
ends with a defined exit code, no traceback, bounded memory and time."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from logphase.packs import load_packs
from tests.hostile.test_hostile_inputs import _check, _run

pytestmark = pytest.mark.slow  # each case runs the CLI in a child process on lines of 60 KB
# The wall time a case may take: the lines ran past 40 s each before their regexes were fixed.
MAX_SECONDS = 20
SEED = 29
FAILS = "!\t)+"  # characters that end a run where a regex's next item expects something else


def _lines(folder: Path, lines: list[str]) -> str:
    path = folder / "hostile.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _crafted(rng: random.Random, count: int) -> list[str]:
    """Lines of a shipped rule's required literal followed by a 60 KB run of one character and one that
    fails: the shape that made `nccl.dist_init.version` backtrack (seeded: the same lines each run)."""
    literals = sorted({rule.literal for rule in load_packs(check_examples=False).rules if rule.literal})
    lines = []
    for literal in rng.sample(literals, count):
        run = rng.choice("0a_ .:/-")
        lines.append(literal + run * 60_000 + rng.choice(FAILS))
    return lines


CASES = {
    "nccl-version-run": lambda f, rng: [
        "analyze",
        "--post-mortem",
        _lines(f, ["NCCL version 0.0." + "0" * 60_000 + "!"]),
    ],
    "template-word-run": lambda f, rng: ["analyze", "--post-mortem", _lines(f, ["_" * 60_000, "0" * 60_000 + "!"])],
    "rule-literal-runs": lambda f, rng: ["analyze", "--post-mortem", _lines(f, _crafted(rng, 40))],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_crafted_lines_end_in_bounded_time(tmp_path: Path, name: str) -> None:
    args = CASES[name](tmp_path, random.Random(SEED))
    code, _, stderr, seconds, rss = _run(args, tmp_path)
    _check(code, stderr, (0, 4, 5, 6), rss)
    assert seconds < MAX_SECONDS, f"{seconds:.1f} s"


def _pack(folder: Path, regex: str, example: str) -> str:
    path = folder / "hostile.toml"
    path.write_text(
        '[pack]\nname = "hostile"\nschema = 1\nsystems = []\n\n[[rule]]\nid = "hostile.r"\nphase = "dist_init"\n'
        f"kind = \"begin\"\nregex = '''{regex}'''\nexamples = [\"{example}\"]\n"
    )
    return str(path)


@pytest.mark.parametrize(
    ("regex", "example", "message"),
    [
        ("x" * (1 << 20), "x", "characters long"),
        (r"^(\w+\s?)+$", "ab cd", "the regex backtracks without bound"),
        (r"^V (\d+\.\d+)([^+\s]*)\+cuda", "V 1.2+cuda", "the regex backtracks without bound"),
        ("(" * 3_000 + "x" + ")" * 3_000, "x", "nests its groups"),
    ],
    ids=["literal-1MB", "nested", "adjacent", "nested-groups"],
)
@pytest.mark.parametrize("command", [["patterns", "test", "PACK"], ["analyze", "--patterns", "PACK", "LOG"]])
def test_a_pack_regex_that_would_hang_is_refused(
    tmp_path: Path, regex: str, example: str, message: str, command: list[str]
) -> None:
    pack = _pack(tmp_path, regex, example)
    log = _lines(tmp_path, ["NCCL version 2.21.5+cuda12.4"])
    code, _, stderr, seconds, rss = _run([pack if a == "PACK" else log if a == "LOG" else a for a in command], tmp_path)
    _check(code, stderr, (3,), rss)
    assert message in stderr
    assert seconds < MAX_SECONDS, f"{seconds:.1f} s"
