"""Shared test helpers: where the fixtures are, and running the CLI in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from logphase.cli import main
from logphase.logs.fast import FastLines, scanners

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


def run_cli(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def run_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(*args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture
def cli() -> Any:
    return run_cli


@pytest.fixture(params=["hyperscan", "stdlib"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both byte scanners: hyperscan when installed, and the pure-Python one."""
    if request.param == "hyperscan" and scanners.hyperscan is None:
        pytest.skip("hyperscan is not installed")
    if request.param == "stdlib":
        monkeypatch.setattr(scanners, "hyperscan", None)
    return str(request.param)


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
