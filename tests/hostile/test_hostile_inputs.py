"""Hostile inputs, made on the fly, through every entry point in a child process: a defined exit code,
no traceback, a one-line error with a hint, bounded memory and time, and nothing written to a store
that is not ours."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import pickle
import sqlite3
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard

from tests.conftest import FIXTURES, REPO

# Every case runs the CLI in a child process, many on inputs of hundreds of MB: out of `make check`
pytestmark = pytest.mark.slow

# The bound every entry point keeps on every input here (peak RSS of the child), and its wall time.
MAX_RSS_MB = 200
MAX_SECONDS = 60
LOG = (FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log").read_bytes()


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], list[str]]  # writes the input(s) under a folder, returns the arguments
    codes: tuple[int, ...]  # the exit codes this input may give


def _write(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _zeros_gz(folder: Path, megabytes: int) -> str:
    """A gzip bomb: `megabytes` MB of NUL bytes in a file of a few hundred KB, written in a stream."""
    path = folder / "bomb.log.gz"
    chunk = bytes(1 << 20)
    with gzip.open(path, "wb", compresslevel=1) as out:
        for _ in range(megabytes):
            out.write(chunk)
    return str(path)


def _one_line(folder: Path, megabytes: int) -> str:
    path = folder / "one-line.log"
    with path.open("wb") as out:
        for _ in range(megabytes):
            out.write(b"x" * (1 << 20))
        out.write(b"\n")
    return str(path)


def _tar(folder: Path, members: dict[str, bytes], name: str = "logs.tar") -> str:
    path = folder / name
    with tarfile.open(path, "w") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return str(path)


def _truncated(compress: Callable[[bytes], bytes], suffix: str) -> Callable[[Path], list[str]]:
    def make(folder: Path) -> list[str]:
        data = compress(LOG * 50)
        return [_write(folder, f"cut.log{suffix}", data[: len(data) // 2])]

    return make


def _dump_with(document: object) -> Callable[[Path], list[str]]:
    def make(folder: Path) -> list[str]:
        return [_write(folder, "fr-rank-0", pickle.dumps(document, protocol=2))]

    return make


ANALYZE = [
    Case("missing", lambda f: [str(f / "nope.log")], (3,)),
    Case("directory", lambda f: [str(f)], (3,)),
    Case("dev-zero", lambda f: ["/dev/zero"], (3,)),
    Case("random-bytes", lambda f: [_write(f, "r.bin", os.urandom(1 << 16))], (3,)),
    Case("utf-16", lambda f: [_write(f, "u.log", LOG.decode().encode("utf-16"))], (3,)),
    Case("gz-truncated", _truncated(gzip.compress, ".gz"), (3,)),
    Case("bz2-truncated", _truncated(bz2.compress, ".bz2"), (3,)),
    Case("xz-truncated", _truncated(lzma.compress, ".xz"), (3,)),
    Case("zst-truncated", _truncated(lambda d: zstandard.ZstdCompressor().compress(d), ".zst"), (3,)),
    Case("gzip-bomb-2GB", lambda f: [_zeros_gz(f, 2048)], (6,)),
    Case("one-line-200MB", lambda f: [_one_line(f, 200)], (6,)),
    Case("tar-escaping-paths", lambda f: [_tar(f, {"../../etc/x.log": LOG, "/abs.log": LOG})], (0,)),
    Case("tar-binary-member", lambda f: [_tar(f, {"a.log": LOG, "core": os.urandom(8192)})], (3,)),
    Case("tar-empty", lambda f: [_tar(f, {})], (3, 6)),  # no header at all: 10 KB of NUL bytes, read as empty
    Case("tar-5000-members", lambda f: [_tar(f, {f"n{i}.log": LOG[:400] for i in range(5000)})], (0, 4, 5, 6)),
    Case("nul-hole-then-log", lambda f: [_write(f, "hole.log", bytes(1 << 20) + LOG)], (0,)),
    Case("fr-memo-bomb", _dump_with({"version": "2.10", "pg_config": {}, "entries": [{"a": 1}] * 3_000_000}), (6,)),
    Case(
        "fr-inf-seq", _dump_with({"version": "2.10", "pg_config": {}, "entries": [{"collective_seq_id": 1e309}]}), (6,)
    ),
    Case(
        "fr-asks-for-code",
        lambda f: [
            _write(
                f,
                "fr-rank-0",
                b"\x80\x02}q\x00(X\x07\x00\x00\x00versionq\x01cos\nsystem\nq\x02X\x02\x00\x00\x00idq\x03\x85q\x04Rq\x05u.",
            )
        ],
        (3,),
    ),
]

STACKS_FROM = [
    Case("dev-zero", lambda f: ["/dev/zero"], (3,)),
    Case("json-nested-deep", lambda f: [_write(f, "d.json", b"[" * 100_000 + b"]" * 100_000)], (3,)),
    Case(
        "json-wrong-shape",
        lambda f: [_write(f, "w.json", json.dumps({"schema": "logphase.stacks/1", "processes": 5}).encode())],
        (3,),
    ),
    Case("one-line-200MB", lambda f: [_one_line(f, 200)], (3,)),
    Case("gzip-bomb-2GB", lambda f: [_zeros_gz(f, 2048)], (3,)),
    Case("random-bytes", lambda f: [_write(f, "r.bin", os.urandom(1 << 16))], (3,)),
]


def _store(kind: str) -> Callable[[Path], list[str]]:
    def make(folder: Path) -> list[str]:
        db = folder / "runs.db"
        if kind == "foreign":
            with sqlite3.connect(db) as connection:
                connection.execute("CREATE TABLE users (name TEXT)")
        elif kind == "garbage":
            db.write_bytes(os.urandom(4096))
        return [str(db)]

    return make


# The child notes its own peak RSS at exit: VmHWM of its own memory (ru_maxrss would keep the peak of
# the test process it was forked from, exec or not).
_CHILD = (
    "import atexit, os, runpy, sys\n"
    "def note():\n"
    "    peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
    "    open(os.environ['RSS_OUT'], 'w').write(peak)\n"
    "atexit.register(note)\n"
    "sys.argv = ['logphase', *sys.argv[1:]]\n"
    "runpy.run_module('logphase', run_name='__main__')\n"
)


def _run(args: list[str], cwd: Path) -> tuple[int, str, str, float, float]:
    """The CLI in a child process: exit code, stdout, stderr, seconds, peak RSS (MB)."""
    rss_out = cwd / ".rss"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        cwd=cwd,
        timeout=MAX_SECONDS,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", "RSS_OUT": str(rss_out)},
    )
    seconds = time.monotonic() - started
    rss = int(rss_out.read_text()) / 1024 if rss_out.exists() else 0.0
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"), seconds, rss


def _check(code: int, stderr: str, allowed: tuple[int, ...], rss: float) -> None:
    assert "Traceback (most recent call last)" not in stderr, stderr[-2000:]
    assert code in allowed, (code, stderr[-500:])
    if code == 3:
        lines = stderr.splitlines()
        error = next(i for i, line in enumerate(lines) if line.startswith("logphase: error: "))
        assert lines[error + 1].startswith("  hint: "), stderr
    assert rss <= MAX_RSS_MB, f"{rss:.0f} MB"


@pytest.mark.parametrize("case", ANALYZE, ids=lambda c: c.name)
def test_analyze(tmp_path: Path, case: Case) -> None:
    args = case.make(tmp_path)
    code, _, stderr, _, rss = _run(["analyze", "--post-mortem", *args], tmp_path)
    _check(code, stderr, case.codes, rss)
    # AND an archive's member named `../` or `/` wrote nothing outside the folder
    assert not (tmp_path.parent / "etc").exists() and not Path("/abs.log").exists()


@pytest.mark.parametrize("case", STACKS_FROM, ids=lambda c: c.name)
def test_stacks_from(tmp_path: Path, case: Case) -> None:
    code, _, stderr, _, rss = _run(["stacks", "--from", *case.make(tmp_path)], tmp_path)
    _check(code, stderr, case.codes, rss)


@pytest.mark.parametrize("kind", ["foreign", "garbage"])
@pytest.mark.parametrize("command", [["runs", "list"], ["runs", "add", "LOG"], ["analyze", "LOG", "--record"]])
def test_a_store_that_is_not_ours_is_never_written(tmp_path: Path, kind: str, command: list[str]) -> None:
    (db,) = _store(kind)(tmp_path)
    log = _write(tmp_path, "run.log", LOG)
    before = Path(db).read_bytes()
    code, _, stderr, _, rss = _run([log if arg == "LOG" else arg for arg in command] + ["--db", db], tmp_path)
    _check(code, stderr, (3,), rss)
    assert Path(db).read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        ["watch", "/dev/zero", "--timeout", "5"],
        ["watch", "LOG", "--url", "http://[::1", "--timeout", "5"],
        ["watch", "LOG", "--pid", "999999", "--timeout", "5"],
        ["patterns", "explain", "--patterns", "PACK", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"],
        ["patterns", "test", "PACK"],
        ["runs", "show", "99999999999999999999999"],
    ],
    ids=[
        "watch-dev-zero",
        "watch-bad-url",
        "watch-no-pid",
        "explain-backtracking",
        "test-backtracking",
        "runs-huge-id",
    ],
)
def test_other_entry_points(tmp_path: Path, args: list[str]) -> None:
    pack = tmp_path / "evil.toml"
    pack.write_text(
        '[pack]\nname = "evil"\nschema = 1\nsystems = []\n[[rule]]\nid = "evil.r"\nphase = "weight_load"\n'
        'kind = "begin"\nregex = \'^(a|a)*$\'\nexamples = ["aaaa"]\n'
        f'counter_examples = ["{"a" * 36}!"]\n'
    )
    log = _write(tmp_path, "run.log", LOG)
    argv = [log if a == "LOG" else str(pack) if a == "PACK" else a for a in args]
    code, _, stderr, seconds, rss = _run(argv, tmp_path)
    _check(code, stderr, (2, 3), rss)
    assert seconds < 15
