"""A user's regex that backtracks without end: exit 3 at once, naming the rule, wherever it runs
(loading the pack's examples, analyze, patterns test / explain) — never a traceback, never a minute.

The load-time check (tests/test_regex_safety.py) refuses the regexes it can read; these use `\\p{Ll}`,
syntax only the `regex` module knows, to reach the per-line time bound that stands behind it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

EVIL = "a" * 40 + "!"
PACK = """[pack]
name = "evil"
schema = 1
systems = []

[[rule]]
id = "evil.backtrack"
phase = "weight_load"
kind = "begin"
regex = '^(a|a)*\\p{{Ll}}$'
examples = ["aaaa"]
counter_examples = [{counter}]
"""
MESSAGE = "[[rule]] evil.backtrack: the regex ran past 0.5 s on one line (catastrophic backtracking"


def _pack(tmp_path: Path, counter: str = '"B"') -> Path:
    path = tmp_path / "evil.toml"
    path.write_text(PACK.format(counter=counter))
    return path


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_analyze_stops_at_the_first_line_the_regex_cannot_finish(tmp_path: Path) -> None:
    # GIVEN a pack with a catastrophic regex, and a log of 200 lines that trigger it
    pack = _pack(tmp_path)
    log = tmp_path / "evil.log"
    log.write_text((EVIL + "\n") * 200)
    # WHEN analysed with the pack THEN exit 3, one line naming the file and the rule, and a hint
    result = run_cli("analyze", "--patterns", str(pack), str(log))
    assert result.exit_code == 3
    first, hint = result.stderr.splitlines()
    assert first.startswith(f"logphase: error: {pack}: {MESSAGE}")
    assert hint.startswith("  hint: rewrite it without repeats")


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_counter_example_that_cannot_finish_fails_the_pack_at_load(tmp_path: Path) -> None:
    pack = _pack(tmp_path, counter=f'"{EVIL}"')
    result = run_cli("patterns", "test", str(pack))
    assert result.exit_code == 3
    assert MESSAGE in result.stderr


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_explain_names_the_rule(tmp_path: Path) -> None:
    result = run_cli("patterns", "explain", "--patterns", str(_pack(tmp_path)), EVIL)
    assert result.exit_code == 3
    assert MESSAGE in result.stderr
