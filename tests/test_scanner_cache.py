"""Compiled scanner databases are cached on disk by pattern and version, and never trusted when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.loggen import write_log
from logphase.cli import main
from logphase.logs.fast import scanners
from logphase.logs.fast.cache import MAGIC, ScannerCache

pytestmark = pytest.mark.skipif(not scanners.accelerated(), reason="the cache holds hyperscan databases")

PATTERNS = [(b"Load weight begin", False), (b"^\\[[0-9]{4}-", False), (b"out of memory", True)]
TEXT = b"[2026-03-02 09:14:07 TP0] Load weight begin. avail mem=78.52 GB\nCUDA Out Of Memory\nplain line\n"
# (pattern id, end offset): the literal, the stamped line start, the caseless literal
EXPECTED = [(1, 6), (0, 43), (2, 82)]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "scanners"


def kept_in(folder: Path) -> ScannerCache:
    cache = scanners.scanner_cache(folder)
    assert cache is not None  # hyperscan is installed (the module's mark)
    return cache


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each scanner made came from the cache."""
    seen: list[bool] = []
    original = scanners._cached_database

    def recorded(cache: ScannerCache | None, key: str) -> object:
        database = original(cache, key)
        seen.append(database is not None)
        return database

    monkeypatch.setattr(scanners, "_cached_database", recorded)
    return seen


def test_a_second_scanner_of_the_same_patterns_is_loaded_not_compiled(folder: Path, loads: list[bool]) -> None:
    # GIVEN an empty cache folder
    # WHEN a scanner for the same patterns is made twice
    first = scanners.make_scanner(PATTERNS, cache=kept_in(folder))
    second = scanners.make_scanner(PATTERNS, cache=kept_in(folder))
    # THEN the first is compiled and stored (one file), the second loaded; both find the same
    assert loads == [False, True]
    assert len(list(folder.iterdir())) == 1
    assert first.matches(TEXT, 0, len(TEXT)) == second.matches(TEXT, 0, len(TEXT)) == EXPECTED


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty", "other magic"])
def test_a_damaged_entry_is_never_loaded_and_is_rebuilt(folder: Path, loads: list[bool], damage: str) -> None:
    # GIVEN a cached database, then damaged on disk
    scanners.make_scanner(PATTERNS, cache=kept_in(folder))
    (entry,) = folder.iterdir()
    data = entry.read_bytes()
    damaged = {
        "flipped byte": data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:],
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "other magic": b"x" * len(MAGIC) + data[len(MAGIC) :],
    }[damage]
    entry.write_bytes(damaged)
    # WHEN the same patterns are scanned again
    scanner = scanners.make_scanner(PATTERNS, cache=kept_in(folder))
    # THEN the damaged entry was not used: compiled afresh, stored whole again, the same matches
    assert loads == [False, False]
    assert entry.read_bytes()[: len(MAGIC)] == MAGIC
    assert len(entry.read_bytes()) == len(data)
    assert scanner.matches(TEXT, 0, len(TEXT)) == EXPECTED


def test_a_payload_hyperscan_refuses_is_compiled_afresh(folder: Path, loads: list[bool]) -> None:
    # GIVEN an entry whose checksum holds but whose payload is no database (another build's format)
    cache = ScannerCache(folder, f"hyperscan {scanners.hyperscan.__version__}")
    cache.store(cache.key(PATTERNS), b"not a database")
    # WHEN the patterns are scanned
    scanner = scanners.make_scanner(PATTERNS, cache=kept_in(folder))
    # THEN it is compiled (and works)
    assert loads == [False]
    assert scanner.matches(TEXT, 0, len(TEXT)) == EXPECTED


def test_the_key_changes_with_the_patterns_and_the_engine(tmp_path: Path) -> None:
    # GIVEN one cache folder seen with two engine versions
    old, new = ScannerCache(tmp_path, "hyperscan 0.9.0"), ScannerCache(tmp_path, "hyperscan 0.9.1")
    # THEN a new engine, a changed pattern or flag each make another key; the same ones the same key
    assert old.key(PATTERNS) != new.key(PATTERNS)
    assert new.key(PATTERNS) != new.key([*PATTERNS[:2], (b"out of memory", False)])
    assert new.key(PATTERNS) == ScannerCache(tmp_path / "elsewhere", "hyperscan 0.9.1").key(list(PATTERNS))


def test_an_unwritable_cache_only_costs_the_compile(tmp_path: Path, loads: list[bool]) -> None:
    # GIVEN a cache folder that is a file (cannot be created)
    blocked = tmp_path / "file"
    blocked.write_text("")
    # WHEN a scanner is made twice
    scanner = scanners.make_scanner(PATTERNS, cache=kept_in(blocked / "scanners"))
    scanners.make_scanner(PATTERNS, cache=kept_in(blocked / "scanners"))
    # THEN both are compiled, no error
    assert loads == [False, False]
    assert scanner.matches(TEXT, 0, len(TEXT)) == EXPECTED


@pytest.mark.slow
def test_analyze_reports_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    # GIVEN a generated 1 MB serving log (past the head the matcher reads in full) and an empty XDG cache folder
    log = write_log(tmp_path / "served.log", 1_000_000, seed=3, shape="vllm-v1")
    argv = ["analyze", "--post-mortem", "--format", "json", "--as-of", "2030-01-01 00:00:00", str(log)]
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    # WHEN it is analysed with the cache empty, then filled, then without a cache folder
    runner = CliRunner()
    cold = runner.invoke(main, argv, env=env)
    stored = sorted(path.name for path in (tmp_path / "logphase" / "scanners").iterdir())
    warm = runner.invoke(main, argv, env=env)
    (tmp_path / "blocked").write_text("")
    uncached = runner.invoke(main, argv, env={"XDG_CACHE_HOME": str(tmp_path / "blocked")})
    # THEN the cold run stored its databases, and the three reports are the same, byte for byte
    assert stored
    assert cold.output == warm.output == uncached.output
    assert '"verdict"' in cold.output
