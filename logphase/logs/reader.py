"""The only log I/O: files, stdin, compressed files and tar members, read in chunks as `Line`s."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import tarfile
import zlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from stat import S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO
from typing import IO, Any, cast

import zstandard

from logphase.errors import InputError

CHUNK_BYTES = 1 << 20
# Longer lines keep their first MAX_LINE_BYTES: no pattern needs more, and memory stays bounded.
MAX_LINE_BYTES = 1 << 16
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
KUBERNETES_PREFIX = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:(?:stdout|stderr) [FP] )?"
)
BAR_THEN_LOG_LINE = re.compile(r"(?<=\])(?=\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d)")
COMPOSE_PREFIX = re.compile(r"^(?P<service>[\w.\[\]-]+)\s*\| ")

# What reading a source's stream raises when the file ends early or is damaged (see `damaged`).
READ_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
    tarfile.TarError,
)

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a log, cleaned: `number` is the physical line (the `\\r` updates of a progress
    bar share their line's number), `source` indexes the inputs of this run."""

    number: int
    text: str
    source: int


@dataclass
class LogSource:
    """One readable log: a file, stdin, or a member of a tar archive. Counters fill while reading."""

    name: str
    open_stream: Callable[[], IO[bytes]]
    finished: bool = True  # archives and stdin are finished logs; plain files may still grow
    modified: float | None = None  # mtime of a plain file: when it was last written
    lines: int = 0
    bytes: int = 0
    truncated_lines: int = 0
    _index: int = field(default=0, repr=False)


def open_sources(
    paths: Sequence[str], stdin: IO[bytes] | None = None, *, dumps: list[str] | None = None
) -> list[LogSource]:
    """Resolve the command line's paths into sources; archives expand into their members.
    Torch flight-recorder dumps among the paths go to `dumps` when it is given (else: an error).

    Errors that a user can fix (missing file, directory, no permission) are raised here, before
    anything is read, so a typo in the third path does not waste a scan of the first two."""
    sources: list[LogSource] = []
    for path in paths:
        if path == "-":
            if stdin is None:
                raise InputError(
                    "'-' given but there is no standard input",
                    hint="pipe a log in: kubectl logs POD | logphase analyze -",
                )
            sources.extend(_stdin_sources(stdin))
            continue
        sources.extend(_file_sources(Path(path), dumps))
    for index, source in enumerate(sources):
        source._index = index
    return sources


def _file_sources(path: Path, dumps: list[str] | None) -> list[LogSource]:
    if not path.exists():
        raise InputError(f"{path}: no such file", hint="check the path; use '-' to read standard input")
    if path.is_dir():
        raise InputError(f"{path}: is a directory", hint=f"name the log files inside it, e.g. {path}/*.log")
    if path.is_fifo():
        # a named pipe is read once, as standard input is (its head cannot be sniffed, then read again)
        sources = _stdin_sources(path.open("rb"))
        for source in sources:
            source.name = str(path) + source.name.removeprefix("<stdin>")
        return sources
    try:
        with path.open("rb") as raw:
            stat = os.fstat(raw.fileno())
            if (S_ISCHR(stat.st_mode) or S_ISBLK(stat.st_mode)) and path.resolve() != Path(os.devnull):
                raise InputError(
                    f"{path}: a device, not a log (it never ends)",
                    hint="give a log file, or pipe a stream in: COMMAND | logphase analyze -",
                )
            compressed = _compression(raw.read(6)) is not None
            raw.seek(0)
            head = _decompressed_head(raw, str(path))
    except PermissionError:
        raise InputError(
            f"{path}: permission denied", hint="run as a user that can read it, or copy it somewhere readable"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}", hint="check the file and the disk") from None
    if len(head) >= 512 and head[257:262] == b"ustar":
        return _tar_sources(path)
    if dumps is not None and looks_like_flight_recorder(head):
        dumps.append(str(path))
        return []
    refuse_binary(str(path), head)
    return [
        LogSource(
            name=str(path),
            open_stream=lambda: decompressing(path.open("rb"), str(path)),
            finished=compressed,
            modified=None if compressed else stat.st_mtime,
        )
    ]


def _decompressed_head(raw: IO[bytes], name: str) -> bytes:
    """The first SNIFF_BYTES of a file's content; what a damaged archive gives before it breaks."""
    stream = decompressing(raw, name)
    head = b""
    try:
        while len(head) < SNIFF_BYTES and (part := stream.read(SNIFF_BYTES - len(head))):
            head += part
    except (OSError, EOFError, zlib.error, lzma.LZMAError, zstandard.ZstdError):
        pass  # reading the source reports where it breaks, and keeps what came before
    return head


def _tar_sources(path: Path) -> list[LogSource]:
    """Each regular member is a log of its own (one per node or rank, typically)."""
    try:
        with tarfile.open(path, "r:*") as archive:
            members = [m.name for m in archive.getmembers() if m.isfile()]
    except READ_ERRORS as exc:
        raise InputError(
            f"{path}: broken or truncated archive: {exc}", hint="check the download or re-create the archive"
        ) from None
    if not members:
        raise InputError(f"{path}: the archive holds no files", hint="give the logs themselves, or an archive of them")

    def opener(member: str) -> Callable[[], IO[bytes]]:
        def open_member() -> IO[bytes]:
            archive = tarfile.open(path, "r:*")  # noqa: SIM115 - closed with the member stream
            extracted = archive.extractfile(member)
            if extracted is None:  # pragma: no cover - members were filtered to regular files
                raise InputError(f"{path}:{member}: not a regular file")
            return cast(IO[bytes], io.BufferedReader(_ClosingStream(extracted, archive), CHUNK_BYTES))

        return open_member

    return [LogSource(name=f"{path}:{name}", open_stream=opener(name)) for name in members]


def _stdin_sources(stdin: IO[bytes]) -> list[LogSource]:
    stream = decompressing(stdin, "<stdin>")
    peekable = io.BufferedReader(cast(io.RawIOBase, stream), CHUNK_BYTES)
    head = peekable.peek(512)[:512]
    if len(head) == 512 and head[257:262] == b"ustar":
        return _stdin_tar_sources(peekable)
    refuse_binary("<stdin>", peekable.peek(SNIFF_BYTES)[:SNIFF_BYTES])
    return [LogSource(name="<stdin>", open_stream=lambda: peekable)]


def _stdin_tar_sources(stream: IO[bytes]) -> list[LogSource]:
    """A tar on stdin can only be read once, in order: its members become one source each,
    read one after the other (no merging by time is needed: judging uses explicit times)."""
    archive = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 - lives as long as stdin
    sources: list[LogSource] = []
    try:
        for member in archive:
            if not member.isfile():
                continue
            extracted = archive.extractfile(member)
            if extracted is None:
                continue
            # stream mode forbids going back: spool the member to a temporary file, not memory
            sources.append(LogSource(name=f"<stdin>:{member.name}", open_stream=_rewinder(_spool(extracted))))
    except READ_ERRORS as exc:
        raise InputError(
            f"<stdin>: broken or truncated archive: {exc}", hint="check the archive that was piped in"
        ) from None
    return sources


def _spool(stream: IO[bytes]) -> IO[bytes]:
    import tempfile

    spool = tempfile.TemporaryFile()  # noqa: SIM115 - returned: the source reads it later
    while chunk := stream.read(CHUNK_BYTES):
        spool.write(chunk)
    return cast(IO[bytes], spool)


def _rewinder(stream: IO[bytes]) -> Callable[[], IO[bytes]]:
    def rewound() -> IO[bytes]:
        stream.seek(0)
        return stream

    return rewound


SNIFF_BYTES = 8192  # what is read of each input to tell a log from a binary file
# Bytes a text log does not hold: C0 controls but tab, newline, form feed, carriage return,
# backspace and escape (colour codes).
_CONTROL = bytes(sorted(set(range(32)) - {8, 9, 10, 12, 13, 27}))


def looks_like_flight_recorder(head: bytes) -> bool:
    """A pickled dict (protocol 2+) that opens with torch's flight-recorder keys: `version` first,
    then `pg_config` (large in a job of many ranks and groups: `entries` can be megabytes on)."""
    return head.startswith(b"\x80") and b"version" in head[:64] and (b"pg_config" in head or b"entries" in head)


def refuse_binary(name: str, head: bytes) -> None:
    """Raise InputError when the first bytes of an input (decompressed) are not text. A run of
    NUL bytes at the start is a hole a log truncated under a running writer keeps: it is skipped."""
    sample = head.lstrip(b"\x00")
    if not sample:
        return
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"{name}: a UTF-16 text file", hint=f"convert it first: iconv -f UTF-16 -t UTF-8 {name} > {name}.utf8"
        )
    if looks_like_flight_recorder(sample):
        raise InputError(
            f"{name}: a torch flight-recorder dump (a binary pickle), not a log",
            hint="`logphase analyze` reads the dumps of all ranks with their logs (logphase analyze *.log fr/*); "
            "torch's own analyzer: python -m torch.distributed.flight_recorder.fr_trace DIR -p PREFIX",
        )
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    if controls > len(sample) // 20:
        raise InputError(
            f"{name}: a binary file, not a text log ({controls} control bytes in its first {len(sample)})",
            hint="give the log itself; .gz, .bz2, .xz, .zst and .tar are read as they are",
        )


def _compression(head: bytes) -> str | None:
    for magic, name in ((GZIP_MAGIC, "gzip"), (BZIP2_MAGIC, "bzip2"), (XZ_MAGIC, "xz"), (ZSTD_MAGIC, "zstd")):
        if head.startswith(magic):
            return name
    return None


def decompressing(raw: IO[bytes], name: str) -> IO[bytes]:
    """Decompress by magic bytes, not by file name: logs get renamed, pipes have no name. Every
    input (logs, flight-recorder dumps, stack dumps) is opened through this."""
    buffered = cast(io.BufferedReader, raw if hasattr(raw, "peek") else io.BufferedReader(cast(io.RawIOBase, raw)))
    kind = _compression(buffered.peek(6)[:6])
    if kind == "gzip":
        return cast(IO[bytes], gzip.GzipFile(fileobj=buffered, mode="rb"))
    if kind == "bzip2":
        return cast(IO[bytes], bz2.BZ2File(buffered))
    if kind == "xz":
        return cast(IO[bytes], lzma.LZMAFile(buffered))
    if kind == "zstd":
        return cast(IO[bytes], io.BufferedReader(_ZstdFrames(buffered), CHUNK_BYTES))
    return cast(IO[bytes], buffered)


class _ZstdFrames(io.RawIOBase):
    """zstd frames one after the other; a frame cut short raises EOFError like gzip, bz2 and xz do
    (zstandard's own stream reader ends quietly there: a truncated .zst read as empty)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._fed = False  # the current frame has had input
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._raw.read(CHUNK_BYTES)
            if not chunk:
                if self._fed and not self._frame.eof:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
                return 0
            self._pending = self._feed(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            self._fed = True
            out.append(self._frame.decompress(chunk))
            if not self._frame.eof:
                break
            chunk = self._frame.unused_data  # the next frame starts here
            self._frame = zstandard.ZstdDecompressor().decompressobj()
            self._fed = False
        return b"".join(out)


class _ClosingStream(io.RawIOBase):
    """A tar member that closes its archive with it."""

    def __init__(self, member: IO[bytes], archive: tarfile.TarFile) -> None:
        self._member, self._archive = member, archive

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._member.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._member.close()
        self._archive.close()
        super().close()


# --- bytes → lines ----------------------------------------------------------------------------------


def open_source(source: LogSource) -> IO[bytes]:
    """The source's stream; a failure to open it as the InputError a user can act on."""
    try:
        return source.open_stream()
    except OSError as exc:
        raise InputError(f"{source.name}: cannot open: {exc}", hint="check the file and its permissions") from None


def damaged(source: LogSource, after_line: int, error: BaseException) -> InputError:
    """One of READ_ERRORS, raised after `after_line` whole lines, as the error the user sees."""
    return InputError(
        f"{source.name}: the file ends early or is damaged after line {after_line}: {error}",
        hint="the file is truncated or corrupt: copy it again, or save what is left "
        "(zcat FILE > part.log) and analyze that",
    )


def read_lines(source: LogSource, *, start_line: int = 0, start_byte: int = 0) -> Iterator[Line]:
    """Stream a source as cleaned `Line`s in constant memory.

    Decompression and archive errors surface as InputError with what was read so far kept:
    the lines already yielded stay valid, so a truncated .gz still gets a report."""
    number = start_line
    stream = open_source(source)
    try:
        if start_byte:
            stream.seek(start_byte)
        for raw in _raw_lines(source, stream):
            number += 1
            source.lines = number
            yield from clean_line(raw, number, source._index)
    except READ_ERRORS as exc:
        raise damaged(source, number, exc) from None
    finally:
        stream.close()


def _raw_lines(source: LogSource, stream: IO[bytes]) -> Iterator[bytes]:
    pending = bytearray()
    dropping = False
    # read1 hands over what was decompressed before a truncated archive's end; read() loses it
    read = getattr(stream, "read1", stream.read)
    while chunk := read(CHUNK_BYTES):
        source.bytes += len(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not dropping:
                    pending += chunk[start : start + MAX_LINE_BYTES - len(pending)]
                    if len(pending) >= MAX_LINE_BYTES:
                        dropping = True
                        source.truncated_lines += 1
                break
            if not dropping:
                pending += chunk[start : start + max(0, min(end - start, MAX_LINE_BYTES - len(pending)))]
                if end - start > MAX_LINE_BYTES:
                    source.truncated_lines += 1
            yield bytes(pending)
            pending.clear()
            dropping = False
            start = end + 1
    if pending:
        yield bytes(pending)


def clean_line(raw: bytes, number: int, source: int) -> Iterator[Line]:
    """One physical line's bytes as the Lines logphase reads: decoded (bad UTF-8 replaced), colour
    codes and container prefixes stripped, tqdm's `\r` updates split (all keep `number`)."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    text = text.rstrip("\r")
    text = _strip_container_prefix(text)
    if "%|" in text and "][" in text:
        # a bar without its final newline, glued to the next log line: `…?it/s][2025-03-08 …] …`
        text = BAR_THEN_LOG_LINE.sub("\r", text)
    if "\r" not in text:
        yield Line(number, text, source)
        return
    # tqdm rewrites its bar with \r: each update is a line of its own at the same physical line
    for part in text.split("\r"):
        part = _strip_container_prefix(part)
        if part.strip():
            yield Line(number, part, source)


def _strip_container_prefix(text: str) -> str:
    if text[:2].isdigit() and (found := KUBERNETES_PREFIX.match(text)):
        text = text[found.end() :]
    if "| " in text[:64] and (found := COMPOSE_PREFIX.match(text)):
        text = text[found.end() :]
    return text


# --- follow mode (watch) ----------------------------------------------------------------------------

FOLLOW_POLL_S = 0.25


def follow_lines(
    path: str,
    stop: Callable[[], bool],
    poll_s: float = FOLLOW_POLL_S,
    *,
    stdin: IO[bytes] | None = None,
    on_bytes: Callable[[bytes], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> Generator[list[Line], None, None]:
    """Follow a growing log like `tail -F`, in batches: each item is the lines completed since the
    last one, an empty list when nothing arrived within `poll_s` (so the caller can do its periodic
    work), until `stop()` is true or standard input ends.

    A file replaced by another (rotation: a new inode) is read to its end, then the new file from
    its start; a file that shrinks (truncation, copytruncate) is read again from its start; a file
    that does not exist yet is waited for. Line numbers run on across rotations. A progress bar
    updated with `\\r` yields each update once it has settled, before its line ends. `on_bytes`
    sees every byte read (the content hash of `--record`), `on_note` what happened to the file."""
    splitter = _LineSplitter()
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
    if _compression(head[:6]) is not None:
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
    while not stop():
        if descriptor is not None:
            ready, _, _ = select.select([descriptor], [], [], poll_s)
            if not ready:
                yield splitter.settle()
                continue
            try:
                data = os.read(descriptor, CHUNK_BYTES)
            except BlockingIOError:  # a non-blocking pipe whose writer has not written yet
                data = b""
        else:
            data = stream.read(CHUNK_BYTES)
        if not data:
            if on_no_writer is not None and not started:
                on_no_writer()
                on_no_writer = _said_once
                yield []
                time.sleep(poll_s)
                continue
            yield splitter.end_line()
            return
        started = True
        if on_bytes is not None:
            on_bytes(data)
        yield splitter.feed(data)
        if len(data) < CHUNK_BYTES:
            time.sleep(poll_s)  # batch a steady trickle instead of waking for every write


def _said_once() -> None:
    """The note about a pipe without a writer, after it was said."""


# Bytes that make a line need clean_line (a bar's `\r`, colour, a glued bar, a compose prefix).
CAREFUL_BYTES = (b"\r", b"\x1b", b"%|", b"| ")


class _LineSplitter:
    """Bytes as they arrive → cleaned `Line`s; keeps the unfinished line. `\\r` updates of an
    unfinished line come out once a later update or a quiet poll shows they are complete."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.emitted = 0  # bytes at the start of `pending` already given out as `\r` updates
        self.number = 0
        self.dropping = False

    def feed(self, data: bytes) -> list[Line]:
        out: list[Line] = []
        start = 0
        bulk = True
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
        if any(len(text) > MAX_LINE_BYTES // 4 or text[:2].isdigit() for text in texts):
            return start, False  # maybe a runaway line (bytes, not characters, count) or a Kubernetes stamp
        out.extend(Line(number, text, 0) for number, text in enumerate(texts, self.number + 1))
        self.number += len(texts)
        return end, True

    def settle(self) -> list[Line]:
        """Nothing new arrived: the bar update that is pending is complete."""
        if b"\r" not in self.pending or len(self.pending) <= self.emitted:
            return []
        out = self._segment(bytes(self.pending[self.emitted :]))
        self.emitted = len(self.pending)
        return out

    def end_line(self) -> list[Line]:
        """The input ended or was replaced: what is pending is a line of its own."""
        if not self.pending and not self.emitted:
            return []
        return self._complete()

    def _append(self, data: bytes) -> None:
        if self.dropping:
            return
        room = MAX_LINE_BYTES - len(self.pending)
        if len(data) > room and b"\r" not in self.pending and b"\r" not in data:
            self.pending += data[: max(0, room)]
            self.dropping = True  # a runaway line keeps its head; the rest waits for its newline
            return
        self.pending += data

    def _complete(self) -> list[Line]:
        self.number += 1
        rest = bytes(self.pending[self.emitted :])
        out = [] if self.emitted and not rest.strip(b"\r \t") else list(clean_line(rest, self.number, 0))
        self.pending.clear()
        self.emitted = 0
        self.dropping = False
        return out

    def _segment(self, raw: bytes) -> list[Line]:
        return list(clean_line(raw, self.number + 1, 0)) if raw.strip(b"\r \t") else []
