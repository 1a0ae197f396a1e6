"""Parse stack dumps found in text: faulthandler, py-spy text (also SGLang's `Pyspy dump for PID N:`
blocks inside logs), pystack text, py-spy JSON and logphase's own `stacks` JSON. Pure: no I/O.

Lines may carry a log prefix (`[2025-01-01 10:00:00 TP3] `, `[rank0]:`, vLLM's `(Worker_TP1 pid=42) `)
or come from a writer their envelope named (srun's `3: `, torchrun's `[default0]:`, removed by
logphase/logs/envelope.py); lines of different prefixes or writers are demultiplexed into separate streams,
so that dumps of several ranks interleaved line by line still parse. Lines torn apart by concurrent
writes are parsed for whatever whole frames they still contain."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import chain, islice
from typing import Any, Protocol

from logphase.bounded import rank_label, read_int, read_rank
from logphase.frames import (
    DEBUGGER_THREAD,
    LLDB_NAME,
    PYSPY_FRAME,
    PYSPY_PROCESS,
    PYSPY_THREAD,
    TRIGGER,
    debugger_frame,
    printable,
    role_and_tags_from_title,
    short_path,
)
from logphase.logs.envelope import SNIFF_LINES, Unwrapped, Unwrapper, sniff
from logphase.packs import rank_from_tags, shipped_packs
from logphase.stacks.model import Frame, ProcessSnapshot, ThreadStack

# --- line shapes --------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# One layer of a system's log prefix; stripped up to three times (a Ray actor, then `[ts TP0] `).
# Envelopes (docker, compose, srun's labels) are logphase/logs/envelope.py's.
PREFIXES = (
    re.compile(r"^\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] "),
    re.compile(r"^\[(?:rank|default|worker|trainer|[A-Za-z_]+)\d+\]:"),
    re.compile(r"^\((?:\w|-)+(?: rank=\d+)? pid=\d+\) "),
)
TIMESTAMP = re.compile(r"(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?")

PYSPY_PYTHON = re.compile(r"^(?:Python v\S+|Parent Process \d+:|Signal \d+:)")
SGLANG_PYSPY = re.compile(r"Pyspy dump for PID (?P<pid>\d+)(?: \((?P<cmd>.*)\))?:\s*$")
SGLANG_PYSPY_FAILED = re.compile(
    r"(?:Pyspy failed to dump PID (?P<pid>\d+)\. Error: (?P<err>.*)"
    r"|All pyspy dump attempts failed for PID (?P<pid2>\d+))"
)
FH_FATAL = re.compile(r"^Fatal Python error: (?P<msg>.*?)\s*$")
FH_TIMEOUT = re.compile(r"^Timeout \((?P<t>[\d:.]+)\)!\s*$")
FH_THREAD = re.compile(
    r"^(?P<cur>Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+) (?:\[(?P<name>.*?)\] )?\(most recent call first\):"
)
FH_STACK = re.compile(r"^Stack \(most recent call first\):")
FH_FRAME = re.compile(r'File "(?P<file>[^"]*)", line (?P<line>\d+|\?\?\?) in (?P<func>[^\s"]+)')
FH_NOISE = re.compile(
    r"^\s*(?:<no Python frame>|Garbage-collecting|<tstate is freed>|<freed thread state>|<freed frame>|"
    r"<invalid frame>|\.\.\.|plus \d+ frames?|Python runtime state:.*)\s*$"
)
FH_EXTENSIONS = re.compile(r"^Extension modules: ")
PYSTACK_THREAD = re.compile(
    r"^Traceback for thread (?P<tid>\d+)(?: \((?P<name>[^)]*)\))?(?: \[(?P<status>[^\]]*)\])?"
    r" \(most recent call last\):"
)
PYSTACK_FRAME = re.compile(
    r'^\s+\((?P<kind>Python|C)\) File "(?P<file>[^"]*)", line (?P<line>\d+), in (?P<func>\S+)'
    r"(?: \((?P<lib>[^)]*)\))?\s*$"
)
PYSTACK_NOISE = re.compile(
    r"^\s*(?:In the main interpreter|In interpreter \d+|Not currently attached|\* - Unable to merge|"
    r"The frame stack for thread|Arguments:|Locals:)"
)


def role_and_rank_from_title(title: str) -> tuple[str | None, str | None]:
    """The role and rank a process title (setproctitle / cmdline) tells, e.g.
    `sglang::scheduler_DP1_TP3_EP3` → ("scheduler", "DP1 TP3 EP3"), `VLLM::Worker_TP1` → ("worker", "TP1")."""
    role, tags = role_and_tags_from_title(title)
    return role, (rank_from_tags(tags) if tags else None)


# `pyspy-rank3.json`, `rank_3.txt`, `fr-rank-3`: a dump saved per rank under the rank's number.
FILE_RANK = re.compile(r"(?<![A-Za-z])(?<!local[-_])(?<!node[-_])rank[-_]?([0-9]+)(?![0-9])", re.IGNORECASE)


def rank_from_file_name(name: str) -> str | None:
    """The rank a dump file is named after, when its name gives exactly one."""
    numbers = {read_rank(number) for number in FILE_RANK.findall(name)}
    return f"rank {numbers.pop()}" if len(numbers) == 1 and None not in numbers else None


def rank_from_prefix(prefix: str) -> str | None:
    tags = rank_from_tags(prefix)
    if tags:
        return tags
    found = re.search(r"\[rank([0-9]+)\]:", prefix)
    if found:
        return rank_label(found.group(1))
    found = re.search(r"\[[A-Za-z_]+?([0-9]+)\]:", prefix)
    if found:
        return rank_label(found.group(1), "local_rank")
    found = re.search(r"\((?:VllmWorker rank=([0-9]+)|\S+?) pid=[0-9]+\)", prefix)
    if found and found.group(1) and (number := read_rank(found.group(1))) is not None:
        return f"TP{number}"
    return None


def pid_from_prefix(prefix: str) -> int | None:
    found = re.search(r"\bpid=([0-9]+)\)", prefix)
    return read_int(found.group(1)) if found else None


def split_prefix(line: str) -> tuple[str, str]:
    """(prefix, body): the log prefix layers at the start of a line, and what follows them."""
    start = 0
    for _ in range(3):
        for pattern in PREFIXES:
            found = pattern.match(line, start)
            if found:
                start = found.end()
                break
        else:
            break
    return line[:start], line[start:]


def stream_key(prefix: str) -> str:
    """Lines whose prefixes differ only by time belong to the same writer."""
    return " ".join(TIMESTAMP.sub("", prefix).split())


def is_native_file(file: str) -> bool:
    return not file.endswith((".py", ".pyx", ">")) and not file.endswith(".py\u200b")


def make_frame(function: str, file: str, line: int | None, native: bool | None = None) -> Frame | None:
    """A Frame, or None for frames that carry nothing (bare addresses of --native dumps)."""
    if function.startswith("0x") or (function == "???" and not file):
        return None
    return Frame(
        function=printable(function),
        file=printable(file),
        line=line or None,
        native=is_native_file(file) if native is None else native,
    )


def parse_frame_text(text: str) -> Frame | None:
    """`all_reduce (torch/distributed/distributed_c10d.py:2501)` (as py-spy and logphase's JSON print it)."""
    found = PYSPY_FRAME.match("    " + text.strip())
    return pyspy_frame(found) if found else None


def pyspy_frame(found: re.Match[str]) -> Frame | None:
    """The Frame of a `PYSPY_FRAME` match."""
    line = found.group("line")
    return make_frame(found.group("function"), found.group("file"), read_int(line))


# --- the main-thread heuristic --------------------------------------------------------------------

THREAD_BOOTSTRAP = re.compile(r"^_bootstrap(?:_inner)? \((?:.*/)?threading\.py\)$")
MAIN_ENTRY = re.compile(
    r"^(?:<module> \(|spawn_main \((?:.*/)?multiprocessing/spawn\.py|_run_module_as_main \(|main \()"
)


def pick_main(threads: list[ThreadStack], pid: int | None) -> list[ThreadStack]:
    """Mark the main thread: py-spy names it (`MainThread`, or its tid is the pid); faulthandler and
    pystack do not, so the thread not started by `threading` (outermost `<module>`/`spawn_main`) is it."""
    if not threads:
        return threads
    named = [t for t in threads if t.name == "MainThread" or (pid is not None and t.thread_id == str(pid))]
    if named:
        chosen = named[0]
    else:
        candidates = [
            t
            for t in threads
            if not any(THREAD_BOOTSTRAP.match(f.key) for f in t.frames[-3:])
            and not (t.name or "").startswith(("Thread-", "ThreadPool", "pt_", "Dummy"))
        ]
        if not candidates:
            return threads
        entry = [t for t in candidates if t.frames and MAIN_ENTRY.match(t.frames[-1].key)]
        chosen = entry[0] if entry else candidates[-1]
    return [replace(t, main=t is chosen) for t in threads]


# --- the text parser ---------------------------------------------------------------------------


@dataclass
class _Thread:
    tid: str
    name: str | None
    active: bool | None
    frames: list[Frame] = field(default_factory=list)
    reverse: bool = False  # pystack prints most recent call last

    def build(self) -> ThreadStack:
        frames = tuple(reversed(self.frames)) if self.reverse else tuple(self.frames)
        return ThreadStack(thread_id=self.tid, name=self.name, frames=frames, active=self.active)


@dataclass
class _Process:
    mode: str  # "py-spy text" | "faulthandler" | "pystack" | "debugger"
    pid: int | None = None
    title: str | None = None
    rank: str | None = None
    role: str | None = None
    fatal: str | None = None
    error: str | None = None
    threads: list[_Thread] = field(default_factory=list)
    tids: set[str] = field(default_factory=set)
    seq: int = 0

    def build(self) -> ProcessSnapshot | None:
        threads = [t.build() for t in self.threads if t.frames]
        if not threads and not self.fatal and not self.error:
            return None
        role, rank = role_and_rank_from_title(self.title) if self.title else (None, None)
        return ProcessSnapshot(
            pid=self.pid,
            threads=tuple(pick_main(threads, self.pid)),
            rank=rank or self.rank,
            role=role or self.role,
            title=self.title,
            fatal=self.fatal,
            error=self.error,
            source=self.mode,
        )


@dataclass
class _Stream:
    prefix: str = ""
    writer: str | None = None  # the rank label of the line's envelope (srun's `3: ` is `task 3`)
    proc: _Process | None = None
    thread: _Thread | None = None
    hint: tuple[int | None, str | None] | None = None  # (pid, rank) announced by `Pyspy dump for PID N:`


class DumpParser:
    """Push parser: `feed` log lines one at a time (constant memory per open dump), then `finish`."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}
        self.out: list[tuple[int, ProcessSnapshot]] = []
        self.seq = 0
        self.open = 0  # streams with an open process: every line must be looked at

    # -- stream helpers
    def close(self, stream: _Stream) -> None:
        stream.thread = None
        if stream.proc is not None:
            built = stream.proc.build()
            if built is not None:
                self.out.append((stream.proc.seq, built))
            stream.proc = None
            self.open -= 1

    def start(self, stream: _Stream, mode: str, pid: int | None = None, title: str | None = None) -> _Process:
        self.close(stream)
        rank = _stream_rank(stream)
        pid = pid if pid is not None else pid_from_prefix(stream.prefix)
        if stream.hint is not None:
            hint_pid, hint_rank = stream.hint
            if pid is None or hint_pid is None or hint_pid == pid:
                pid = pid if pid is not None else hint_pid
                rank = hint_rank or rank
            stream.hint = None
        self.seq += 1
        stream.proc = _Process(mode=mode, pid=pid, title=title, rank=rank, seq=self.seq)
        self.open += 1
        return stream.proc

    def thread(self, stream: _Stream, mode: str, tid: str, name: str | None, active: bool | None) -> None:
        proc = stream.proc
        if proc is None or proc.mode != mode or (tid in proc.tids and tid != "?"):
            proc = self.start(stream, mode)
        proc.tids.add(tid)
        stream.thread = _Thread(tid=tid, name=name, active=active, reverse=mode == "pystack")
        proc.threads.append(stream.thread)

    def frame(self, stream: _Stream, mode: str, frame: Frame | None) -> None:
        if stream.thread is None:  # frames before any header: the tail of a truncated dump
            if stream.proc is None or stream.proc.mode != mode:
                self.start(stream, mode)
            assert stream.proc is not None
            stream.thread = _Thread(tid="?", name=None, active=None, reverse=mode == "pystack")
            stream.proc.threads.append(stream.thread)
        if frame is not None:
            stream.thread.frames.append(frame)

    # -- one line
    def feed(self, raw: str, writer: str | None = None) -> None:
        line = ANSI.sub("", raw.rstrip("\r\n"))
        if "\r" in line:
            line = line.rsplit("\r", 1)[1]
        if not self.open and not TRIGGER.search(line):
            return
        prefix, body = split_prefix(line)
        key = _writer_key(writer) + stream_key(prefix)
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = _Stream(prefix=prefix, writer=writer)
        stream.prefix = prefix
        self.body(stream, body)

    def body(self, stream: _Stream, body: str) -> None:
        proc = stream.proc
        mode = proc.mode if proc else None
        if not body.strip():
            stream.thread = None  # blank: the end of a thread block; the process stays open
            return
        found: Any
        # -- py-spy text
        if found := PYSPY_PROCESS.match(body):
            self.start(stream, "py-spy text", read_int(found.group("pid")), found.group("cmd") or None)
            return
        if found := SGLANG_PYSPY.search(body):
            # the dump follows unprefixed: hand the rank of this line's prefix to the bare stream
            bare = self.streams.setdefault(_writer_key(stream.writer), _Stream(writer=stream.writer))
            self.close(bare)
            self.close(stream)
            bare.hint = (read_int(found.group("pid")), _stream_rank(stream))
            return
        if found := SGLANG_PYSPY_FAILED.search(body):
            pid = read_int(found.group("pid") or found.group("pid2"))
            self.close(stream)
            error = (found.group("err") or "all py-spy attempts failed").strip()
            self.seq += 1
            self.out.append(
                (
                    self.seq,
                    ProcessSnapshot(pid=pid, rank=_stream_rank(stream), error=error, source="py-spy text"),
                )
            )
            return
        if mode == "py-spy text" and PYSPY_PYTHON.match(body):
            return
        if found := PYSPY_THREAD.match(body):
            status = found.group("status")
            self.thread(stream, "py-spy text", found.group("tid"), found.group("name"), status.startswith("active"))
            return
        # -- faulthandler
        if found := FH_FATAL.match(body):
            self.start(stream, "faulthandler").fatal = f"Fatal Python error: {found.group('msg')}"
            return
        if FH_TIMEOUT.match(body):
            self.start(stream, "faulthandler")
            return
        if found := FH_THREAD.match(body):
            self.thread(stream, "faulthandler", found.group("tid"), found.group("name"), None)
            if found.group("cur") == "Current thread":
                stream.thread.name = stream.thread.name or None  # type: ignore[union-attr]
            return
        if FH_STACK.match(body):
            self.thread(stream, "faulthandler", "current", None, None)
            return
        if FH_EXTENSIONS.match(body):
            if proc is not None and proc.mode == "faulthandler":
                proc.fatal = proc.fatal or "fatal signal (faulthandler dump)"
            self.close(stream)
            return
        # -- a native debugger's backtrace (lldb's `thread backtrace all`, gdb's `thread apply all bt`)
        if found := DEBUGGER_THREAD.match(body):
            named = LLDB_NAME.search(body) if found.group("lldb") else None
            name = named.group("name") if named is not None else found.group("name")
            self.thread(stream, "debugger", found.group("lldb") or found.group("gdb"), name, None)
            return
        if mode == "debugger" and (parts := debugger_frame(body)) is not None:
            self.frame(stream, "debugger", make_frame(parts[0], parts[1], None, native=True))
            return
        # -- pystack
        if found := PYSTACK_THREAD.match(body):
            status = found.group("status") or ""
            self.thread(stream, "pystack", found.group("tid"), found.group("name"), "Has the GIL" in status or None)
            return
        if found := PYSTACK_FRAME.match(body):
            native = found.group("kind") == "C"
            self.frame(
                stream,
                "pystack",
                make_frame(found.group("func"), short_path(found.group("file")), read_int(found.group("line")), native),
            )
            return
        if mode == "pystack" and (body.startswith("        ") or PYSTACK_NOISE.match(body)):
            return
        # -- frames
        if mode == "py-spy text" and (found := PYSPY_FRAME.match(body)):
            self.frame(stream, "py-spy text", pyspy_frame(found))
            return
        frames = FH_FRAME.findall(body)
        if frames:
            for file, line, func in frames:
                self.frame(stream, "faulthandler", make_frame(func, short_path(file), read_int(line)))
            return
        if mode == "faulthandler" and (FH_NOISE.match(body) or 'File "' in body):
            return  # a torn or noise line inside a faulthandler dump
        if mode is None and (found := PYSPY_FRAME.match(body)) and stream.thread is None and key_is_bare(stream):
            # py-spy frames with no header at all: the tail of a truncated dump (unprefixed only)
            self.frame(stream, "py-spy text", pyspy_frame(found))
            return
        if proc is not None:
            self.close(stream)

    def finish(self) -> list[ProcessSnapshot]:
        for stream in self.streams.values():
            self.close(stream)
        return [snapshot for _, snapshot in sorted(self.out, key=lambda item: item[0])]


def key_is_bare(stream: _Stream) -> bool:
    return not stream.prefix


def _writer_key(writer: str | None) -> str:
    return "" if writer is None else f"{writer}: "


def _stream_rank(stream: _Stream) -> str | None:
    return rank_from_prefix(stream.prefix) or stream.writer


class WrittenLine(Protocol):
    """A line out of its envelope (`logphase.logs.reader.Line`, `envelope.Unwrapped`)."""

    @property
    def text(self) -> str: ...

    @property
    def rank(self) -> str | None: ...


def parse_dumps_in_lines(lines: Iterable[WrittenLine]) -> list[ProcessSnapshot]:
    """Every stack dump found in these lines, one ProcessSnapshot per process dump, in the order the
    dumps end; the rank label of a line's envelope (srun's `3: `) keeps its writer's lines apart.
    Lines that are not part of a dump are ignored."""
    parser = DumpParser()
    for line in lines:
        parser.feed(line.text, writer=line.rank)
    return parser.finish()


def parse_dumps_in_text(lines: Iterable[str]) -> list[ProcessSnapshot]:
    """`parse_dumps_in_lines` for raw text lines (a dump file), read out of their envelopes."""
    texts = (ANSI.sub("", line.rstrip("\r\n")) for line in lines)
    head = list(islice(texts, SNIFF_LINES))
    unwrapper = Unwrapper(sniff(head, shipped_packs().process_tags))

    def unwrapped() -> Iterator[Unwrapped]:
        for number, text in enumerate(chain(head, texts), 1):
            yield from unwrapper.feed(number, text)
        yield from unwrapper.end()

    return parse_dumps_in_lines(unwrapped())
