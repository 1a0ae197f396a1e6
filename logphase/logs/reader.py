"""Log I/O: files, stdin, compressed files and tar members, read in chunks as `Line`s out of their
envelopes (following a growing log is logs/follow.py's)."""

from __future__ import annotations

import io
import lzma
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from stat import S_ISBLK, S_ISCHR, S_ISREG
from typing import IO, TYPE_CHECKING, Any, cast

import zstandard

from logphase.errors import InputError
from logphase.frames import PYTHON_FRAME, SIGNAL_HANDLER_FRAME
from logphase.logs.envelope import (
    READ_MESSAGE,
    READ_PREFIX,
    RECORD_START,
    Envelopes,
    Unwrapped,
    Unwrapper,
    sniff,
)

if TYPE_CHECKING:
    from logphase.packs import PackSet

CHUNK_BYTES = 1 << 20
# Longer lines keep their first MAX_LINE_BYTES: no pattern needs more, and memory stays bounded.
MAX_LINE_BYTES = 1 << 16
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# The same escapes in a run of whole lines' bytes (an OSC never crosses a line: `decoded_text` reads one
# line); an escape right after a non-ASCII byte may end a broken UTF-8 sequence (see `uncoloured`).
ANSI_ESCAPE_BYTES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")
ESCAPE_AFTER_NON_ASCII = re.compile(rb"[\x80-\xff]\x1b")
# ESC written out as text, where a collector or a viewer would not pass the byte on: rsyslog's control-character
# escape `#033` (journald / syslog / CloudWatch exports: realworld 269, 272, 813), the caret notation of `cat -v` and
# less (`^[`), a JSON export's `\u001b` (RFC 8259 escapes every control character), a repr's `\x1b`, a shell's or a
# source's `\033` and `\e`; and U+FFFD where a paste decoded the byte as text (a terminal's bytes copied through a page:
# Ray's `\ufffd[36m(WorkerDict pid=…)\ufffd[0m Fatal Python error: …`, realworld 786, the one real log of it). A colour
# code (SGR `m`, erase-line `K`) behind one is removed wherever it stands: the written ESC says what it is (a U+FFFD
# before other bracketed text, `\ufffd[INFO]`, is a broken byte before the line's own words and stays). One table, so
# another spelling is one more entry.
ESC_SPELLINGS = ("#033", "^[", "\\033", "\\x1b", "\\x1B", "\\u001b", "\\u001B", "\\e", "\ufffd")
WRITTEN_ESCAPE = re.compile("(?:" + "|".join(map(re.escape, ESC_SPELLINGS)) + r")\[[0-9;]*[mK]")
# what a line holding one of them holds for sure, in few looks (every line is looked at): the backslash spellings by
# their backslash
_ESC_LEADS = tuple(sorted({"\\" if spelling.startswith("\\") else spelling for spelling in ESC_SPELLINGS}))
# What a line holding a written colour code holds, as bytes (the fast path and watch hand such a line to the reader's
# cleaning, as they do a line with the ESC byte)
WRITTEN_ESCAPE_BYTES = tuple(spelling.encode() + b"[" for spelling in ESC_SPELLINGS)
# Colour codes whose ESC byte was lost altogether (a terminal's output pasted into an issue: TGI's
# `[2m2024-…Z[0m [32m INFO[0m …`): removed only from a line that holds the reset `[0m`, which no log writes as
# text of its own.
ANSI_REMNANT = re.compile(r"\[[0-9;]*m")
# A link a renderer made of text that looks like an address or an issue reference, kept where a rendered page was
# copied back as markdown: a linkifier reads `.py` as a top-level domain (vLLM's location `[core.py:710]` became
# `[[core.py:710](http://core.py:710/)]` on every line, realworld 943; Ray's `ip: 10.29.214.5` became
# `[10.29.214.5](http://10.29.214.5/)`, 583), and GitHub links `#N` to the issue or pull request N of the repository it
# is shown in (docs.github.com, "Autolinked references and URLs": `#26`, `GH-26`, `owner/repo#26`; c10's native frames
# `frame #44: …` became `frame [#44](https://github.com/OWNER/REPO/pull/44): …`, 879). Undone only where the link is
# provably one: its text is its own target (less the scheme, or a trailing slash), or such a reference to the issue its
# target ends with; a link the paste cut inside its target (the line's end) where what is left of it leads its text
# (943's last line, `[[core.py:710](http://core.py`). A link with other text is the writer's (FastAPI's
# `[FastAPI docs for Lifespan Events](https://…)` in its deprecation warning, 611) and stays. A number GitHub Actions'
# log view linked to a line of a job's step (`#step:S:L`) is copied as such a link too, the number its text: a
# traceback's `line [117](https://github.com/OWNER/REPO/actions/runs/R/job/J#step:9:118)` (realworld 1381; uv's CI,
# `line [113](…/job/31680084192?pr=8269#step:7:114)`), undone to the number.
AUTOLINK = re.compile(r"\[(?P<text>[^\[\]\s]+)\]\((?P<url>https?://(?P<rest>[^()\s]*))(?:(?P<end>\))|$)")
AUTOLINK_MARK = "](http"  # what a line holding one holds for sure
AUTOLINK_BYTES = AUTOLINK_MARK.encode()
_ISSUE_REFERENCE = re.compile(r"(?:#|GH-)(?P<number>\d+)|(?P<repo>[\w.-]+/[\w.-]+)#(?P<repo_number>\d+)")
_ACTIONS_LINE_URL = re.compile(
    r"https://github\.com/[\w.-]+/[\w.-]+/actions/runs/\d+/job/\d+(?:\?[^#\s]*)?#step:\d+:\d+"
)
_ISSUE_URL = re.compile(r"https://github\.com/(?P<repo>[\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(?P<number>\d+)/?")
# A bar without its final newline, glued to the next log line: `…?it/s][2025-03-08 …] …`
BAR_THEN_LOG_LINE = re.compile(rf"(?<=\])(?={RECORD_START})")
# tqdm's default bar ends `| n/total [elapsed<remaining, rate{, postfix}]` (tqdm std.py format_meter) and prints
# nothing after its `]`: text right after it is another writer's line that the bar's missing newline glued on, whatever
# it is (ROCm's `HW Exception by GPU node-9 …` after `366/903 [5:15:39<6:53:09, 46.16s/it]`: realworld 1240). A bar cut
# inside its bracket by another writer's record (`[02:52<1:48:00, 158.06s/i[rank0]:[E ProcessGroupNCCL.cpp:523] …`:
# realworld 1261) ends where that record's `[` starts. ASCII digits, so that the fast path's bytes trigger
# (`fast.plan.glued_bar`) matches at least as much.
BAR_END_THEN_TEXT = re.compile(
    rf"(?P<bar>[0-9][kMGTP]?/[0-9.]+[kMGTP]? \[[0-9][0-9:]*<(?:[0-9][0-9:]*|\?)(?:,[^\[\]\r\n]*)?)"
    rf"(?:(?P<end>\])(?=\S)|(?=\[)(?={RECORD_START}))"
)
# A log whose newlines were lost on the way (a terminal's copy that padded each line to its width with spaces and
# joined them, a form that collapsed a paste's line ends): records on one physical line, each after a run of spaces.
# Looked for in a line that long only (two rows of a narrow terminal, the padding of one) where a space comes twice
# in a row after some text.
COLLAPSED_RECORD = re.compile(rf"(?<=\S) {{2,}}(?={RECORD_START})")
# A traceback's frame (CPython's `  File "…", line N, in f`; faulthandler's without the comma) starts a record too,
# indented as its own line was, but only in a line so split or that holds two frames: a logger's prefix before one
# frame (vLLM's `ERROR … [core.py:708]   File "…"`, a script's `- INFO -   File "…"`) is the frame's own line.
COLLAPSED_FRAME = re.compile(r'(?<=\S) {2,}(?=File "[^"\n]*", line \d+,? in )')
FRAME_OPENING = 'File "'
COLLAPSED_MIN = 160
# A JSON-lines log (tracing-subscriber's `.json()`: TGI's launcher and router, `{"timestamp":"<RFC 3339>",…}` an
# event) whose newlines were lost, or whose records a paste cut and glued (realworld 1267: `"spans":[{"{"timestamp":…`):
# a record's opening after other text on the line starts a line of its own. Not after a `:`, `,` or `[` (an object
# nested as a value); JSON_GLUED_MARK is what such a line holds for sure.
JSON_GLUED_MARK = '{"timestamp":"'
JSON_GLUED = re.compile(r'(?<=[^\s:,\[])(?=\{"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d)')
# What reading a source's stream raises when the file ends early or is damaged (see `damaged`).
# An archive's tarfile errors arise only while archives.py walks it (its members are then byte
# ranges of a file): it catches them there, and a log that is no archive does not import tarfile.
READ_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
)

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a log, cleaned: `number` is the physical line (the `\\r` updates of a progress
    bar share their line's number), `source` indexes the inputs of this run. `stamp` and `rank` are
    what the line's envelope told (logphase/logs/envelope.py): the matcher uses them where the line has none."""

    number: int
    text: str
    source: int
    stamp: datetime | None = None
    rank: str | None = None


@dataclass(frozen=True)
class ContextLine:
    """A line shown around a root cause: its number and text."""

    line: int
    text: str


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
    envelopes: Envelopes | None = None  # sniffed from the first bytes; None: not yet
    path: str | None = None  # an uncompressed file: its bytes at their own offsets (workers read ranges of it)
    size: int | None = None  # a plain file: its size when opened, where every read of it stops (see `changes`)
    # a log collected from a cluster's node (nodes/logs.py): its ranks named `node:rank` where the server numbers
    # them per node (None: as the log names them), its node's clock minus this machine's, measured then
    rank_prefix: str | None = None
    clock_offset_s: float | None = None
    _index: int = field(default=0, repr=False)


def holds_at_most(source: LogSource, lines: int, *, read_limit: int = 1 << 20) -> bool:
    """Whether `source` is an uncompressed file of at most `lines` lines, told from its bytes when
    it has fewer than `read_limit` (a bigger one is not read here); False for any other source, and
    for a file that cannot be read now (reading it reports why)."""
    if source.path is None:
        return False
    try:
        if os.path.getsize(source.path) >= read_limit:
            return False
        with open(source.path, "rb") as file:
            data = file.read(read_limit)
    except OSError:
        return False
    if len(data) >= read_limit or compression_of(data[:6]) is not None:
        return False
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0) <= lines


def open_sources(
    paths: Sequence[str],
    stdin: IO[bytes] | None = None,
    *,
    dumps: list[str] | None = None,
    packs: PackSet | None = None,
) -> list[LogSource]:
    """Resolve the command line's paths into sources; archives expand into their members.
    Torch flight-recorder dumps among the paths go to `dumps` when it is given (else: an error).
    `packs`: the run's; sniffing never takes their own `(Name pid=N) ` tags for an envelope, and takes a
    leading column only where they read more lines without it (by default the shipped packs' tags, no column).

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
            sources.extend(_stdin_sources(stdin, packs))
            continue
        sources.extend(_file_sources(Path(path), dumps, packs))
    for index, source in enumerate(sources):
        source._index = index
    return sources


def _file_sources(path: Path, dumps: list[str] | None, packs: PackSet | None) -> list[LogSource]:
    if not path.exists():
        raise InputError(f"{path}: no such file", hint="check the path; use '-' to read standard input")
    if path.is_dir():
        raise InputError(f"{path}: is a directory", hint=f"name the log files inside it, e.g. {path}/*.log")
    if path.is_fifo():
        # a named pipe is read once, as standard input is (its head cannot be sniffed, then read again)
        sources = _stdin_sources(path.open("rb"), packs)
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
            compressed = compression_of(raw.read(6)) is not None
            raw.seek(0)
            head = _decompressed_head(raw, str(path))
    except PermissionError:
        raise InputError(
            f"{path}: permission denied", hint="run as a user that can read it, or copy it somewhere readable"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}", hint="check the file and the disk") from None
    if len(head) >= 512 and head[257:262] == b"ustar":
        from logphase.logs.archives import tar_sources  # archives builds on this module

        opened = lambda: decompressing(path.open("rb"), str(path))  # noqa: E731
        return tar_sources(str(path), opened, path=None if compressed else str(path), packs=packs)
    if dumps is not None and looks_like_flight_recorder(head):
        dumps.append(str(path))
        return []
    refuse_binary(str(path), head)
    # a plain file that grows while it is read (a live server's log) is read as it was when opened:
    # chasing its end, a reader whose chunks cost more than the writer's never ends (watch follows)
    size = None if compressed or not S_ISREG(stat.st_mode) else stat.st_size
    return [
        LogSource(
            name=str(path),
            open_stream=lambda: decompressing(_open_up_to(path, size), str(path)),
            finished=compressed,
            modified=None if compressed else stat.st_mtime,
            envelopes=sniff_bytes(head, packs=packs),
            path=None if compressed else str(path),
            size=size,
        )
    ]


def _open_up_to(path: Path, size: int | None) -> IO[bytes]:
    if size is None:
        return path.open("rb")
    return cast(IO[bytes], io.BufferedReader(_UpTo(path.open("rb", buffering=0), size)))


class _UpTo(io.RawIOBase):
    """A file's first `size` bytes: it ends there, or where the file ends first (it was truncated)."""

    def __init__(self, raw: io.FileIO, size: int) -> None:
        self._raw = raw
        self._size = size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def readinto(self, buffer: Any) -> int:
        left = self._size - self._raw.tell()
        if left <= 0:
            return 0
        view = memoryview(buffer)
        return self._raw.readinto(view[: min(left, len(view))]) or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def changes(source: LogSource) -> str | None:
    """What became of a plain file while it was read, as a note: it grew (what came after was not
    read), or it was truncated (the report covers what was read); None where it did not change."""
    if source.size is None or source.path is None:
        return None
    try:
        now = os.path.getsize(source.path)
    except OSError:
        return f"{source.name} was removed while it was read: the report covers the {source.bytes:,} bytes read"
    if now < source.size or source.bytes < source.size:
        return (
            f"{source.name} was truncated while it was read ({source.size:,} bytes when opened, {now:,} now): "
            f"the report covers the {min(source.bytes, source.size):,} bytes read"
        )
    if now > source.size:
        return (
            f"{source.name} grew by {now - source.size:,} bytes while it was read: the report covers the "
            f"{source.size:,} bytes it had when the read began (logphase watch follows a growing log)"
        )
    return None


def _decompressed_head(raw: IO[bytes], name: str) -> bytes:
    """The first SNIFF_BYTES of a file's content; what a damaged archive gives before it breaks."""
    stream = decompressing(raw, name)
    head = b""
    try:
        while len(head) < SNIFF_BYTES and (part := stream.read(SNIFF_BYTES - len(head))):
            head += part
    except READ_ERRORS:
        pass  # reading the source reports where it breaks, and keeps what came before
    return head


def _stdin_sources(stdin: IO[bytes], packs: PackSet | None) -> list[LogSource]:
    stream = decompressing(stdin, "<stdin>")
    peekable = io.BufferedReader(cast(io.RawIOBase, stream), CHUNK_BYTES)
    head = peekable.peek(512)[:512]
    if len(head) == 512 and head[257:262] == b"ustar":
        from logphase.logs.archives import tar_sources  # archives builds on this module

        return tar_sources("<stdin>", lambda: peekable, path=None, packs=packs)
    head = peekable.peek(SNIFF_BYTES)[:SNIFF_BYTES]
    refuse_binary("<stdin>", head)
    return [LogSource(name="<stdin>", open_stream=lambda: peekable, envelopes=sniff_bytes(head, packs=packs))]


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


def compression_of(head: bytes) -> str | None:
    """The compression a stream's first bytes announce (gzip, bzip2, xz, zstd), or None."""
    for magic, name in ((GZIP_MAGIC, "gzip"), (BZIP2_MAGIC, "bzip2"), (XZ_MAGIC, "xz"), (ZSTD_MAGIC, "zstd")):
        if head.startswith(magic):
            return name
    return None


# Decompression holds at most this much memory for its window (xz's dictionary, zstd's window): xz -9
# needs 65 MiB, zstd up to -19 needs 8 MiB (`--long`: 128 MiB, refused with the way to read it). A
# crafted header asks for 1.5 GiB.
DECODER_MEMORY = 96 << 20
# Past DECODED_FREE bytes out, a stream that has unpacked to over MAX_RATIO times its compressed size is a
# decompression bomb, not a log (a log compresses 5-50 times; deflate's own ceiling is 1032).
MAX_RATIO = 1000
DECODED_FREE = 64 << 20
# zstd's decompressor has no output bound per call: it is handed this many compressed bytes at a time,
# which decode to at most 32 MiB (a 4-byte RLE block is 128 KiB).
ZSTD_FEED = 1024


def decompressing(raw: IO[bytes], name: str) -> IO[bytes]:
    """Decompress by magic bytes, not by file name: logs get renamed, pipes have no name. Every
    input (logs, flight-recorder dumps, stack dumps) is opened through this. Memory stays bounded
    whatever the stream declares or holds (DECODER_MEMORY, ZSTD_FEED, CHUNK_BYTES a read), and a
    bomb is refused (MAX_RATIO): an InputError from the read that finds it."""
    buffered = cast(io.BufferedReader, raw if hasattr(raw, "peek") else io.BufferedReader(cast(io.RawIOBase, raw)))
    kind = compression_of(buffered.peek(6)[:6])
    if kind is None:
        return cast(IO[bytes], buffered)
    counted = _Counted(buffered)
    decoded: IO[bytes]
    # gzip and bz2 are imported for their files only; lzma and zstandard above, for READ_ERRORS
    if kind == "gzip":
        import gzip

        decoded = cast(IO[bytes], gzip.GzipFile(fileobj=counted, mode="rb"))
    elif kind == "bzip2":
        import bz2

        decoded = cast(IO[bytes], bz2.BZ2File(counted))
    else:
        decoded = cast(IO[bytes], _Frames(cast(IO[bytes], counted), name, kind))
    return cast(IO[bytes], io.BufferedReader(_RatioGuard(decoded, counted, name), CHUNK_BYTES))


class _Counted(io.RawIOBase):
    """A compressed stream, counting the bytes read from it (the ratio guard's denominator)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.count = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


class _RatioGuard(io.RawIOBase):
    """The decompressed stream, refused once it has grown over MAX_RATIO times what it was read from."""

    def __init__(self, decoded: IO[bytes], counted: _Counted, name: str) -> None:
        self._decoded, self._counted, self._name, self._out = decoded, counted, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        decoded = cast(Any, self._decoded)
        if hasattr(decoded, "read1"):  # gzip, bz2: what was decoded before a truncated end comes out (read loses it)
            data = decoded.read1(len(buffer))
            size = len(data)
            buffer[:size] = data
        else:
            size = decoded.readinto(buffer)
        self._out += size
        if self._out > DECODED_FREE and self._out > MAX_RATIO * self._counted.count:
            raise InputError(
                f"{self._name}: unpacks to over {MAX_RATIO} times its size: a decompression bomb, not a log",
                hint="if it is a log, unpack it yourself and give the part that matters",
            )
        return size

    def close(self) -> None:
        self._decoded.close()
        self._counted.close()
        super().close()


class _Frames(io.RawIOBase):
    """xz streams or zstd frames one after the other, decoded in bounded steps: at most DECODER_MEMORY of
    window, at most CHUNK_BYTES out of an xz step and ZSTD_FEED bytes into a zstd one. A frame cut short
    raises EOFError like gzip and bz2 do (zstandard's own stream reader ends quietly there); what follows
    the first xz stream and is none ends it, as LZMAFile reads it (stream padding)."""

    def __init__(self, raw: IO[bytes], name: str, kind: str) -> None:
        self._raw, self._name, self._kind = raw, name, kind
        self._decoder = self._new()
        self._fed = False  # the current frame has had input
        self._input = b""  # compressed bytes not yet handed to the decoder
        self._pending = b""
        self._at = 0  # what of `_pending` was read
        self._ended = False

    def _new(self) -> Any:
        if self._kind == "xz":
            return lzma.LZMADecompressor(memlimit=DECODER_MEMORY)
        return zstandard.ZstdDecompressor(max_window_size=DECODER_MEMORY).decompressobj()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at >= len(self._pending):
            if self._ended:
                return 0
            if not self._input and (self._kind == "zstd" or self._decoder.needs_input):
                self._input = self._raw.read(CHUNK_BYTES)
                if not self._input:
                    if self._fed and not self._decoder.eof:
                        raise EOFError("compressed file ended before the end-of-stream marker was reached")
                    return 0
            self._pending, self._at = self._step(), 0
        size = min(len(buffer), len(self._pending) - self._at)
        buffer[:size] = self._pending[self._at : self._at + size]
        self._at += size
        return size

    def _step(self) -> bytes:
        later = self._decoder.eof  # a frame ended: the next starts here
        if later:
            self._input = self._decoder.unused_data + self._input
            self._decoder, self._fed = self._new(), False
            if not self._input:
                return b""
        self._fed = True
        try:
            if self._kind == "xz":
                data, self._input = self._input, b""
                return cast(bytes, self._decoder.decompress(data, max_length=CHUNK_BYTES))
            data, self._input = self._input[:ZSTD_FEED], self._input[ZSTD_FEED:]
            return cast(bytes, self._decoder.decompress(data))
        except (lzma.LZMAError, zstandard.ZstdError) as exc:
            if "memory" in str(exc).lower():
                raise InputError(
                    f"{self._name}: needs over {DECODER_MEMORY >> 20} MB of memory to unpack ({exc})",
                    hint="unpack it yourself (xz -d / zstd -d --long=31) and give the log",
                ) from None
            if later and self._kind == "xz":  # stream padding or trailing bytes after a whole stream
                self._ended = True
                return b""
            raise


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
    """Stream a source as cleaned `Line`s in constant memory (an export listed newest first is
    held whole, to be read in time order), out of the envelopes it was collected or pasted in.

    Decompression and archive errors surface as InputError with what was read so far kept:
    the lines already yielded stay valid, so a truncated .gz still gets a report."""
    number = start_line
    envelopes = envelopes_of(source) if not start_byte else (source.envelopes or Envelopes())
    unwrapper = Unwrapper(envelopes) if envelopes else None
    newest_first = envelopes.newest_first and not start_byte
    held: list[Unwrapped] = []
    stream = open_source(source)
    try:
        if start_byte:
            stream.seek(start_byte)
        for raw in _raw_lines(source, stream):
            number += 1
            source.lines = number
            if unwrapper is None:
                yield from clean_line(raw, number, source._index)
            elif newest_first:
                held += unwrapper.feed(number, decoded_text(raw))
            else:
                for line in unwrapper.feed(number, decoded_text(raw)):
                    yield from line_updates(line, source._index)
    except READ_ERRORS as exc:
        raise damaged(source, number, exc) from None
    finally:
        stream.close()
    if unwrapper is None:
        return
    if not newest_first:
        for line in unwrapper.end():
            yield from line_updates(line, source._index)
        return
    held += unwrapper.end()
    for order, line in enumerate(reversed(held), start_line + 1):
        yield from line_updates(Unwrapped(order, line.text, line.stamp, line.rank), source._index)


def envelopes_of(source: LogSource, packs: PackSet | None = None) -> Envelopes:
    """The envelopes of a source, sniffed from its first bytes once (files and stdin when opened;
    archive members, which can be opened again, on first use). `packs`: the run's, whose reading of the
    first lines decides a leading column no listed envelope names (envelope.LEARNED); the scan asks first."""
    if source.envelopes is None:
        try:
            stream = source.open_stream()
            try:
                head = stream.read(SNIFF_BYTES)
            finally:
                stream.close()
        except READ_ERRORS:
            head = b""  # reading the source reports the damage
        source.envelopes = sniff_bytes(head, packs=packs)
    return source.envelopes


def sniff_bytes(head: bytes, process_tags: frozenset[str] | None = None, packs: PackSet | None = None) -> Envelopes:
    """`envelope.sniff` over the first bytes of a source; a cut last line is left out. `process_tags`:
    the packs' own `(Name pid=N) ` tags (by default `packs`', else the shipped packs'). With `packs`, a
    leading column is learned where they read more lines without it."""
    lines = head.split(b"\n")
    if len(lines) > 1 and len(head) >= SNIFF_BYTES:
        lines.pop()
    if process_tags is None:
        if packs is None:
            from logphase.packs import shipped_packs  # only where the caller has no packs of its own

            process_tags = shipped_packs().process_tags
        else:
            process_tags = packs.process_tags
    reads = None if packs is None else _reading(packs)
    return sniff((unlinked(decoded_text(line)) for line in lines), process_tags, reads=reads)


def _reading(packs: PackSet) -> Callable[[str], int]:
    """`packs_reading` of one sniff: each text read once (sniffing asks again of the same lines for each shape)."""
    depths: dict[str, int] = {}

    def reads(text: str) -> int:
        depth = depths.get(text)
        if depth is None:
            depth = depths[text] = packs_reading(packs, text)
        return depth

    return reads


def packs_reading(packs: PackSet, text: str) -> int:
    """How deep the packs read a line (envelope.READ_MESSAGE, READ_PREFIX or 0): its message, where a rule (outside a
    traceback) matches what their prefixes leave, or the matcher reads that as a traceback's frame (a run of them,
    cut above its `Traceback` line, is read as one: `_frames_only`), or the line as a fatal signal handler's frame,
    its `[host:pid] ` the handler's own (frames.SIGNAL_HANDLER_FRAME: no envelope, though every line of such a paste
    starts with it); else its start, where a prefix of theirs parses it. A prefix alone reads no message: a wrapper that
    starts as a prefix does (`<asctime> - INFO - [container] `) hides the message behind it all the same."""
    fields, message = packs.split_prefix(text)
    if SIGNAL_HANDLER_FRAME.match(text) or PYTHON_FRAME.match(message):
        return READ_MESSAGE
    lowered = message.lower()
    if any(not rule.in_block and rule.match(message) is not None for rule in packs.candidate_rules(lowered)):
        return READ_MESSAGE
    return READ_PREFIX if fields.prefixes else 0


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
    codes stripped, tqdm's `\r` updates split (all keep `number`). Envelopes are not removed here:
    that needs the source's sniff (`read_lines`)."""
    yield from line_updates(Unwrapped(number, decoded_text(raw)), source)


def decoded_text(raw: bytes) -> str:
    """A physical line's bytes as text: bad UTF-8 replaced, colour codes and the `\r` of CRLF removed."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = ANSI_ESCAPE.sub("", text)
    for lead in _ESC_LEADS:
        if lead in text:
            text = WRITTEN_ESCAPE.sub("", text)
            break
    if "[0m" in text:
        text = ANSI_REMNANT.sub("", text)
    return text.rstrip("\r")


def unlinked(text: str) -> str:
    """A line out of its envelopes with a linkifier's links (`AUTOLINK`) undone: after them, so a link an envelope
    hid (markdown's escapes, inline code) or a hard wrap split is whole."""
    return AUTOLINK.sub(_unlinked, text) if AUTOLINK_MARK in text else text


def _unlinked(link: re.Match[str]) -> str:
    """A markdown link as the text it was made of, where a linkifier made it (`AUTOLINK`); else as it is."""
    text, url, rest = link["text"], link["url"], link["rest"]
    if link["end"] is None:  # cut inside its target: past the host's dot, which made the linkifier take the text
        cut = "." in rest and (f"{text}/".startswith(rest) or f"{text}/".startswith(url))
        return text if cut else link.group()
    if text in (url, rest) or (url.endswith("/") and text in (url[:-1], rest[:-1])):
        return text
    if text.isdigit() and _ACTIONS_LINE_URL.fullmatch(url):
        return text
    reference, issue = _ISSUE_REFERENCE.fullmatch(text), _ISSUE_URL.fullmatch(url)
    if reference is None or issue is None:
        return link.group()
    if reference["repo"] is not None:
        linked = reference["repo"].lower() == issue["repo"].lower() and reference["repo_number"] == issue["number"]
    else:
        linked = reference["number"] == issue["number"]
    return text if linked else link.group()


def uncoloured(lines: bytes) -> bytes | None:
    """Whole lines' bytes with their colour codes removed, each line then read by `decoded_text` as
    its own bytes are (the fast path scans these: a terminal's colours split the text its literals and
    templates are made of); None where that does not hold, so the bytes are read as they are:

    - an escape right after a non-ASCII byte: that byte may begin a UTF-8 sequence the escape
      breaks (decoded as U+FFFD) and the bytes after the escape would complete once it is gone. After
      an ASCII byte (or at a line's start) every character before the escape is whole, decoded
      alike with or without it, and so are those after it;
    - a line over MAX_LINE_BYTES: the reader keeps its first bytes, codes included;
    - an ESC byte left over (see below).

    Newlines stay where they are: each line keeps its number."""
    if b"\x1b" not in lines or ESCAPE_AFTER_NON_ASCII.search(lines) is not None:
        return None
    if len(lines) > MAX_LINE_BYTES and max(map(len, lines.split(b"\n"))) > MAX_LINE_BYTES:
        return None
    plain = ANSI_ESCAPE_BYTES.sub(b"", lines)
    # an ESC left (one no escape's syntax follows) would be read again from the line's text, where
    # removing one escape may make another (`\x1b` + `\x1b[32mI…`): the reader removes them once
    return None if b"\x1b" in plain else plain


def glued(text: str) -> bool:
    """Whether a line may hold records that `line_updates` splits (a bar's glued to a log line, a lost newline's)."""
    return _bar_glued(text) or _collapsed(text) or _json_glued(text)


def _json_glued(text: str) -> bool:
    return text.find(JSON_GLUED_MARK, 1) > 0


def _bar_glued(text: str) -> bool:
    return "%" in text and "]" in text


def _bar_then_line(found: re.Match[str]) -> str:
    """A bar's end (BAR_END_THEN_TEXT) with the line glued to it moved to a line of its own."""
    return f"{found['bar']}{found['end'] or ''}\r"


def _collapsed(text: str) -> bool:
    return len(text) >= COLLAPSED_MIN and "  " in text


def line_updates(line: Unwrapped, source: int) -> Iterator[Line]:
    """An unwrapped line as the `Line`s logphase reads: a linkifier's links undone, a progress bar's `\r` updates each a
    line."""
    text = unlinked(line.text)
    if _bar_glued(text):
        # a bar without its final newline, glued to the next log line: `…?it/s][2025-03-08 …] …` (its `|{bar}|` may be
        # lost in a paste through markdown: `57% 4/7 [00:40<00:29,  9.96s/it]ERROR:…`)
        text = BAR_THEN_LOG_LINE.sub("\r", text)
        text = BAR_END_THEN_TEXT.sub(_bar_then_line, text)
    if _collapsed(text):
        # records whose newlines were lost: each a line of its own, as a bar's updates are (the same number)
        text, records = COLLAPSED_RECORD.subn("\r", text)
        if records or text.count(FRAME_OPENING) > 1:
            text = COLLAPSED_FRAME.sub("\r  ", text)
    if _json_glued(text):
        # JSON records glued on one line: each a line of its own (the same number)
        text = JSON_GLUED.sub("\r", text)
    if "\r" not in text:
        yield Line(line.number, text, source, line.stamp, line.rank)
        return
    # tqdm rewrites its bar with \r: each update is a line of its own at the same physical line
    for part in text.split("\r"):
        if part.strip():
            yield Line(line.number, part, source, line.stamp, line.rank)
