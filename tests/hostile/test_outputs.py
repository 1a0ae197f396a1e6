"""Outputs never destroy: `bundle -o` refuses an input (by name, symlink or hard link), a device, a
folder; replaces an existing file only with --force; leaves nothing behind when it fails; and so do the
data files `patterns inventory --out FOLDER` writes."""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from logphase.bundle.archive import write_tar_gz
from logphase.bundle.build import Member
from logphase.errors import UsageError
from logphase.inventory.files import read_inventory
from tests.conftest import FIXTURES, run_cli

LOG = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
DUMP = FIXTURES / "stacks" / "pyspy-subprocesses-idle.json"
PACK = '[pack]\nname = "mine"\nschema = 1\nsystems = []\n'


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(LOG, tmp_path / "server.log")
    shutil.copy(DUMP, tmp_path / "dump.json")
    (tmp_path / "mine.toml").write_text(PACK)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _symlink(work: Path) -> str:
    (work / "link.tar.gz").symlink_to(work / "server.log")
    return "link.tar.gz"


def _hard_link(work: Path) -> str:
    os.link(work / "server.log", work / "hard.tar.gz")
    return "hard.tar.gz"


# (the -o that names an input, made in the working folder; the input it names)
INPUTS: dict[str, tuple[Callable[[Path], str], str]] = {
    "the-log": (lambda work: "server.log", "server.log"),
    "the-log-by-absolute-path": (lambda work: str(work / "server.log"), "server.log"),
    "a-symlink-to-the-log": (_symlink, "server.log"),
    "a-hard-link-to-the-log": (_hard_link, "server.log"),
    "the-from-dump": (lambda work: "dump.json", "dump.json"),
    "a-pattern-pack": (lambda work: "mine.toml", "mine.toml"),
}


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("case", INPUTS, ids=str)
def test_an_output_that_names_an_input_is_refused(work: Path, case: str, force: bool) -> None:
    # GIVEN -o naming one of the bundle's inputs, in one of the ways a path can
    make, input_name = INPUTS[case]
    output = make(work)
    before = (work / input_name).read_bytes()
    # WHEN the bundle is asked for (even with --force)
    args = ["bundle", "server.log", "--from", "dump.json", "--patterns", "mine.toml", "-o", output]
    result = run_cli(*args, *(["--force"] if force else []))
    # THEN it is a usage error that names the input, and the input is untouched
    assert result.exit_code == 2, result.output
    assert "is an input of this command" in result.stderr
    assert "hint: name another file with -o FILE" in result.stderr
    assert (work / input_name).read_bytes() == before
    assert sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_device_is_never_written_over(work: Path, force: bool) -> None:
    # GIVEN -o naming a character device, directly or through a symlink
    (work / "null.tar.gz").symlink_to(os.devnull)
    for output in (os.devnull, "null.tar.gz"):
        result = run_cli("bundle", "server.log", "-o", output, *(["--force"] if force else []))
        # THEN it is refused (exit 3) and the device is still a device
        assert result.exit_code == 3, result.output
        assert "not a regular file" in result.stderr
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert (work / "null.tar.gz").is_symlink()


def test_a_directory_or_a_symlink_to_one_is_refused(work: Path) -> None:
    (work / "out").mkdir()
    (work / "out-link").symlink_to(work / "out")
    for output in ("out", "out-link"):
        result = run_cli("bundle", "server.log", "-o", output, "--force")
        assert result.exit_code == 3, result.output
        assert "is a directory" in result.stderr
    assert list((work / "out").iterdir()) == []


def test_an_existing_file_is_replaced_only_with_force(work: Path) -> None:
    # GIVEN an earlier file where -o points
    (work / "b.tar.gz").write_bytes(b"an earlier bundle")
    # WHEN bundled without --force: refused, the file as it was
    result = run_cli("bundle", "server.log", "-o", "b.tar.gz")
    assert result.exit_code == 2, result.output
    assert "b.tar.gz: already exists" in result.stderr
    assert "--force" in result.stderr
    assert (work / "b.tar.gz").read_bytes() == b"an earlier bundle"
    # WHEN bundled with --force: replaced by a whole bundle, owner-only
    result = run_cli("bundle", "server.log", "-o", "b.tar.gz", "--force")
    assert result.exit_code == 0, result.output
    with tarfile.open(work / "b.tar.gz") as archive:
        assert "b/README.md" in archive.getnames()
    assert stat.S_IMODE((work / "b.tar.gz").stat().st_mode) == 0o600
    # AND nothing is left beside it
    assert sorted(p.name for p in work.iterdir()) == ["b.tar.gz", "dump.json", "mine.toml", "server.log"]


def test_a_symlink_to_another_file_is_replaced_as_a_link_with_force(work: Path) -> None:
    # GIVEN -o is a symlink to a file that is no input
    (work / "kept.txt").write_text("not mine to destroy")
    (work / "b.tar.gz").symlink_to(work / "kept.txt")
    assert run_cli("bundle", "server.log", "-o", "b.tar.gz").exit_code == 2
    # WHEN forced: the link is replaced, the file it pointed at stays
    assert run_cli("bundle", "server.log", "-o", "b.tar.gz", "--force").exit_code == 0
    assert not (work / "b.tar.gz").is_symlink()
    assert (work / "kept.txt").read_text() == "not mine to destroy"


def test_a_file_that_appears_while_the_bundle_is_made_is_not_replaced(tmp_path: Path) -> None:
    # GIVEN a bundle whose members are written while, meanwhile, a file appears at the output
    path = tmp_path / "b.tar.gz"

    class Appearing(bytes):
        def __len__(self) -> int:  # called as the tar member is written: after the first check
            if not path.exists():
                path.write_bytes(b"theirs")
            return super().__len__()

    member = Member("README.md", Appearing(b"hello"), "this file")
    # WHEN written without force
    with pytest.raises(UsageError, match=r"b\.tar\.gz: already exists"):
        write_tar_gz(path, "b", [member], 0.0)
    # THEN the usage error says so, the other file is untouched and no temporary file is left
    assert path.read_bytes() == b"theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["b.tar.gz"]


# --- `patterns inventory --out FOLDER`: its data files, as bundle's -o -------------------------------

SCHEDULER = 'logger.info("Load weight begin. avail mem=%.2f GB", mem)\n'


@pytest.fixture
def wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inventory").mkdir()
    path = tmp_path / "sglang-0.5.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("sglang/srt/managers/scheduler.py", SCHEDULER)
    return path


def _inventory(wheel: Path, *options: str) -> Result:
    return run_cli("patterns", "inventory", str(wheel), "--out", "inventory", *options)


def test_an_inventory_data_file_is_replaced_only_with_force(wheel: Path) -> None:
    # GIVEN a data file already there
    data = Path("inventory/sglang.jsonl.gz")
    data.write_bytes(b"old")
    # WHEN rebuilt without --force THEN it is refused (exit 2, the hint names --force) and untouched
    result = _inventory(wheel)
    assert (result.exit_code, result.stderr.splitlines()) == (
        2,
        [
            "logphase: error: inventory/sglang.jsonl.gz: already exists",
            "  hint: name another file with --out FOLDER, or replace it with --force",
        ],
    )
    assert data.read_bytes() == b"old"
    # WHEN rebuilt with --force THEN it holds the wheel's template, and nothing is left beside it
    result = _inventory(wheel, "--force")
    assert result.exit_code == 0, result.output
    assert [entry.text for entry in read_inventory(Path("inventory"))] == ["Load weight begin. avail mem={:.2f} GB"]
    assert sorted(p.name for p in Path("inventory").iterdir()) == ["sglang.jsonl.gz"]


# (what the data file's path is made; the exit code; the error's end) — with and without --force
DESTROYING: dict[str, tuple[Callable[[Path], None], int, str]] = {
    "a-symlink-to-the-wheel": (
        lambda w: Path("inventory/sglang.jsonl.gz").symlink_to(w),
        2,
        "is an input of this command",
    ),
    "a-hard-link-to-the-wheel": (lambda w: os.link(w, "inventory/sglang.jsonl.gz"), 2, "is an input of this command"),
    "a-folder": (lambda w: Path("inventory/sglang.jsonl.gz").mkdir(), 3, "is a directory"),
    "a-symlink-to-a-device": (lambda w: Path("inventory/sglang.jsonl.gz").symlink_to("/dev/null"), 3, "not a regular"),
}


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("case", DESTROYING)
def test_an_inventory_data_file_never_destroys(wheel: Path, case: str, force: bool) -> None:
    # GIVEN the data file's path naming the input wheel, a folder or a device
    make, code, error = DESTROYING[case]
    make(wheel)
    wheel_bytes = wheel.read_bytes()
    # WHEN rebuilt
    result = _inventory(wheel, *(["--force"] if force else []))
    # THEN it is refused with its reason and a hint, and the wheel is as it was
    assert result.exit_code == code, result.output
    assert result.stderr.startswith("logphase: error: inventory/sglang.jsonl.gz: ") and error in result.stderr
    assert "\n  hint: " in result.stderr and "Traceback" not in result.output
    assert wheel.read_bytes() == wheel_bytes
    assert [p.name for p in Path("inventory").iterdir() if p.name.endswith(".part")] == []


@pytest.mark.parametrize(
    ("out", "error"),
    [("/dev/null", "/dev/null: not a folder"), ("inventory/no/such", None)],
    ids=["a-device", "a-new-folder"],
)
def test_the_inventory_folder(wheel: Path, out: str, error: str | None) -> None:
    # GIVEN --out naming a device, or a folder not there yet
    result = run_cli("patterns", "inventory", str(wheel), "--out", out)
    # THEN a device is refused (exit 3) and a new folder is made
    if error is None:
        assert result.exit_code == 0, result.output
        assert (Path(out) / "sglang.jsonl.gz").is_file()
    else:
        assert (result.exit_code, result.stderr.splitlines()[0]) == (3, f"logphase: error: {error}")


def test_a_broken_wheel_is_an_error_not_a_traceback(wheel: Path) -> None:
    # GIVEN a file named as a wheel that is no zip
    wheel.write_bytes(b"not a zip\n")
    # WHEN the inventory is rebuilt from it THEN exit 3 names it, with a hint, and writes nothing
    result = _inventory(wheel)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        3,
        f"logphase: error: {wheel}: cannot read the wheel: File is not a zip file",
    )
    assert list(Path("inventory").iterdir()) == []
    # AND a new --out folder is not made
    assert run_cli("patterns", "inventory", str(wheel), "--out", "new").exit_code == 3
    assert not Path("new").exists()
