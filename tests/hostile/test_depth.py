"""Hostile inputs by depth, in a child process like tests/hostile/test_hostile_inputs.py: stack dumps
thousands of frames deep through every format of `stacks` and `bundle --from`, and packs nested past
what a reader recurses through; a defined exit code, no RecursionError, bounded memory and time."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.hostile.test_hostile_inputs import _check, _run

pytestmark = pytest.mark.slow  # each case runs the CLI in a child process
SEED = 29


def _pyspy(folder: Path, depth: int, rng: random.Random) -> str:
    frames = [
        {
            "name": f"f{rng.randrange(9)}",
            "filename": f"/app/m{i % 5}.py",
            "short_filename": f"m{i % 5}.py",
            "line": i + 1,
        }
        for i in range(depth)
    ]
    threads = [{"thread_id": 1, "os_thread_id": 11, "thread_name": "MainThread", "active": False, "frames": frames}]
    path = folder / f"pyspy-{depth}.json"
    path.write_text(json.dumps(threads))
    return str(path)


def _faulthandler(folder: Path, depth: int, rng: random.Random) -> str:
    path = folder / f"faulthandler-{depth}.txt"
    with path.open("w") as out:
        out.write("Fatal Python error: Aborted\n\nCurrent thread 0x00007f0000000001 (most recent call first):\n")
        for i in range(depth):
            out.write(f'  File "/app/m{i % 5}.py", line {i + 1} in f{rng.randrange(9)}\n')
    return str(path)


DUMPS = {
    "pyspy-1000": lambda f, rng: _pyspy(f, 1_000, rng),
    "pyspy-10000": lambda f, rng: _pyspy(f, 10_000, rng),
    "faulthandler-20000": lambda f, rng: _faulthandler(f, 20_000, rng),
    "faulthandler-50000": lambda f, rng: _faulthandler(f, 50_000, rng),
}


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "html"])
@pytest.mark.parametrize("dump", sorted(DUMPS))
def test_a_deep_stack_is_cut_with_a_note(tmp_path: Path, dump: str, fmt: str) -> None:
    path = DUMPS[dump](tmp_path, random.Random(SEED))
    code, stdout, stderr, _, rss = _run(["stacks", "--from", path, "--format", fmt], tmp_path)
    _check(code, stderr, (0, 4), rss)
    if fmt == "json":
        (note,) = [n for n in json.loads(stdout)["notes"] if "stack cut" in n]
        assert "stack cut at 256 frames (the innermost kept," in note
    else:
        assert "stacks cut at 256 frames: the innermost kept" in stdout


@pytest.mark.parametrize("dump", ["pyspy-10000", "faulthandler-50000"])
def test_bundle_takes_a_deep_stack(tmp_path: Path, dump: str) -> None:
    path = DUMPS[dump](tmp_path, random.Random(SEED))
    log = str(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log")
    code, _, stderr, _, rss = _run(["bundle", "--from", path, "-o", str(tmp_path / "b.tar.gz"), log], tmp_path)
    _check(code, stderr, (0, 4, 5, 6), rss)
    assert (tmp_path / "b.tar.gz").exists()


def _nested_toml(folder: Path) -> list[str]:
    path = folder / "deep.toml"
    path.write_text('[pack]\nname = "deep"\nschema = 1\nsystems = []\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    return [str(path)]


def _loop(folder: Path) -> list[str]:
    packs = folder / "packs"
    packs.mkdir()
    (packs / "loop.toml").symlink_to("loop.toml")
    return [str(packs)]


@pytest.mark.parametrize(("make", "message"), [(_nested_toml, "nest too deeply"), (_loop, "symbolic link")])
@pytest.mark.parametrize("command", [["patterns", "test"], ["patterns", "list", "--patterns"]])
def test_a_pack_nested_or_looped_is_an_error(tmp_path: Path, make: object, message: str, command: list[str]) -> None:
    assert callable(make)
    code, _, stderr, _, rss = _run([*command, *make(tmp_path)], tmp_path)
    _check(code, stderr, (3,), rss)
    assert message in stderr
