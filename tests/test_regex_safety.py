"""The static check for catastrophic backtracking (packs/regex_safety.py), its use as a pack loads,
and the shapes of the regexes it keeps out: nested, adjacent and a searched regex's opening repeats."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.errors import PackError
from logphase.logs.templates import _VARIABLE, template_of
from logphase.packs import check_pack_regexes, load_packs
from logphase.packs.regex_safety import MAX_REGEX_CHARS, PROBE_CHARS, hazards, nesting
from logphase.stacks.model import MAX_FRAMES, Frame, ThreadStack

NCCL_BEFORE = r"^NCCL version (?P<v>\d+\.\d+\.\d+)(?P<s>[^+\s]*)\+cuda(?P<c>\d+\.\d+)"


@pytest.mark.parametrize(
    ("pattern", "kind", "pump"),
    [
        (r"^(a|a)*$", "nested", "a"),
        (r"^(a+)+$", "nested", "a"),
        (r"^(?:\w+\s?)+$", "nested", "0"),
        (NCCL_BEFORE, "adjacent", "0"),
        (r"^.*foo.*bar", "adjacent", "foo"),
        (r"^(?:\d+)?[^+\s]*\+", "adjacent", "0"),
        (r"\w+://\S+", "leading", "0"),
        (r"\d+ ranks", "leading", "0"),
    ],
)
def test_a_part_that_matches_a_run_two_ways_is_a_hazard(pattern: str, kind: str, pump: str) -> None:
    # GIVEN a regex with repeats that can split a run of one character more than one way
    # WHEN checked THEN the hazard's kind and the text repeated in its adversarial line are named
    found = hazards(pattern)
    assert (found[0].kind, found[0].pump) == (kind, pump)
    assert len(found[0].line) <= PROBE_CHARS


@pytest.mark.parametrize(
    "pattern",
    [
        r"^NCCL version (?P<v>\d+\.\d+\.\d++)(?P<s>[^+\s]*)\+cuda(?P<c>\d+\.\d+)",  # possessive
        r"^NCCL version (?P<v>\d+\.\d+\.\d+)(?P<s>[^+\s\d]*)\+cuda",  # disjoint classes
        r"\b\w+://\S+",  # a word boundary before the opening repeat
        r"(?<!\d)\d+ ranks",  # a lookbehind
        r"^Loaded (\d+) weights in (\d+\.\d+)s",
        r"(?:/[\w.@+-]+)+/?",  # the slash separates the rounds
        r"^(?:.*/)?scheduler\.py\)$",  # one repeat, anchored
        r"\d+",  # nothing after the repeat can fail
        r"^(a+)+",
        r"[0-9]{1,3}[0-9]{1,3}x",  # bounded repeats: bounded work per start
    ],
)
def test_repeats_that_split_a_run_one_way_are_not(pattern: str) -> None:
    assert hazards(pattern) == []


def test_matching_from_the_start_is_no_leading_hazard() -> None:
    assert [h.kind for h in hazards(r"\w+://", searched=False)] == []


def test_regex_module_syntax_is_not_read() -> None:
    assert hazards(r"(\p{L}+)+$") == []


def test_nesting_skips_escapes_and_classes() -> None:
    assert (nesting(r"a(b(c)[(]\()"), nesting("(" * 70 + ")" * 70), nesting("x")) == (2, 70, 0)


def test_the_template_miner_masks_in_linear_time_shapes() -> None:
    # GIVEN the template miner's masking regex WHEN checked THEN no hazard; its masks are unchanged
    assert hazards(_VARIABLE.pattern) == []
    assert template_of("GET http://x.y/z 200 in 3.5ms id=deadbeef12 at /usr/lib/x.so 0x1f") == (
        "GET <*> <*> in <*> id=<*> at <*> <*>"
    )
    # AND a line of one long word (the '_' × 60,000) is its own template, cut at 200 characters
    assert template_of("_" * 60_000) == "_" * 200


@pytest.mark.slow  # every shipped regex: ~6 s
def test_every_shipped_regex_passes_the_check() -> None:
    assert check_pack_regexes(load_packs(check_examples=False)) == []


def _pack(folder: Path, regex: str, example: str = "x") -> Path:
    path = folder / "mine.toml"
    path.write_text(
        '[pack]\nname = "mine"\nschema = 1\nsystems = []\n\n[[rule]]\nid = "mine.r"\nphase = "dist_init"\n'
        f"kind = \"begin\"\nregex = '''{regex}'''\nexamples = [\"{example}\"]\n"
    )
    return path


def test_a_user_regex_that_backtracks_is_refused_as_its_pack_loads(tmp_path: Path) -> None:
    # GIVEN a user pack with the NCCL banner regex as it was WHEN loaded THEN refused, with the rewrite
    pack = _pack(tmp_path, NCCL_BEFORE.replace("NCCL", "MYNCCL"), "MYNCCL version 2.1.3+cuda12.4")
    with pytest.raises(PackError) as raised:
        load_packs([pack], builtin=False)
    assert str(raised.value).startswith(f"{pack}: [[rule]] mine.r: the regex backtracks without bound: a line of")
    assert raised.value.hint.startswith("adjacent repeats: two repeats in a row both take the same characters")


def test_a_suspect_the_regex_module_runs_fast_loads_and_patterns_test_lists_it(tmp_path: Path) -> None:
    # GIVEN `\w+://x` (quadratic in the stdlib's engine, fast in the `regex` module a user pack runs on)
    pack = _pack(tmp_path, r"\w+://x", "a://x")
    # WHEN loaded THEN it loads; the strict check lists it with its rewrite
    packs = load_packs([pack], builtin=False)
    (failure,) = check_pack_regexes(packs)
    assert failure.startswith(f"{pack}: mine.r: the regex can backtrack without bound: leading repeats over '0'")


@pytest.mark.slow  # a megabyte of TOML parsed: ~2 s on a busy machine
def test_a_regex_of_a_megabyte_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "x" * (1 << 20), "xxxx")
    with pytest.raises(PackError, match=f"1,048,576 characters long \\(at most {MAX_REGEX_CHARS:,}\\)"):
        load_packs([pack], builtin=False)


def test_a_regex_nested_past_the_bound_is_refused(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "(" * 65 + "x" + ")" * 65)
    with pytest.raises(PackError, match="nests its groups over 64 deep"):
        load_packs([pack], builtin=False)


def test_deeply_nested_toml_is_a_pack_error(tmp_path: Path) -> None:
    pack = tmp_path / "deep.toml"
    pack.write_text('[pack]\nname = "deep"\nx = ' + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(PackError, match="nest too deeply to read"):
        load_packs([pack], builtin=False)


def test_a_symlink_loop_in_a_pack_folder_is_a_pack_error(tmp_path: Path) -> None:
    (tmp_path / "self.toml").symlink_to("self.toml")
    # WHEN loaded THEN one error naming the link (read directly, or found missing as a folder's is expanded)
    with pytest.raises(PackError, match=r"(symbolic links|is a symbolic link that leads nowhere)"):
        load_packs([tmp_path], builtin=False)


def test_a_thread_keeps_its_innermost_frames() -> None:
    # GIVEN a thread of 300 frames, innermost first WHEN built THEN the innermost MAX_FRAMES kept, the rest counted
    frames = tuple(Frame(f"f{i}", "m.py", i + 1) for i in range(300))
    thread = ThreadStack("1", "MainThread", frames)
    assert (len(thread.frames), thread.frames[0].function, thread.cut) == (MAX_FRAMES, "f0", 300 - MAX_FRAMES)
    # AND a copy keeps the count
    assert ThreadStack("1", "MainThread", thread.frames, cut=thread.cut).cut == 300 - MAX_FRAMES
