"""Shared test helpers: where the fixtures are, and running the CLI in-process."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from logphase.cli import main
from logphase.logs.fast import FastLines, scanners
from logphase.packs import PackSet, load_packs

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# The team's shared folder beside the checkout (not in a clone): only for cases newer than the copy
SHARED = REPO.parent / "shared"
# Real logs users pasted into public issues, copied from ../shared/realworld with their labels and URLs
REALWORLD = FIXTURES / "realworld"


@pytest.fixture(autouse=True, scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One cache folder for the session, not the user's ~/.cache: what the tests store is theirs."""
    folder = tmp_path_factory.mktemp("cache-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        patch.delenv("LOGPHASE_NO_CACHE", raising=False)
        yield folder


@cache
def shipped_packs() -> PackSet:
    """The shipped packs, loaded once per session (no test changes them)."""
    return load_packs()


@pytest.fixture(scope="session")
def packs() -> PackSet:
    return shipped_packs()


Generated = Callable[[str, int, int], list[Path]]


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Generated:
    """Generated serving logs (bench/loggen.py) by shape, size and seed, each written once per session
    for the tests that only read them: a reference report of them is computed once too."""
    from bench.loggen import write_logs

    folder = tmp_path_factory.mktemp("generated")
    made: dict[tuple[str, int, int], list[Path]] = {}

    def logs(shape: str, size: int, seed: int) -> list[Path]:
        if (shape, size, seed) not in made:
            made[shape, size, seed] = write_logs(folder / f"{shape}-{size}-{seed}.log", size, seed=seed, shape=shape)
        return made[shape, size, seed]

    return logs


Written = Callable[[str, Callable[[], bytes]], Path]


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """A file named `name` holding `make()`, written once per session (`make` is only called the
    first time): the tests of one log under several scanners read one file, and its reference report
    is computed once."""
    folder = tmp_path_factory.mktemp("written")

    def write(name: str, make: Callable[[], bytes]) -> Path:
        path = folder / name
        if not path.exists():
            path.write_bytes(make())
        return path

    return write


def run_cli(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def run_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(*args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def judge_text(tmp_path: Path, text: str, name: str = "run.log") -> dict[str, Any]:
    """The JSON report of `analyze --post-mortem` on a log holding `text`, written under `tmp_path`."""
    log = tmp_path / name
    log.write_text(text)
    _, report = run_json("analyze", str(log), "--post-mortem")
    return report


def root_text(report: dict[str, Any]) -> str:
    """The text of a report's root-cause line (the report must name one)."""
    root = report["root_cause"]
    assert isinstance(root, dict)
    return str(root["text"])


@pytest.fixture
def cli() -> Any:
    return run_cli


@pytest.fixture(params=["hyperscan", "stdlib"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both byte scanners: hyperscan when installed, and the pure-Python one."""
    return use_scanner(str(request.param), monkeypatch)


def use_scanner(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The byte scanner `name` for the rest of the test: hyperscan (skipped where it is not
    installed) or the pure-Python one."""
    if name == "hyperscan" and scanners.hyperscan is None:
        pytest.skip("hyperscan is not installed")
    if name == "stdlib":
        monkeypatch.setattr(scanners, "hyperscan", None)
    return name


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The FastLines objects a scan creates, to read their statistics."""
    made: list[Any] = []
    original = FastLines.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(FastLines, "__init__", init)
    yield made


# --- tiers: `make check` runs `-m "not slow and not live"`; a test is quick unless marked ------------------

# An unmarked test slower than this (its call, not its fixtures) is named at the end of the run, to be
# made quicker or marked `slow`. Only reported: a loaded machine must not fail a run.
QUICK_SECONDS = 2.0
_SLOW_UNMARKED: list[tuple[str, float]] = []


def pytest_report_header(config: pytest.Config) -> str:
    from tests.equivalence.sampling import FULL, SEED

    return f"sampled dimensions: LOGPHASE_TEST_SEED={SEED}" + (" (LOGPHASE_TEST_FULL: every layout)" if FULL else "")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > QUICK_SECONDS and not {"slow", "live"} & set(report.keywords):
        _SLOW_UNMARKED.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from tests.equivalence.sampling import SEED

    if _SLOW_UNMARKED:
        terminalreporter.section(f"unmarked tests over {QUICK_SECONDS:.0f} s (mark them slow, or make them quicker)")
        for nodeid, seconds in sorted(_SLOW_UNMARKED, key=lambda item: -item[1]):
            terminalreporter.write_line(f"{seconds:6.2f}s {nodeid}")
    terminalreporter.write_line(f"sampled dimensions: LOGPHASE_TEST_SEED={SEED} replays this run's rows")
