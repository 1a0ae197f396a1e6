"""Follow mode (watch): a growing log, a rotated or truncated file, or a pipe, read as `Line`s in batches."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Generator
from dataclasses import replace
from functools import partial
from pathlib import Path
from stat import S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO
from typing import IO, TYPE_CHECKING

from logphase.errors import InputError
from logphase.logs.envelope import Unwrapped, Unwrapper
from logphase.logs.reader import (
    AUTOLINK_BYTES,
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    SNIFF_BYTES,
    WRITTEN_ESCAPE_BYTES,
    Line,
    clean_line,
    compression_of,
    decoded_text,
    glued,
    line_updates,
    refuse_binary,
    sniff_bytes,
)

if TYPE_CHECKING:
    from logphase.packs import PackSet

FOLLOW_POLL_S = 0.25


def follow_lines(
    path: str,
    stop: Callable[[], bool],
    poll_s: float = FOLLOW_POLL_S,
    *,
    stdin: IO[bytes] | None = None,
    on_bytes: Callable[[bytes], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_envelopes: Callable[[str], None] | None = None,
    packs: PackSet | None = None,
) -> Generator[list[Line], None, None]:
    """Follow a growing log like `tail -F`, in batches: each item is the lines completed since the
    last one, an empty list when nothing arrived within `poll_s` (so the caller can do its periodic
    work), until `stop()` is true or standard input ends.

    A file replaced by another (rotation: a new inode) is read to its end, then the new file from
    its start; a file that shrinks (truncation, copytruncate) is read again from its start; a file
    that does not exist yet is waited for. Line numbers run on across rotations. A progress bar
    updated with `\\r` yields each update once it has settled, before its line ends. `on_bytes`
    sees every byte read (the content hash of `--record`), `on_note` what happened to the file,
    `on_envelopes` what reading it out of its envelopes assumed (logphase/logs/envelope.py); `packs` (the
    run's) decide its envelopes as analyze's do (reader.sniff_bytes)."""
    splitter = _LineSplitter(path if path != "-" else "<stdin>", on_envelopes, packs)
    if path == "-":
        if stdin is None:
            raise InputError(
                "'-' given but there is no standard input", hint="pipe a log in: kubectl logs -f POD | logphase watch -"
            )
        yield from _follow_stream(stdin, splitter, stop, poll_s, on_bytes)
    else:
        yield from _follow_file(Path(path), splitter, stop, poll_s, on_bytes, on_note or (lambda _: None))


def _follow_file(
    path: Path,
    splitter: _LineSplitter,
    stop: Callable[[], bool],
    poll_s: float,
    on_bytes: Callable[[bytes], None] | None,
    on_note: Callable[[str], None],
) -> Generator[list[Line], None, None]:
    import time

    handle: IO[bytes] | None = None
    identity: tuple[int, int] | None = None
    position = 0
    waiting_noted = False
    try:
        while not stop():
            if handle is None:
                handle = _open_followed(path)
                if handle is None:
                    if not waiting_noted:
                        on_note(f"waiting for {path} to appear")
                        waiting_noted = True
                    yield []
                    time.sleep(poll_s)
                    continue
                stat = os.fstat(handle.fileno())
                if S_ISFIFO(stat.st_mode):
                    # a named pipe is a stream: nothing to rotate or re-read, it ends when its writer closes
                    waiting = partial(on_note, f"waiting for a writer on {path} (a named pipe)")
                    yield from _follow_stream(handle, splitter, stop, poll_s, on_bytes, on_no_writer=waiting)
                    return
                identity, position = (stat.st_dev, stat.st_ino), 0
            data = handle.read(CHUNK_BYTES)
            if data:
                if position == 0:
                    _refuse_unfollowable(path, data)
                position += len(data)
                if on_bytes is not None:
                    on_bytes(data)
                lines = splitter.feed(data)
                yield lines  # even empty (a runaway line): the caller keeps its deadlines while a big file is read
                if len(data) == CHUNK_BYTES:
                    continue  # more is waiting: read on before sleeping
            else:
                replaced = _replaced(path, identity)
                if replaced:
                    on_note(f"{path} was replaced (rotated): following the new file")
                    yield splitter.end_line()
                    handle.close()
                    handle = None
                    continue
                if os.fstat(handle.fileno()).st_size < position:
                    on_note(f"{path} shrank (truncated): reading it again from the start")
                    handle.seek(0)
                    position = 0
                    yield splitter.end_line()
                    continue
                yield splitter.settle()
            time.sleep(poll_s)
    finally:
        if handle is not None:
            handle.close()


def _open_followed(path: Path) -> IO[bytes] | None:
    """The log opened for following, or None while it does not exist. A named pipe is opened
    without waiting for its writer (a plain open blocks until one comes, past any --timeout)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except PermissionError:
        raise InputError(f"{path}: permission denied", hint="run as a user that can read it") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}", hint="check the file and the disk") from None
    mode = os.fstat(descriptor).st_mode
    refusal: InputError | None = None
    if S_ISDIR(mode):
        refusal = InputError(f"{path}: is a directory", hint="name the log file inside it")
    elif (S_ISCHR(mode) or S_ISBLK(mode)) and path.resolve() != Path(os.devnull):
        refusal = InputError(
            f"{path}: a device, not a log (it never ends)",
            hint="give a log file, or pipe a stream in: COMMAND | logphase watch -",
        )
    if refusal is not None:
        os.close(descriptor)
        raise refusal
    if not S_ISFIFO(mode):
        os.set_blocking(descriptor, True)
    return open(descriptor, "rb", buffering=0)


def _refuse_unfollowable(path: Path, head: bytes) -> None:
    """A followed file's first bytes: a compressed file is finished (analyze reads it), binary is no log."""
    if compression_of(head[:6]) is not None:
        raise InputError(f"{path}: a compressed file cannot be followed", hint=f"use: logphase analyze {path}")
    refuse_binary(str(path), head[:SNIFF_BYTES])


def _replaced(path: Path, identity: tuple[int, int] | None) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False  # rotated away and not yet re-created: keep the old file until it is
    return (stat.st_dev, stat.st_ino) != identity


def _follow_stream(
    stream: IO[bytes],
    splitter: _LineSplitter,
    stop: Callable[[], bool],
    poll_s: float,
    on_bytes: Callable[[bytes], None] | None,
    *,
    on_no_writer: Callable[[], None] | None = None,
) -> Generator[list[Line], None, None]:
    """Standard input or a named pipe, until it ends. With `on_no_writer` (a named pipe), an end
    before the first byte is a pipe no writer has opened yet: it is waited for, and said once."""
    import select
    import time

    try:
        descriptor: int | None = stream.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        descriptor = None  # an in-memory stream: reads never block for long
    started = False
    capacity = _pipe_capacity(descriptor)
    read_at = time.monotonic()
    while not stop():
        if descriptor is not None:
            ready, _, _ = select.select([descriptor], [], [], poll_s)
            if not ready:
                yield splitter.settle()
                continue
            data, ended = _available(descriptor)
        else:
            data = stream.read(CHUNK_BYTES)
            ended = 0 < len(data) < CHUNK_BYTES  # an in-memory stream's short read is its end
        if not data:
            if on_no_writer is not None and not started:
                on_no_writer()
                on_no_writer = _said_once
                yield []
                time.sleep(poll_s)
                continue
            yield splitter.end_line()
            return
        if not started:
            refuse_binary(
                "<stdin>" if on_no_writer is None else "the pipe", data[:SNIFF_BYTES]
            )  # /dev/urandom piped in
        started = True
        if on_bytes is not None:
            on_bytes(data)
        if ended:
            # the writer closed right after this: its last line (no newline after it, a paste's exception line) comes
            # in the same batch as the lines before it, so a verdict is not taken before it (the header of the
            # traceback it ends is no verdict of its own)
            yield splitter.feed(data) + splitter.end_line()
            return
        yield splitter.feed(data)
        # a trickle is batched instead of woken for every write; a stream is slept on only as long as
        # it takes to fill a quarter of the pipe at the rate it came (a full pipe stalls its writer)
        now = time.monotonic()
        rate, read_at = len(data) / max(now - read_at, 1e-3), now
        time.sleep(min(poll_s, capacity / 4 / rate))


# What one poll reads of a pipe at most: all that is waiting, up to this (a chatty server's burst).
FOLLOW_BATCH_BYTES = 8 << 20
# A pipe is asked to hold this much (Linux: 64 KB by default; an unprivileged process may raise it to
# /proc/sys/fs/pipe-max-size, 1 MB by default), so a writer is not held up while a batch is judged.
PIPE_BYTES = 1 << 20


def _pipe_capacity(descriptor: int | None) -> int:
    """The bytes the pipe holds (raised to PIPE_BYTES where allowed); CHUNK_BYTES for what is no pipe."""
    if descriptor is None:
        return CHUNK_BYTES
    import fcntl

    try:
        if S_ISFIFO(os.fstat(descriptor).st_mode):
            with contextlib.suppress(OSError):  # over pipe-max-size: keep what it has
                fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            return int(fcntl.fcntl(descriptor, fcntl.F_GETPIPE_SZ))
    except (OSError, AttributeError):  # not Linux
        pass
    return CHUNK_BYTES


def _available(descriptor: int) -> tuple[bytes, bool]:
    """What is waiting in the pipe (or file) now, up to FOLLOW_BATCH_BYTES: one read returns at most
    what the pipe holds (64 KB), so a poll reads on while more is ready; and whether a read found the
    end after it (the writer closed)."""
    import select

    parts: list[bytes] = []
    size = 0
    while size < FOLLOW_BATCH_BYTES:
        try:
            data = os.read(descriptor, min(CHUNK_BYTES, FOLLOW_BATCH_BYTES - size))
        except BlockingIOError:  # a non-blocking pipe whose writer has not written yet
            break
        if not data:
            return b"".join(parts), True  # the end (an empty first read: the caller's `not data`)
        parts.append(data)
        size += len(data)
        if not select.select([descriptor], [], [], 0)[0]:
            break
    return b"".join(parts), False


def _said_once() -> None:
    """The note about a pipe without a writer, after it was said."""


# Bytes that make a line need clean_line (a bar's `\r`, colour, colour codes whose ESC was lost: their reset `[0m`, or
# written out: the reader's table, a linkifier's link, a glued bar); a line that may hold records glued by a lost
# newline or a bar's (reader.glued) is told by its text.
CAREFUL_BYTES = (b"\r", b"\x1b", b"[0m", *WRITTEN_ESCAPE_BYTES, AUTOLINK_BYTES, b"%|")


class _LineSplitter:
    """Bytes as they arrive → cleaned `Line`s; keeps the unfinished line. `\\r` updates of an
    unfinished line come out once a later update or a quiet poll shows they are complete. The
    envelopes are sniffed from the first bytes that arrive (a followed log is never newest first)."""

    def __init__(
        self, name: str = "<stdin>", on_envelopes: Callable[[str], None] | None = None, packs: PackSet | None = None
    ) -> None:
        self.name, self.on_envelopes, self.packs = name, on_envelopes, packs
        self.pending = bytearray()
        self.emitted = 0  # bytes at the start of `pending` already given out as `\r` updates
        self.number = 0
        self.dropping = False
        self.unwrapper: Unwrapper | None = None
        self.sniffed = False
        self.head = bytearray()  # the first bytes, until the envelopes are decided

    def feed(self, data: bytes) -> list[Line]:
        if not self.sniffed:
            # the envelopes are decided on the first whole lines that arrive (at most SNIFF_BYTES, as
            # `read_lines` does), or on what came before the first quiet moment
            self.head += data
            if b"\n" not in self.head and len(self.head) < SNIFF_BYTES:
                return []
            data = self._sniff()
        out: list[Line] = []
        start = 0
        bulk = self.unwrapper is None
        marks = dict.fromkeys(CAREFUL_BYTES, -1)  # where each marker is next found (-1: not looked for)
        while True:
            if bulk and not self.pending and not self.emitted and not self.dropping:
                start, bulk = self._plain_lines(data, start, out, marks)
            end = data.find(b"\n", start)
            if end < 0:
                break
            self._append(data[start:end])
            out.extend(self._complete())
            start = end + 1
        self._append(data[start:])
        cut = self.pending.rfind(b"\r")
        if cut > 0 and cut >= self.emitted:
            out.extend(self._segment(bytes(self.pending[self.emitted : cut])))
            del self.pending[:cut]
            self.emitted = 0
        return out

    def _plain_lines(self, data: bytes, start: int, out: list[Line], marks: dict[bytes, int]) -> tuple[int, bool]:
        """The whole lines from `start` up to the next one that needs `clean_line`'s care (a
        `\r`, a colour code, a container prefix, a glued bar), decoded in one go; returns where
        the rest starts, and whether to try again after that line (not when these lines hold
        invalid UTF-8, a runaway line or a Kubernetes stamp: then every line takes the slow way)."""
        end = data.rfind(b"\n", start) + 1
        for marker, found in marks.items():
            if found < start:  # passed (or not looked for yet): each byte is searched once per feed
                found = data.find(marker, start)
                marks[marker] = found = len(data) if found < 0 else found
            if found < end:
                end = data.rfind(b"\n", start, found) + 1
        if end <= start:
            return start, True
        try:
            texts = data[start:end].decode("utf-8").split("\n")
        except UnicodeDecodeError:
            return start, False
        texts.pop()  # after the last newline
        if any(len(text) > MAX_LINE_BYTES // 4 for text in texts):
            return start, False  # maybe a runaway line (bytes, not characters, count)
        for number, text in enumerate(texts, self.number + 1):
            if glued(text):
                out.extend(line_updates(Unwrapped(number, text), 0))
            else:
                out.append(Line(number, text, 0))
        self.number += len(texts)
        return end, True

    def _sniff(self) -> bytes:
        self.sniffed = True
        head, self.head = bytes(self.head), bytearray()
        whole = head[: head.rfind(b"\n", 0, SNIFF_BYTES) + 1] or head[:SNIFF_BYTES]
        envelopes = replace(sniff_bytes(whole, packs=self.packs), newest_first=False)
        if envelopes:
            self.unwrapper = Unwrapper(envelopes)
            for note in envelopes.notes(self.name):
                if self.on_envelopes is not None:
                    self.on_envelopes(note)
        return head

    def settle(self) -> list[Line]:
        """Nothing new arrived: the bar update that is pending is complete."""
        if not self.sniffed:
            return self.feed(self._sniff()) + self.settle() if self.head else []
        if b"\r" not in self.pending or len(self.pending) <= self.emitted:
            return []
        out = self._segment(bytes(self.pending[self.emitted :]))
        self.emitted = len(self.pending)
        return out

    def end_line(self) -> list[Line]:
        """The input ended or was replaced: what is pending is a line of its own."""
        out = self.feed(self._sniff()) if not self.sniffed else []
        if self.pending or self.emitted:
            out += self._complete()
        tail = self.unwrapper.end() if self.unwrapper is not None else []
        return out + [line for held in tail for line in line_updates(held, 0)]

    def _append(self, data: bytes) -> None:
        if self.dropping:
            return
        self.pending += data
        # a runaway line, or a bar's runaway update (what follows its last `\r`: those before it are
        # given out as they settle), keeps its head; the rest waits for its newline
        update = self.pending.rfind(b"\r") + 1
        if len(self.pending) - update > MAX_LINE_BYTES:
            del self.pending[update + MAX_LINE_BYTES :]
            self.dropping = True

    def _complete(self) -> list[Line]:
        self.number += 1
        rest = bytes(self.pending[self.emitted :])
        out = [] if self.emitted and not rest.strip(b"\r \t") else self._clean(rest, self.number)
        self.pending.clear()
        self.emitted = 0
        self.dropping = False
        return out

    def _segment(self, raw: bytes) -> list[Line]:
        return self._clean(raw, self.number + 1) if raw.strip(b"\r \t") else []

    def _clean(self, raw: bytes, number: int) -> list[Line]:
        if self.unwrapper is None:
            return list(clean_line(raw, number, 0))
        return [line for held in self.unwrapper.feed(number, decoded_text(raw)) for line in line_updates(held, 0)]
