"""Pattern packs: the shipped ones load and pass their examples; broken ones fail loudly."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.errors import PackError
from logphase.logs.fast.plan import _build_plan
from logphase.packs import builtin_pack_paths, derive_literal, load_packs
from tests.conftest import run_cli

GOOD_RULE = """
[[rule]]
id = "user.ready"
phase = "ready"
kind = "ready"
regex = '^All systems go$'
examples = ["All systems go"]
counter_examples = ["All systems stop"]
"""


def write_pack(directory: Path, body: str, name: str = "user") -> Path:
    path = directory / f"{name}.toml"
    path.write_text(f'[pack]\nname = "{name}"\nschema = 1\nsystems = []\n{body}')
    return path


def test_every_builtin_pack_loads_with_its_examples() -> None:
    # GIVEN the shipped packs WHEN loaded (which runs every example) THEN each has rules
    packs = load_packs(check_builtin=True)
    names = {pack.name for pack in packs.packs}
    assert {"sglang", "vllm", "nccl", "torch", "python", "cuda", "stacks"} <= names
    assert all(pack.rules or pack.signatures for pack in packs.packs)
    assert len(builtin_pack_paths()) == len(packs.packs)


@pytest.mark.slow  # it checks every shipped regex for backtracking too (~3 s)
def test_patterns_test_command_passes_on_the_shipped_packs() -> None:
    result = run_cli("patterns", "test")
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("0 failed")


def test_a_user_pack_adds_rules(tmp_path: Path) -> None:
    # GIVEN a user pack with one ready rule and a log with only that line
    pack = write_pack(tmp_path, GOOD_RULE)
    log = tmp_path / "custom.log"
    log.write_text("All systems go\n")
    # WHEN analysed with --patterns THEN the rule decides the verdict
    result = run_cli("analyze", "--post-mortem", "--patterns", str(pack), str(log))
    assert result.exit_code == 0, result.output
    assert result.output.startswith("logphase: READY — All systems go (line 1)")  # never "READY at ready"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (GOOD_RULE.replace("^All systems go$", "^All (systems go$"), "bad regex"),
        (
            GOOD_RULE.replace('examples = ["All systems go"]', 'examples = ["All systems gone wrong"]'),
            "example does not match",
        ),
        (
            GOOD_RULE.replace('counter_examples = ["All systems stop"]', 'counter_examples = ["All systems go"]'),
            "counter-example matches",
        ),
        (GOOD_RULE.replace('phase = "ready"', 'phase = "booting"'), "unknown phase"),
        ("[[rule]\nid=", "not valid TOML"),
    ],
)
def test_a_broken_user_pack_is_a_one_line_error_with_exit_3(tmp_path: Path, body: str, message: str) -> None:
    # GIVEN a pack with one defect
    pack = write_pack(tmp_path, body)
    log = tmp_path / "x.log"
    log.write_text("x\n")
    # WHEN any command loads it THEN it names the file and the defect, gives a hint, exits 3
    result = run_cli("analyze", "--patterns", str(pack), str(log))
    assert result.exit_code == 3
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith(f"logphase: error: {pack}") and message in first
    assert hint.startswith("  hint: ")


def test_patterns_test_reports_each_failing_example(tmp_path: Path) -> None:
    pack = write_pack(tmp_path, GOOD_RULE.replace('examples = ["All systems go"]', 'examples = ["nope"]'))
    result = run_cli("patterns", "test", str(pack))
    assert result.exit_code == 3
    assert f"FAIL {pack}: rule user.ready: example does not match: 'nope'" in result.output
    assert result.output.strip().endswith("1 failed")


def test_patterns_test_summarises_two_steady_marks_sharing_their_literal(tmp_path: Path) -> None:
    # GIVEN a pack with two steady marks (a phase, kind mark, no rank capture) needing the same literal,
    # whose regexes need no other text
    marks = "".join(
        f"""
[[rule]]
id = "user.{name}"
phase = "weight_load"
kind = "mark"
regex = '{word} \\d+ waiting'
literal = " waiting"
examples = ["{word} 3 waiting"]
"""
        for name, word in (("left", "Shard"), ("right", "Rank"))
    )
    pack = write_pack(tmp_path, marks + GOOD_RULE)
    # WHEN it is tested, and its scan plan made
    result = run_cli("patterns", "test", str(pack))
    plan = _build_plan(load_packs(extra=[pack], builtin=False), ())
    # THEN neither is named with a cost: the literal is a steady factor of both, in the packs' order (a line
    # holding it is the kind of the rule whose needs it meets, each rule's run a kind of its own)
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("COST ")] == []
    assert {text: [rule.id for rule in rules] for text, rules in plan.steady.items()} == {
        b" waiting": ["user.left", "user.right"]
    }
    assert result.output.strip().endswith("0 failed")


def test_patterns_test_warns_of_a_caseless_steady_mark(tmp_path: Path) -> None:
    # GIVEN a pack with a steady mark whose regex ignores case (its literal is no byte string to find)
    mark = """
[[rule]]
id = "user.shard"
phase = "weight_load"
kind = "mark"
regex = 'shard \\d+ waiting'
flags = "i"
examples = ["Shard 3 waiting"]
"""
    pack = write_pack(tmp_path, mark + GOOD_RULE)
    # WHEN it is tested
    result = run_cli("patterns", "test", str(pack))
    # THEN the mark is named with the cost, the ready rule is not, and the test passes: a cost is no failure
    assert result.exit_code == 0, result.output
    costs = [line for line in result.output.splitlines() if line.startswith("COST ")]
    assert costs == [
        f"COST {pack}: rule user.shard: a steady mark whose literal is caseless: its runs are not "
        "summarised; each of its lines goes to the matcher"
    ]
    assert result.output.strip().endswith("0 failed")


def test_patterns_test_warns_of_a_module_entry_whose_lines_are_each_read(tmp_path: Path) -> None:
    # GIVEN a pack with a logger's prefix naming its module (vLLM's form) and two `[[module]]` entries after it:
    # one placing a file's lines by a word of the message, one taking any message of another file
    modules = "".join(
        f"""
[[module]]
id = "user.module.{name}"
prefixes = ["vllm.prefix.log"]
file = "{name}.py"
phase = "cuda_graph"
{words}
source = "{name}.py: graph capture"
"""
        for name, words in (("runner", 'words = ["capturing"]'), ("capture", ""))
    )
    prefix = """
[[prefix]]
id = "user.prefix.log"
regex = '^(?P<level>[A-Z]+) \\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d \\[(?P<file>[\\w.]+):\\d+\\] '
examples = ["INFO 03-02 09:00:00 [runner.py:12] capturing"]
"""
    pack = write_pack(tmp_path, prefix + modules.replace("vllm.prefix.log", "user.prefix.log") + GOOD_RULE)
    # WHEN it is tested
    result = run_cli("patterns", "test", str(pack))
    # THEN the worded entry is named with its cost (each of its lines is read), the other is not (its runs
    # are summarised), and the test passes: a cost is no failure
    assert result.exit_code == 0, result.output
    costs = [line for line in result.output.splitlines() if line.startswith("COST ")]
    assert costs == [
        f"COST {pack}: module user.module.runner: it places a message by its words: each line of its file "
        "holding one is read by the matcher"
    ]


def test_steady_marks_sharing_a_literal_are_told_apart_by_their_regexes_own_text(tmp_path: Path) -> None:
    # GIVEN a pack with two steady marks whose pack literal is the same (` waiting`) but whose regexes
    # each need a text of their own (`Shard left waiting`, `Shard right waiting`)
    marks = "".join(
        f"""
[[rule]]
id = "user.{name}"
phase = "weight_load"
kind = "mark"
regex = 'Shard {name} waiting'
literal = " waiting"
examples = ["Shard {name} waiting"]
"""
        for name in ("left", "right")
    )
    pack = write_pack(tmp_path, marks + GOOD_RULE)
    # WHEN it is tested, and its scan plan made
    result = run_cli("patterns", "test", str(pack))
    plan = _build_plan(load_packs(extra=[pack], builtin=False), ())
    # THEN neither is named with a cost: each rule's runs are found by its own text
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("COST ")] == []
    assert {text: [rule.id for rule in rules] for text, rules in plan.steady.items()} == {
        b"Shard left waiting": ["user.left"],
        b"Shard right waiting": ["user.right"],
    }


def test_explain_shows_the_winning_rule_and_captures() -> None:
    result = run_cli("patterns", "explain", "[2025-03-08 12:29:13 TP3] Load weight begin. avail mem=21.63 GB")
    assert result.exit_code == 0
    assert "rank:    TP3" in result.output
    assert "message: Load weight begin. avail mem=21.63 GB" in result.output
    assert "* sglang.weight_load" in result.output


def test_explain_an_unknown_line_exits_6() -> None:
    result = run_cli("patterns", "explain", "nothing to see here")
    assert result.exit_code == 6
    assert "no rule matches" in result.output


@pytest.mark.parametrize(
    ("regex", "literal"),
    [
        (r"^Load weight begin\. avail mem=(?P<gb>[\d.]+) GB", "Load weight begin. avail mem="),
        (r"^(?:Capture|Init) cuda graph", " cuda graph"),
        (r"^a|b", None),
        (r"(?P<x>Init COMPLETE)", "Init COMPLETE"),
        # a group named twice (the regex module allows it; TRT-LLM's prefix names its rank in two places)
        (r"^(?:\[(?P<rank>\d+)\] )?\[TRT-LLM\](?: \[RANK (?P<rank>\d+)\])? ", "[TRT-LLM]"),
        # an escaped parenthesis before `?P<` opens no group: that text stays as it is
        (r"^\(?P<y>(?P<r>a)(?P<r>b)", "P<y>ab"),
    ],
)
def test_derived_literals_are_required_by_the_regex(regex: str, literal: str | None) -> None:
    assert derive_literal(regex) == literal


def test_duplicate_ids_across_packs_are_refused(tmp_path: Path) -> None:
    first = write_pack(tmp_path, GOOD_RULE, name="one")
    second = write_pack(tmp_path, GOOD_RULE, name="two")
    with pytest.raises(PackError, match="defined twice"):
        load_packs([first, second], builtin=False)
