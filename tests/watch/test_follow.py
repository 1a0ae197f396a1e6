"""`follow_lines`: a growing file read in batches; rotation, truncation, a late file, bars, stdin."""

from __future__ import annotations

import io
import os
from collections.abc import Generator
from pathlib import Path

import pytest

from logphase.errors import InputError
from logphase.logs.follow import follow_lines
from logphase.logs.reader import Line


def _texts(batch: list[Line]) -> list[tuple[int, str]]:
    return [(line.number, line.text) for line in batch]


def _follow(
    path: Path, notes: list[str] | None = None, seen: list[bytes] | None = None
) -> Generator[list[Line], None, None]:
    return follow_lines(
        str(path),
        stop=lambda: False,
        poll_s=0.001,
        on_note=(notes.append if notes is not None else None),
        on_bytes=(seen.append if seen is not None else None),
    )


def test_lines_come_as_they_are_appended_and_a_partial_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"one\ntwo\nthr")
    seen: list[bytes] = []
    follower = _follow(path, seen=seen)
    assert _texts(next(follower)) == [(1, "one"), (2, "two")]
    assert next(follower) == []  # nothing new: an empty batch, the caller's tick
    with path.open("ab") as out:
        out.write(b"ee\nfour\n")
    assert _texts(next(follower)) == [(3, "three"), (4, "four")]
    assert b"".join(seen) == b"one\ntwo\nthree\nfour\n"


def test_rotation_reads_the_old_file_to_its_end_then_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"a\n")
    notes: list[str] = []
    follower = _follow(path, notes)
    assert _texts(next(follower)) == [(1, "a")]
    # GIVEN the writer appends, then the file is renamed away and a new one created (logrotate)
    with path.open("ab") as out:
        out.write(b"b\n")
    os.rename(path, tmp_path / "server.log.1")
    path.write_bytes(b"c\n")
    batches = [_texts(next(follower)) for _ in range(4)]
    # THEN nothing is lost and the numbering runs on
    assert [line for batch in batches for line in batch] == [(2, "b"), (3, "c")]
    assert notes == [f"{path} was replaced (rotated): following the new file"]


def test_truncation_reads_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"first run line one\nfirst run line two\n")
    notes: list[str] = []
    follower = _follow(path, notes)
    assert len(next(follower)) == 2
    with path.open("wb") as out:  # copytruncate, or `> server.log` and a restart
        out.write(b"new\n")
    batches = [_texts(next(follower)) for _ in range(3)]
    assert [line for batch in batches for line in batch] == [(3, "new")]
    assert notes == [f"{path} shrank (truncated): reading it again from the start"]


def test_a_file_that_does_not_exist_yet_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    notes: list[str] = []
    follower = _follow(path, notes)
    assert (next(follower), next(follower)) == ([], [])
    path.write_bytes(b"hello\n")
    assert _texts(next(follower)) == [(1, "hello")]
    assert notes == [f"waiting for {path} to appear"]


def test_progress_bar_updates_come_before_their_line_ends(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"start\n\rCapturing 1/4\rCapturing 2/4")
    follower = _follow(path)
    # the update followed by another is complete; the last one is complete once nothing follows it
    assert _texts(next(follower)) == [(1, "start"), (2, "Capturing 1/4")]
    assert _texts(next(follower)) == [(2, "Capturing 2/4")]
    with path.open("ab") as out:
        out.write(b"\rCapturing 3/4\n[2026-01-01 10:00:00 TP0] next\n")
    assert _texts(next(follower)) == [(2, "Capturing 3/4"), (3, "[2026-01-01 10:00:00 TP0] next")]


def test_stdin_is_read_until_it_closes() -> None:
    # GIVEN a stream whose writer closed right after its last line, which has no newline
    stream = io.BytesIO(b"x\ny\nz-without-newline")
    batches = list(follow_lines("-", stop=lambda: False, poll_s=0.001, stdin=stream))
    # THEN that line comes in the batch of the lines before it (a watch judges them together: a traceback's header is
    # not judged before the exception line that ends the input)
    assert [_texts(batch) for batch in batches if batch] == [[(1, "x"), (2, "y"), (3, "z-without-newline")]]


def test_a_compressed_file_cannot_be_followed(tmp_path: Path) -> None:
    path = tmp_path / "server.log.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00rest")
    with pytest.raises(InputError) as raised:
        next(_follow(path))
    assert (raised.value.message, raised.value.hint) == (
        f"{path}: a compressed file cannot be followed",
        f"use: logphase analyze {path}",
    )
