"""Loaded packs are cached on disk by the pack files' bytes and versions: stale entries are not found,
damaged ones never trusted, an unwritable cache costs only time, and the report never changes."""

from __future__ import annotations

import marshal
import pickle
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from logphase.cli import main
from logphase.disk_cache import DiskCache
from logphase.frames import TRIGGER
from logphase.logs.fast import plan
from logphase.packs import PackRegex, PackSet, load_packs, loading
from logphase.packs.cache import MAGIC, PackCache, PackFile
from logphase.scan.files import PLAIN_LINES
from tests.conftest import FIXTURES
from tests.equivalence.sampling import drawn

USER_RULE = """
[[rule]]
id = "user.ready"
phase = "ready"
kind = "ready"
regex = '^All systems (?P<state>go)$'
examples = ["All systems go"]
counter_examples = ["All systems stop"]
"""
LOGS = sorted(FIXTURES.rglob("*.log"))  # every fixture log, and the real-world ones (fixtures/realworld/logs)


def write_pack(directory: Path, body: str = USER_RULE) -> Path:
    path = directory / "user.toml"
    path.write_text(f'[pack]\nname = "user"\nschema = 1\nsystems = []\n{body}')
    return path


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every pack file parsed (a load from the cache parses none)."""
    seen: list[str] = []
    original = loading.parse_pack

    def recorded(data: object, path: str, **options: bool) -> object:
        seen.append(path)
        return original(data, path, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(loading, "parse_pack", recorded)
    return seen


def summary(packs: PackSet) -> list[tuple[str, str, str | None, str]]:
    """What the matcher works from: every rule in order, its literal and regex, and the rule index."""
    rules = [(rule.id, rule.pack, rule.literal, rule.pattern.text) for rule in packs.rules]
    return [*rules, ("index", repr(sorted(packs._rules_by_key.items())), None, repr(packs._always))]


def test_a_second_load_of_the_same_files_comes_from_the_cache(tmp_path: Path, parses: list[str]) -> None:
    # GIVEN an empty cache folder and a user pack beside the shipped ones
    user = write_pack(tmp_path)
    folder = tmp_path / "cache"
    # WHEN the packs are loaded twice with the cache, and once without
    first = load_packs([user], cache_folder=folder)
    parsed_first = len(parses)
    second = load_packs([user], cache_folder=folder)
    uncached = load_packs([user])
    # THEN the first load parsed every file and stored one entry; the second parsed none, and
    # gives the same rules, literals, regexes and index as a load without the cache
    assert parsed_first == len(first.packs) == len(second.packs)
    assert len(parses) == parsed_first + len(uncached.packs)
    assert len(list(folder.iterdir())) == 1
    assert summary(second) == summary(first) == summary(uncached)
    # AND the cached user rule still runs on the regex module with its timeout, and matches
    rule = next(rule for rule in second.rules if rule.id == "user.ready")
    assert rule.pattern.timeout == loading.MATCH_TIMEOUT_S
    assert rule.match("All systems go") == {"state": "go"}
    assert rule.match("All systems stop") is None


def test_an_edited_pack_is_loaded_afresh(tmp_path: Path, parses: list[str]) -> None:
    # GIVEN a user pack loaded once through the cache
    user = write_pack(tmp_path)
    folder = tmp_path / "cache"
    load_packs([user], cache_folder=folder)
    # WHEN the pack is edited (one more rule) and loaded again
    write_pack(tmp_path, USER_RULE + USER_RULE.replace("user.ready", "user.ready.again"))
    parses.clear()
    edited = load_packs([user], cache_folder=folder)
    # THEN the stale entry was not used: every file parsed again, the new rule is there, a second entry stored
    assert len(parses) == len(edited.packs)
    assert "user.ready.again" in {rule.id for rule in edited.rules}
    assert len(list(folder.iterdir())) == 2


def test_the_key_holds_every_file_byte_path_trust_and_option(tmp_path: Path) -> None:
    # GIVEN one pack file as read for a load
    cache = PackCache(tmp_path)
    file = PackFile(tmp_path / "a.toml", False, b"[pack]\n")
    key = cache.key([file], "examples=True")
    # THEN the same file and options give the same key; another byte, path, trust or option another
    assert cache.key([PackFile(tmp_path / "a.toml", False, b"[pack]\n")], "examples=True") == key
    assert cache.key([PackFile(file.path, False, b"[pack] \n")], "examples=True") != key
    assert cache.key([PackFile(tmp_path / "b.toml", False, file.data)], "examples=True") != key
    assert cache.key([PackFile(file.path, True, file.data)], "examples=True") != key
    assert cache.key([file], "examples=False") != key


def _damaged(data: bytes, damage: str, magic: bytes = MAGIC) -> bytes:
    return {
        "flipped byte": data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:],
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": bytes(range(256)) * 4,
        "another format version": magic.rstrip(b"0123456789\n") + b"0\n" + data[len(magic) :],
    }[damage]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty", "garbage", "another format version"])
def test_a_damaged_entry_is_never_loaded_and_is_rebuilt(tmp_path: Path, parses: list[str], damage: str) -> None:
    # GIVEN the shipped packs cached, then the entry damaged on disk
    folder = tmp_path / "cache"
    stored = load_packs(cache_folder=folder)
    (entry,) = folder.iterdir()
    data = entry.read_bytes()
    entry.write_bytes(_damaged(data, damage))
    parses.clear()
    # WHEN they are loaded again
    packs = load_packs(cache_folder=folder)
    # THEN the entry was not used: every file parsed afresh, the same packs, the entry stored whole again
    assert len(parses) == len(packs.packs)
    assert summary(packs) == summary(stored)
    assert entry.read_bytes() == data


class Planted:
    """Not part of a pack set: an entry naming it is refused before anything of it is built."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("planted code ran",))


@pytest.mark.parametrize("payload", ["a pickled dict", "a pickled call", "no pickle"])
def test_an_entry_whose_checksum_holds_but_is_no_pack_set_is_rebuilt(
    tmp_path: Path, parses: list[str], payload: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an entry under the right key with a good checksum over something else
    folder = tmp_path / "cache"
    stored = load_packs(cache_folder=folder)
    (entry,) = folder.iterdir()
    body = {
        "a pickled dict": pickle.dumps({"packs": ()}),
        "a pickled call": pickle.dumps(Planted()),
        "no pickle": b"\x00not a pickle",
    }[payload]
    PackCache(folder).entries.store(entry.name, body)
    parses.clear()
    # WHEN the packs are loaded
    packs = load_packs(cache_folder=folder)
    # THEN nothing in it ran, it was not used, and the packs were parsed afresh
    assert "planted" not in capsys.readouterr().out
    assert len(parses) == len(packs.packs)
    assert summary(packs) == summary(stored)


def test_an_unwritable_cache_folder_only_costs_the_load(tmp_path: Path, parses: list[str]) -> None:
    # GIVEN a cache folder that cannot be made (its parent is a file: a read-only home, as root can write anywhere)
    blocked = tmp_path / "file"
    blocked.write_text("")
    # WHEN the packs are loaded twice through it
    first = load_packs(cache_folder=blocked / "packs")
    second = load_packs(cache_folder=blocked / "packs")
    # THEN both loads parse every file, with no error, and give the same packs
    assert len(parses) == len(first.packs) + len(second.packs)
    assert summary(first) == summary(second)


def every_regex(packs: PackSet) -> list[PackRegex]:
    found: list[PackRegex] = []
    for pack in packs.packs:
        for items in (pack.prefixes, pack.rules, pack.signatures, pack.anchors, pack.server_args, pack.ignores):
            found += [item.pattern for item in items]
    return found


def test_shipped_regexes_are_compiled_on_first_use_and_every_one_compiles() -> None:
    # GIVEN the shipped packs loaded without a cache
    packs = load_packs()
    regexes = every_regex(packs)
    # THEN none was compiled by the load; each compiles on first use, with its flag
    assert len(regexes) > 300
    assert not [r.text for r in regexes if "compiled" in vars(r)]
    for pattern in regexes:
        assert pattern.compiled.pattern == pattern.text
        assert bool(pattern.compiled.flags & re.IGNORECASE) == pattern.ignore_case
    # AND a rule's group names, read from its parse, are those of its compiled regex
    assert all(r.groups is None or r.groups == set(r.compiled.groupindex) for r in regexes)


def test_shipped_regexes_read_back_from_the_cache_are_the_patterns_re_compiles(tmp_path: Path) -> None:
    # GIVEN the shipped packs stored in the cache, then read back (a second run)
    folder = tmp_path / "cache"
    load_packs(cache_folder=folder)
    regexes = every_regex(load_packs(cache_folder=folder))
    # THEN each came back with its compiled code, none compiled yet; where the stdlib compiles the
    # regex, the pattern built from the code is the one re.compile makes (text, flags, groups and
    # the engine's code: Pattern's equality), with `regex`-only syntax (a group named twice) left to regex
    assert not [r.text for r in regexes if "compiled" in vars(r) or "code" not in vars(r)]
    stdlib_only = []
    for pattern in regexes:
        flags = re.IGNORECASE if pattern.ignore_case else 0
        try:
            expected = re.compile(pattern.text, flags)
        except re.error:
            assert vars(pattern)["code"] is None
            continue
        stdlib_only.append(pattern)
        assert type(pattern.compiled) is re.Pattern
        assert pattern.compiled == expected
        assert pattern.compiled.groupindex == expected.groupindex
    assert len(stdlib_only) > 300


@pytest.mark.parametrize("damage", ["words", "group count", "group names", "no tuple"])
def test_a_code_the_engine_refuses_is_compiled_afresh(damage: str) -> None:
    # GIVEN a shipped regex whose kept code is damaged (a cache entry of another engine, say)
    pattern = PackRegex(r"^Load weight (?P<what>begin|end)\. avail mem=", ignore_case=False, timeout=None)
    pattern.keep_code()
    flags, words, groups, names, numbered = vars(pattern)["code"]
    vars(pattern)["code"] = {
        "words": (flags, b"\xff" * len(words), groups, names, numbered),
        "group count": (flags, words, groups + 7, names, numbered),
        "group names": (flags, words, groups, {"what": 9}, numbered),
        "no tuple": "code",
    }[damage]
    # WHEN it is used THEN it is compiled from its text, and matches as re does
    assert pattern.compiled == re.compile(pattern.text)
    assert pattern.match("Load weight end. avail mem=3 GB").group("what") == "end"


def test_a_user_packs_regexes_are_compiled_as_it_loads(tmp_path: Path) -> None:
    # GIVEN a user pack WHEN loaded THEN its regex is compiled already (a bad one is refused at load)
    packs = load_packs([write_pack(tmp_path)])
    (user,) = [rule.pattern for rule in packs.rules if rule.id == "user.ready"]
    assert "compiled" in vars(user)
    assert user.group_names == {"state"}


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[PackSet]:
    """The pack set of every scan plan built (one read back from the cache is not built)."""
    seen: list[PackSet] = []
    original = plan._build_plan

    def recorded(packs: PackSet, triggers: Sequence[re.Pattern[str]]) -> plan.Plan:
        seen.append(packs)
        return original(packs, triggers)

    monkeypatch.setattr(plan, "_build_plan", recorded)
    return seen


@pytest.fixture
def plan_folder(tmp_path: Path) -> Path:
    return tmp_path / "plans"


def plan_facts(built: plan.Plan) -> tuple[object, ...]:
    steady = {text: [rule.id for rule in rules] for text, rules in built.steady.items()}
    return (built.enabled, built.candidates, steady, built.triggers, built.requires, built.reason, built.checks)


def test_the_plan_of_cached_packs_is_read_back_the_same(
    tmp_path: Path, plan_folder: Path, builds: list[PackSet]
) -> None:
    # GIVEN the shipped packs loaded through the pack cache, twice (two runs)
    first, second = (load_packs(cache_folder=tmp_path / "packs") for _ in range(2))
    # WHEN each run asks for its scan plan
    stored = plan.plan_for(first, (TRIGGER,), plan.plan_cache(plan_folder))
    loaded = plan.plan_for(second, (TRIGGER,), plan.plan_cache(plan_folder))
    # THEN the first was built and stored, the second read back: the same factors, rules and
    # triggers, its rules those of its own pack set (a rule, or the fallback rule of a `[[module]]` entry)
    assert builds == [first]
    assert len(list(plan_folder.iterdir())) == 1
    assert plan_facts(loaded) == plan_facts(stored)
    assert loaded.packs is second
    owned = [*second.rules, *plan.fallback_rules(second).values()]
    assert all(any(rule is own for own in owned) for rules in loaded.steady.values() for rule in rules)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "garbage", "another format version"])
def test_a_damaged_plan_is_never_used(tmp_path: Path, plan_folder: Path, builds: list[PackSet], damage: str) -> None:
    # GIVEN a stored plan, then damaged on disk
    first = load_packs(cache_folder=tmp_path / "packs")
    stored = plan.plan_for(first, (TRIGGER,), plan.plan_cache(plan_folder))
    (entry,) = plan_folder.iterdir()
    data = entry.read_bytes()
    entry.write_bytes(_damaged(data, damage, plan.MAGIC))
    # WHEN the next run asks for it
    second = load_packs(cache_folder=tmp_path / "packs")
    rebuilt = plan.plan_for(second, (TRIGGER,), plan.plan_cache(plan_folder))
    # THEN it was built again, the same, and stored whole again
    assert builds == [first, second]
    assert plan_facts(rebuilt) == plan_facts(stored)
    assert entry.read_bytes() == data


def test_a_plan_entry_whose_checksum_holds_but_is_no_plan_is_rebuilt(
    tmp_path: Path, plan_folder: Path, builds: list[PackSet]
) -> None:
    # GIVEN an entry under the right key with a good checksum over something else
    first = load_packs(cache_folder=tmp_path / "packs")
    plan.plan_for(first, (TRIGGER,), plan.plan_cache(plan_folder))
    (entry,) = plan_folder.iterdir()
    DiskCache(plan_folder, plan.MAGIC, plan.KEEP).store(entry.name, marshal.dumps(("not", "a", "plan")))
    # WHEN the next run asks for its plan THEN it is built afresh
    second = load_packs(cache_folder=tmp_path / "packs")
    plan.plan_for(second, (TRIGGER,), plan.plan_cache(plan_folder))
    assert builds == [first, second]


def test_packs_loaded_without_the_cache_store_no_plan(plan_folder: Path, builds: list[PackSet]) -> None:
    # GIVEN packs loaded without the pack cache (no digest of what they were loaded from)
    packs = load_packs()
    # WHEN their plan is asked for THEN it is built, and nothing is stored
    plan.plan_for(packs, (TRIGGER,), plan.plan_cache(plan_folder))
    assert builds == [packs]
    assert not plan_folder.exists()


def test_logphase_no_cache_writes_nothing(tmp_path: Path) -> None:
    # GIVEN an empty cache home and LOGPHASE_NO_CACHE set
    log = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
    env = {"XDG_CACHE_HOME": str(tmp_path), "LOGPHASE_NO_CACHE": "1"}
    # WHEN a log is analysed THEN it is judged, and nothing is written under the cache home
    result = CliRunner().invoke(main, ["analyze", "--post-mortem", str(log)], env=env)
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []


def _longer_than_the_head(log: Path) -> bool:
    data = log.read_bytes()
    return data.count(b"\n") + (not data.endswith(b"\n")) > PLAIN_LINES


# The fixture logs the fast path reads (over PLAIN_LINES lines: a scan plan is built and cached; none
# now, so a log of 545 lines is also read four times over, a server started four times), and a quarter
# of the others drawn afresh each run (tests/equivalence/sampling.py): every log over runs, instead of
# all 96 each run (LOGPHASE_TEST_FULL=1: all of them).
LONG = FIXTURES / "real" / "gpu-h200" / "nccl-info-subsys-all-allreduce.log"
CACHE_LOGS = [(log, 1) for log in LOGS if _longer_than_the_head(log)] + [(LONG, 4)]
CACHE_LOGS += [
    (log, 1) for log in drawn("pack-cache-logs", [log for log in LOGS if (log, 1) not in CACHE_LOGS], len(LOGS) // 4)
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("given", "copies"), CACHE_LOGS, ids=lambda p: str(p.relative_to(FIXTURES)) if isinstance(p, Path) else f"x{p}"
)
def test_the_report_is_the_same_with_a_cold_a_warm_and_no_cache(
    given: Path, copies: int, tmp_path: Path, parses: list[str], builds: list[PackSet]
) -> None:
    # GIVEN a fixture or real-world log (`copies` times over) and an empty cache home
    log = tmp_path / given.name
    log.write_bytes(given.read_bytes() * copies)
    argv = ["analyze", "--post-mortem", "--format", "json", "--as-of", "2030-01-01 00:00:00", str(log)]
    cached = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "LOGPHASE_NO_CACHE": None}
    runner = CliRunner()
    # WHEN it is analysed with the cache empty, then filled, then with caching off
    cold = runner.invoke(main, argv, env=cached)
    parsed_cold, built_cold = len(parses), len(builds)
    warm = runner.invoke(main, argv, env=cached)
    parsed_warm, built_warm = len(parses) - parsed_cold, len(builds) - built_cold
    off = runner.invoke(main, argv, env={"XDG_CACHE_HOME": str(tmp_path / "off"), "LOGPHASE_NO_CACHE": "1"})
    # THEN the cold run parsed the packs and built their scan plan (a log of PLAIN_LINES lines at
    # most is read without the fast path: no plan), and stored both, the warm one read them back
    # (the regexes built from their stored code), the run without a cache wrote nothing; the three
    # reports and exit codes are the same, byte for byte
    fast = _longer_than_the_head(log)
    assert (parsed_cold > 0, built_cold, parsed_warm, built_warm) == (True, int(fast), 0, 0)
    assert list((tmp_path / "cache" / "logphase" / "packs").iterdir())
    assert (tmp_path / "cache" / "logphase" / "plans").exists() == fast
    assert not (tmp_path / "off").exists()
    assert '"verdict"' in cold.output
    assert (cold.exit_code, cold.output) == (warm.exit_code, warm.output) == (off.exit_code, off.output)
