"""Tar archives: every member a log, read in one pass whatever the number of members, with one open
file for all of them (stdin too), binary members refused by name."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Literal

import pytest

from tests.conftest import REPO, run_cli, run_json

WriteMode = Literal["w", "w:gz"]
LINE = "[2025-06-01 10:00:0{sec} TP{rank}] Load weight begin. avail mem=70.10 GB\n"


def _archive(path: Path, members: int, mode: WriteMode = "w", binary: bool = False) -> Path:
    with tarfile.open(path, mode) as archive:
        for n in range(members):
            data = LINE.format(sec=n % 10, rank=n % 8).encode() * 3
            info = tarfile.TarInfo(f"logs/node{n}.log")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if binary:
            blob = bytes(range(256)) * 40
            info = tarfile.TarInfo("core.dump")
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["w", "w:gz"], ids=["tar", "tar.gz"])
def test_a_tar_of_many_members_is_one_run(tmp_path: Path, mode: WriteMode) -> None:
    # GIVEN 2,000 per-node logs in one archive, plain or gzipped
    archive = _archive(tmp_path / f"logs.{mode}", 2000, mode)
    # WHEN analysed THEN every member is an input and the run is judged as one
    code, report = run_json("analyze", "--post-mortem", str(archive))
    assert (len(report["inputs"]), report["verdict"], report["phase"], code) == (2000, "stalled", "weight_load", 4)
    assert report["inputs"][1999]["path"] == f"{archive}:logs/node1999.log"


@pytest.mark.slow
def test_a_tar_on_stdin_needs_one_descriptor_not_one_per_member(tmp_path: Path) -> None:
    # GIVEN a 2,000-member tar piped into a process limited to 256 open files
    archive = _archive(tmp_path / "logs.tar", 2000)
    limited = "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
    limited += "from logphase.cli import main; sys.argv = ['logphase', 'analyze', '-']; main()"
    with archive.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-c", limited], stdin=stdin, capture_output=True, cwd=REPO, timeout=120)
    # THEN it is read whole: a stall, not "too many open files"
    assert done.returncode == 4, done.stderr.decode()[-500:]
    assert done.stdout.decode().startswith("logphase: STALLED at weight_load")


def test_a_binary_member_is_refused_by_name(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "logs.tar", 3, binary=True)
    result = run_cli("analyze", str(archive))
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0].startswith(f"logphase: error: {archive}:core.dump: a binary file")


def test_a_truncated_tar_gz_says_so(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "logs.tar.gz", 200, "w:gz")
    archive.write_bytes(archive.read_bytes()[:2000])
    result = run_cli("analyze", str(archive))
    assert result.exit_code == 3
    assert "broken or truncated archive" in result.stderr.splitlines()[0]
