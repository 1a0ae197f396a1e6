"""Lines × rules → Events: prefix stripping, time completion, traceback blocks (pure)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from enum import StrEnum
from functools import cache

from logphase.bounded import rank_label
from logphase.frames import (
    DEBUGGER_THREAD,
    PYSPY_FRAME,
    PYSPY_PROCESS,
    SIGNAL_HANDLER_FRAME,
    debugger_frame_key,
    frame_key,
    is_pyspy_thread,
    native_frame_key,
    role_and_tags_from_title,
)
from logphase.logs.annotations import Edit, edit
from logphase.logs.clock import NO_CLOCK, Clock
from logphase.logs.reader import Line
from logphase.logs.rich_box import RICH_STARTS, translated
from logphase.logs.stamps import StampBelief
from logphase.packs import ModuleHint, PackRegex, PackSet, PrefixFields, Rule, branch_leads, rank_from_tags
from logphase.phases import FAILURE_KINDS, EventKind, Phase, Role

# Lines inside a traceback or dump that are its structure, not a new message.
BLOCK_MARKERS = (
    "Traceback (most recent call last)",
    "Thread 0x",
    "Current thread 0x",
    "Stack (most recent call first)",
)
# the kinds of a line that states a block's exception (`RuntimeError: …`, a `what():` of a watchdog's timeout)
STATED_KINDS = frozenset({EventKind.ERROR, EventKind.TIMEOUT})
# After an exception line, these say the next traceback is the same failure going on.
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
# Frame keys whose phase lookup is remembered (frames repeat: every rank dumps the same stack).
FRAME_CACHE = 10_000
_UNSEEN = object()
# Lines that start a group of frames (a dump's thread, a traceback).
FRAME_HEADERS = ("Traceback (most recent call last)", "Thread 0x", "Current thread 0x", "Stack (most recent", "Thread ")
# faulthandler labels the thread that dumps `Current thread 0x…` in the dump of a fatal error (a fatal signal,
# Py_FatalError) and in one a signal asked for (`faulthandler.register`), never in dump_traceback_later's (all
# `Thread 0x…`, under `Timeout (…)!`): shared reference §4.1-4.2. Where only that thread is dumped (`all_threads=False`:
# Ray's workers enable faulthandler so, ray/_private/worker.py `connect`), the same dumps head it `Stack (most recent
# call first):` instead (§4.2); dump_traceback_later always dumps every thread.
CURRENT_THREAD = "Current thread 0x"
# py-spy's `dump --locals` prints a frame's `Arguments:` / `Locals:` eight spaces in and each value twelve (src/dump.rs)
PYSPY_LOCALS = " " * 8
# the lines py-spy prints between its `Process` line and the first thread (src/dump.rs)
PYSPY_HEADER_LINES = ("Python v", "Parent Process ")
DUMPING_THREAD = (CURRENT_THREAD, "Stack (most recent call first):")
_NOTHING: tuple[Event, ...] = ()
# The prefix id a rank label from a line's envelope counts as (one writer's lines stay together).
ENVELOPE_RANK = "envelope.rank"
# The captures (and prefix groups) `_rank` reads an event's rank from.
RANK_CAPTURES = frozenset({"tags", "rank"})
# A traceback frame line (CPython: `  File "path", line N, in name`; faulthandler has no comma).
TRACEBACK_FRAME = re.compile(r'\s+File "[^"]*", line \d+, in ')
# loguru's `backtrace=True` marks the frame that caught the exception `> File "…"` (TGI's shard tracebacks):
# a frame like the others.
CAUGHT_FRAME = '> File "'
# A frame whose indentation a viewer or an export dropped (GCP Cloud Logging's copied view, a form that trims each
# line: realworld 805, 821, 426, 156): CPython's whole frame line `File "…", line N, in f` at the margin, a frame
# like the others. Only the whole line: a message that merely starts `File "` stays a message.
FLAT_FRAME = re.compile(r'File "[^"]*", line \d+, in [\w<>.]+\s*$')  # (a terminal's copy pads lines with spaces)
# Under such a frame, its source line and (3.11+) the carets under it lost theirs too: indented again, as CPython
# wrote them, so the traceback stays one block (a prefixed line at the margin would end it)
CARETS = re.compile(r"[~^ ]*\^[~^ ]*$")
# The capture an exception read from a cut traceback's `raise` statement carries (judging says so).
CUT_TRACEBACK = "read_from"
FRAME_READ = "frame"  # CUT_TRACEBACK's value for a traceback cut below its header, read at its innermost whole frame
TRACEBACK_HEADER = "Traceback (most recent call last):"
# The header Open MPI's signal handler writes above the frames it prints (frames.SIGNAL_HANDLER_FRAME): what a run of
# those frames whose header is not in the log is read as
SIGNAL_HANDLER_HEADER = "*** Process received signal ***"
# A traceback's source line that calls a function (`x = self.init_torch_distributed()`, `await self.run(`): CPython
# prints the call into the next frame under each frame, so the innermost one names the call a cut paste lost.
CALL_SPAN = 240
CALLED = re.compile(r"^\s+(?:[\w.\[\], ]+ = )?(?:return |await |yield )?(?:[\w\]\[]+\.)*(?P<function>[A-Za-z_]\w*)\(")
# libstdc++'s std::terminate prints the exception's text indented: `  what():  <message>`.
CPP_WHAT = "what():"
# pydantic-core's ValidationError text: what a validator's ValueError / AssertionError said, indented two spaces
# under the field's location (`  Value error, …` / `  Assertion failed, …`, src/errors/types.rs), never a frame's
# four-space source line
PYDANTIC_DETAIL = re.compile(r" {2}(?:Value error|Assertion failed), \S")
# A frame's quoted source line that raises: `    raise TimeoutError("Timed out waiting for ..."`.
RAISE_STATEMENT = re.compile(r"\s+raise (?P<cls>[A-Za-z_][\w.]*)\((?P<args>.*)$")
# An `assert` statement raises too: `AssertionError`, with the message after its condition where it gives one as a
# string (`    assert res.status_code == 200, f"…"`; an f-string's braces are left as written)
ASSERT_STATEMENT = re.compile(r"""\s+assert (?P<condition>\S.*?)(?:, (?P<args>[rfbu]{0,2}["'].*))?$""")
# An exception line a logger wrote at its error level, outside any traceback the log shows: the end of a traceback
# logged through a formatter that prefixes each of its lines, the lines above it cut from the paste (vLLM's
# NewLineFormatter: `(EngineCore_DP0 pid=N) ERROR … [core.py:710] RuntimeError: …`), or an exception logged as
# `{type}: {e}` before the process exits (LMDeploy 0.6.2 pytorch/check_env/__init__.py:17, `logger.error(
# f'{type(e).__name__}: {e}')` then `exit(1)`). Read as a traceback's exception line: its block opens on it. Only
# a class named as an error or an exception and its message (a level's `Note: …` is no exception).
LOGGED_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL"})
LOGGED_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?:\([\w.]*\))?: \S")
# What the fast path hands the matcher for it: the level, then such a class and its colon, on one line
LOGGED_EXCEPTION_TRIGGER = rb"(?:ERROR|CRITICAL|FATAL)[^\n]*(?:Error|Exception)(?:\([\w.]*\))?: \S"


class Tail(StrEnum):
    """A line its traceback block kept reading after the block's exception line: never that exception line itself
    (judging/logs.py `_exception_line`: the cause is the line the tail follows). Two variants, because they say
    different things about how the process ended (realworld 279, 480 tell them apart):

    MESSAGE: indented. CPython prints an exception's message as it is and the next writer starts at the margin, so
    an indented line is the message's own text (torchrun's ChildFailedError prints its failure table as its message,
    the rows indented): it reports, and a signal it names (`traceback : Signal 9 (SIGKILL) received by PID N`, the
    agent's kill of a survivor) is no end of this process.

    FOLLOWING: at the margin, another rule's line than the exception line's. Either the message going on (torch's
    `NCCL error in: …` then `Last error:` / `Cuda failure '…'`; CUDA's hints) or a line written after the message
    that the block kept, being unprefixed (the shell's `Aborted (core dumped)` after a C++ `what():`, torchrun's
    `failed (exitcode: -6)`): nothing tells them apart, so a fatal one still says how this process ended."""

    MESSAGE = "message"
    FOLLOWING = "following"


@dataclass(frozen=True, slots=True)
class Event:
    """A line a rule recognised. `time` is the line's own stamp, or the last one before it in the
    same source (NCCL and traceback lines carry none); `block` is the line number of the line that
    opened the traceback this line belongs to; `tail`: how the line follows its block's exception line (`Tail`),
    None where it does not (a frame, the exception line, a line outside any block)."""

    source: int
    line: int
    time: datetime | None
    rank: str | None
    rule: Rule
    captures: Mapping[str, str]
    text: str
    message: str
    block: int | None = None
    stamped: bool = True
    tail: Tail | None = None

    @property
    def phase(self) -> Phase | None:
        return self.rule.phase

    @property
    def kind(self) -> EventKind:
        return self.rule.kind

    @property
    def role(self) -> Role:
        return self.rule.role

    @property
    def order_key(self) -> tuple[datetime, int, int]:
        return (self.time or datetime.min, self.source, self.line)


FRAMES_PACK = "frames"  # the pack name of the rules events derived from frames carry


@cache
def frame_rule(phase: Phase | None, draft: bool = False, reached: Phase | None = None) -> Rule:
    """The rule an event derived from a frame carries: evidence of where the rank was, never
    progress and never a cause (a failure kind with the diagnostic role); `draft`: a capture the
    draft worker's init called; `reached`: a phase a frame proves the run had reached (an anchor's `reached`),
    where no frame places the stack further."""
    name = phase.value if phase is not None else f"reached.{reached.value if reached is not None else 'none'}"
    return unmatched_rule(
        id=f"{FRAMES_PACK}.{name}{'.draft' if draft else ''}",
        pack=FRAMES_PACK,
        phase=phase,
        reached=reached,
        kind=EventKind.ERROR,
        role=Role.DIAGNOSTIC,
        draft=draft,
        in_block=True,
        summary="a frame of a traceback or dump places the rank in this phase",
    )


def unmatched_rule(
    *,
    id: str,
    pack: str,
    kind: EventKind,
    role: Role,
    summary: str,
    phase: Phase | None = None,
    reached: Phase | None = None,
    draft: bool = False,
    system: str | None = None,
    after_prefix: tuple[str, ...] = (),
    in_block: bool = False,
) -> Rule:
    """A rule no line is matched by: the one an event made from something else carries (frames, a logger's module, a
    cut line), with no literal, no examples and a regex that never matches."""
    return Rule(
        id=id,
        pack=pack,
        phase=phase,
        reached=reached,
        kind=kind,
        role=role,
        priority=0,
        literal=None,
        pattern=PackRegex("(?!)", False, None),
        ignore_case=False,
        draft=draft,
        system=system,
        versions="",
        after_prefix=after_prefix,
        in_block=in_block,
        opens_block=False,
        summary=summary,
        examples=(),
        counter_examples=(),
    )


FALLBACK_PACK = "fallback"  # the pack name of the rules a line no rule read is placed by (its logger's module)
# the capture a fallback event carries: the logger's source file that placed it (judging says so)
PLACED_BY = "placed_by"
# the capture of a step's line cut at the paste's end (`cut_phase`): the leading text of the rule it was cut from
CUT_LEAD = "cut_of"
# The kind and role of the rule whose line a cut last line begins (matcher.cut_phase): what its whole line would say
CUT_KIND = "cut_kind"
CUT_ROLE = "cut_role"
# An exception line that names its class alone: CPython's traceback.py prints `Cls` where str(exc) is empty (a bare
# `assert`, `raise EOFError`) and `Cls:` where the message begins on the next line (torch dynamo's `AssertionError:`
# then `from user code:`). Under it CPython quoted the innermost frame's source line, the statement that raised: the
# captures below carry it (its line, its text, its words), judging quotes it where nothing after the line says more.
BARE_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\([\w.]*\))?:?")
STATEMENT_LINE = "statement_line"
STATEMENT_TEXT = "statement_text"
STATEMENT = "statement"


# The rule of a line no rule read that reports a step by its structure (logs/records.py: a logger's INFO record of
# words, a bar's tick): no phase, no kind of its own; judging quotes it as an open run's last progress line where it is
# the newest step (fixtures/realworld/README.md, `root_cause_line`)
UNREAD_STEP_RULE = unmatched_rule(
    id=f"{FALLBACK_PACK}.unread_step",
    pack=FALLBACK_PACK,
    kind=EventKind.MARK,
    role=Role.PROGRESS,
    summary="a logger's INFO record or a bar's tick that no rule read: a step by its structure",
)


@cache
def fallback_rule(hint: ModuleHint) -> Rule:
    """The rule a line no rule read carries where its logger's module places it (`[[module]]`): a diagnostic mark of
    the module's start-up phase, never progress of a bar, a failure, an end or a ready server, whatever its level."""
    return unmatched_rule(
        id=f"{FALLBACK_PACK}.{hint.id}",
        pack=FALLBACK_PACK,
        phase=hint.phase,
        kind=EventKind.MARK,
        role=Role.DIAGNOSTIC,
        system=hint.system,
        after_prefix=hint.prefixes,  # placed only after them (`ModuleHint.places`): the fast path's gate
        summary=f"placed by its logger's module {hint.file}, no rule read it",
    )


@cache
def ignored_rule(rule: Rule) -> Rule:
    """`rule` read inside a traceback the process printed and went on from (CPython's unraisable hook: `Exception
    ignored in: …`, a destructor's error at shutdown): what it says, as a diagnostic mark, never a failure."""
    return replace(rule, kind=EventKind.MARK, role=Role.DIAGNOSTIC, phase=None)


# Fields a fork shares with its origin: the immutable packs, and a memo of what they say.
SHARED_ON_FORK = frozenset({"packs", "_frame_phases", "_frame_floors"})
# Fields a fork starts empty: what it reads never depends on them, and copying them for every probe
# costs their size (a log of 200,000 ranks: a copy of 200,000 names a line).
FRESH_ON_FORK = frozenset({"ranks_seen"})


# Field values a fork takes as they are (a datetime is a date; the Clock is a tuple).
IMMUTABLE = (int, float, bool, str, date, timedelta, tuple, frozenset, type(None), Edit)


def _copied(value: object) -> object:
    """A mutable field's value for a fork, one level deep (what it holds is immutable). Not
    copy.copy: the fast path forks for every line it probes, and that is 4x slower here."""
    if isinstance(value, Counter):
        fresh: Counter[str] = Counter()
        dict.update(fresh, value)  # Counter's own copy goes through its slow `update`
        return fresh
    if isinstance(value, (set, dict, list)):
        return value.copy()
    state = object.__new__(type(value))  # a state object: _Block, _FrameGroup
    vars(state).update(vars(value))
    return state


@dataclass(frozen=True)
class Explanation:
    """What `patterns explain` shows for one line."""

    prefix: PrefixFields
    message: str
    matches: tuple[tuple[Rule, Mapping[str, str]], ...]


def explain(text: str, packs: PackSet) -> Explanation:
    fields, message = packs.split_prefix(text)
    return Explanation(fields, message, tuple(packs.matching_rules(message, fields.prefixes)))


@dataclass
class _Block:
    opener_line: int
    rank: str | None
    prefixes: tuple[str, ...]
    finished: bool = False  # its exception line was seen: the next message ends it
    stated_by: str = ""  # the rule of its exception line: a further line of another rule is that message's tail
    # the innermost frame's `raise` statement so far: it stands for the exception line when the
    # traceback is cut before it (an excerpt pasted mid-traceback, a log that ends there)
    raised: tuple[Line, PrefixFields, str] | None = None
    # the first frame of a traceback whose `Traceback` line is not in the log (an excerpt pasted mid-traceback)
    headless: tuple[Line, PrefixFields] | None = None
    # the innermost frame's source line so far (the first line CPython quotes under its `File` line): where the
    # exception was raised or passed through, the nearest the excerpt comes to its cut exception line
    statement: tuple[Line, str] | None = None
    # the innermost frame so far whose `File` line is whole up to its function (`…, line N, in func`): where the
    # exception was raised or passed through, named; a frame the paste cut before its function names nothing
    frame: tuple[Line, PrefixFields] | None = None
    quoting: bool = False  # a `File` line was read: its source line, if CPython had one, comes next
    failed: bool = False  # a failure line was read inside it (a native crash banner between frame runs)
    # opened by a rule's `ignored_block` line (CPython's `Exception ignored in: …`): the process printed the
    # traceback and went on, so nothing inside it is a failure
    ignored: bool = False
    # a faulthandler dump whose header (`Fatal Python error: …`) is not in the log: its `Current thread` (or `Stack`)
    # line. The block holds the dump's own lines only (threads, frames, blank lines); a line of the program after it
    # ends it
    dump: tuple[Line, PrefixFields, Rule, dict[str, str]] | None = None
    # where the line after a frame whose indentation was lost stands (FLAT_FRAME): 1, its source line; 2, its carets
    flat_step: int = 0
    # the first frame of a fatal signal handler's backtrace whose header is not in the log (Open MPI's `[host:pid]
    # [ 8] …`, frames.SIGNAL_HANDLER_FRAME): the block holds that handler's frames only
    handler: tuple[Line, PrefixFields] | None = None
    # a line of rich's box was read in it (logs/rich_box.py): until its exception line, each line of the box is
    # read as the line CPython prints for it
    rich: bool = False


@dataclass
class _FrameGroup:
    """The frames of one traceback or one thread of a dump, until a non-frame line ends them."""

    innermost_first: bool  # faulthandler and py-spy: most recent call first; tracebacks: last
    # under py-spy's thread line (frames.is_pyspy_thread): its `func (file:line)` frames are read in no block, as a
    # traceback's `File` lines are (a dump pasted as the log, or printed in one: no failure either way)
    pyspy: bool = False
    # under a native debugger's thread line (frames.DEBUGGER_THREAD: lldb's `thread #N, …`, gdb's `Thread N (…):`): its
    # native frames are read in no block too (a debugger attached to a live or hung process printed them)
    debugger: bool = False
    phase: Phase | None = None
    draft: bool = False  # a frame of the draft worker's init holds the stack: its capture is the draft's
    line: Line | None = None
    # the furthest phase a frame proves reached without placing the stack (an anchor's `reached`), and its line
    floor: Phase | None = None
    floor_line: Line | None = None
    floor_key: str = ""
    rank: str | None = None
    key: str = ""
    last_file: str = ""  # the file of the innermost frame so far (a traceback's)
    # the rank the title on py-spy's `Process N: …` line names (`sglang::scheduler_TP0`), carried from that line over
    # the dump's header lines to each thread group of the dump (where no prefix names one); a line of no dump drops it
    title_rank: str | None = None


def _pyspy_header(message: str, group: _FrameGroup | None) -> _FrameGroup | None:
    """py-spy's `Process N: <cmdline>` line, and the lines after it before the first thread (src/dump.rs: `Python v…`,
    `Parent Process N: …` under `--subprocesses`, a blank line; a blank line a paste put between threads too): an
    empty group that carries the rank the title names to the dump's threads. None for any other line."""
    if message.startswith("Process "):
        found = PYSPY_PROCESS.match(message)
        if found is not None:
            tags = role_and_tags_from_title(found["cmd"])[1]
            return _FrameGroup(innermost_first=True, title_rank=rank_from_tags(tags) if tags else None)
    if (
        group is not None
        and group.title_rank is not None
        and (not message.strip() or message.startswith(PYSPY_HEADER_LINES))
    ):
        return _FrameGroup(innermost_first=True, title_rank=group.title_rank)
    return None


@dataclass
class SourceMatcher:
    """Matches the lines of one source in order; keeps what carries from line to line."""

    packs: PackSet
    reference: datetime  # as_of: dates for stamps without one, never after it
    # the log's clock (logs/clock.py): the caller gives the one its head shows (`head_clock`), else a fresh one
    clock: Clock = NO_CLOCK
    block: _Block | None = field(default=None, repr=False)
    systems: Counter[str] = field(default_factory=Counter, repr=False)
    system: str | None = None
    ranks_seen: set[str] = field(default_factory=set, repr=False)
    _frames: _FrameGroup | None = field(default=None, repr=False)
    _frame_phases: dict[str, object] = field(default_factory=dict, repr=False)
    _frame_floors: dict[str, Phase | None] = field(default_factory=dict, repr=False)
    stamps: StampBelief = field(default_factory=StampBelief, repr=False)  # which stamps move last_time

    def __post_init__(self) -> None:
        if self.clock is NO_CLOCK:
            self.clock = Clock(self.reference)
        # what the line just matched was, when a person wrote it: an answer about that line, not state that carries
        # to the next (so no field: a fork copies it as it copies every attribute, and the next line resets it)
        self.edited: Edit | None = None
        # likewise the traceback block the line just matched ended, and that line's number: a paste's last line may be
        # a record cut inside its prefix (`(Worker_TP3 pid=1) ERROR 02-13`), which ends the block by its shape alone
        self._ended: tuple[_Block, int] | None = None
        self._rich_read = False  # the line just matched was read as a line of rich's traceback box
        # like `_ended`, an answer about the line just matched that only the next line reads: that line, of rich's
        # box, may be the first part of a frame's line rich wrapped, which the next line may complete
        # (logs/rich_box.py); the fast path reads that line (`rich_piece`). A fork copies it as every attribute
        self._rich_piece: str | None = None

    def fork(self) -> SourceMatcher:
        """An independent copy, every field carried: what it makes of lines to come is what this
        matcher would make of them, and reading them changes nothing here (the fast path's probe).
        The packs and the frame-phase memo (a function of the packs) are shared, not copied; the ranks
        seen start empty (the fork's own)."""
        state = vars(self).copy()
        for name, value in state.items():
            if name in FRESH_ON_FORK:
                state[name] = type(value)()
            elif not isinstance(value, IMMUTABLE) and name not in SHARED_ON_FORK:
                state[name] = _copied(value)
        forked = SourceMatcher.__new__(SourceMatcher)
        vars(forked).update(state)
        return forked

    @property
    def last_time(self) -> datetime | None:
        """The log's time as far as read: the latest believed stamp (`Clock.time`)."""
        return self.clock.time

    def count_unread(self, system: str, events: int) -> None:
        """Events of `system` on lines this matcher is not shown (a steady run the fast path
        summarises) still count toward the system vote, as if it had read them."""
        self.systems[system] += events

    def match(self, lines: Iterable[Line]) -> Iterator[Event]:
        last: Line | None = None
        for line in lines:
            last = line
            yield from self.match_line(line)
        yield from self.finish(last)

    def finish(self, last: Line | None = None) -> tuple[Event, ...]:
        """Events still held back at the end of the source (a dump's last frame group, the
        exception of a traceback cut before its last line). `last` is the source's last line."""
        held = self._flush_frames()
        block = self.block if self.block is not None else self._cut_record_ended(last)
        cut = (
            self._cut_exception(block)
            or self._frames_only(block)
            or self._dump_only(block)
            or self._handler_only(block)
            or self._cut_at_frame(block)
        )
        if self.stamps.held is not None:
            self.stamps.set_held_aside()  # no second line ever confirmed its clock
        return (*held, cut) if cut is not None else held

    def _cut_record_ended(self, last: Line | None) -> _Block | None:
        """The run of frames the source's last line ended where that line is only a leading part of a line of the
        frames' own writer (its prefix cut: `(Worker_TP3 pid=1) ERROR 02-13` of `(Worker_TP3 pid=1) ERROR 02-13
        15:54:32 [multiproc_executor.py:863]   File "…"`): the paste was cut inside the next record of the same
        traceback, not at a new message, so the frames still end the source."""
        if last is None or self._ended is None or self._ended[1] != last.number:
            return None
        block = self._ended[0]
        cut = last.text.rstrip()
        if block.headless is None or not cut:
            return None
        whole = block.headless[0].text
        return block if len(cut) < len(whole) and whole.startswith(cut) else None

    def _cut_exception(self, block: _Block | None) -> Event | None:
        """A traceback that ended (a new message, the end of the source) before its exception
        line: the innermost frame's `raise Cls("message"` says what was raised, read as the line
        `Cls: message`."""
        if block is None or block.finished or block.ignored or block.raised is None:
            return None
        line, fields, statement = block.raised
        found = RAISE_STATEMENT.match(statement)
        if found is not None:
            cls, args = found["cls"], found["args"].strip().rstrip(")").rstrip(",").strip()
        else:
            asserted = ASSERT_STATEMENT.match(statement)
            assert asserted is not None
            cls, args = "AssertionError", (asserted["args"] or "").strip()
        text = re.sub(r'^[rfbu]{0,2}(["\'])(.*?)\1?$', r"\2", args)
        message = f"{cls}: {text}" if text else cls
        best = self._best_rule(message, fields.prefixes, True)
        if best is None:
            return None
        rule, captures = best
        return self._cut_event(block, line, fields, rule, {**captures, CUT_TRACEBACK: "raise"}, message)

    def _cut_at_frame(self, block: _Block | None) -> Event | None:
        """A traceback whose first line the log holds, ended (a new message, the end of the source) before its
        exception line, with no `raise` statement to read it from: its innermost whole frame (`_Block.frame`) is the
        nearest the excerpt comes to what failed — where the exception was raised or passed through, named by its
        function. Read as the traceback's first line there, marked cut: the header says only that something was
        raised, so judging quotes this frame in its place (`_innermost_frame`)."""
        if (
            block is None
            or block.finished
            or block.failed
            or block.ignored
            or block.frame is None
            or block.rich  # rich's box marks the line its innermost frame stopped at (`❱`): read as it is
            or block.headless is not None
            or block.dump is not None
            or block.handler is not None
        ):
            return None
        if block.raised is not None:
            # the innermost frame's statement raises (`raise value.as_instanceof_cause()`, `assert …`) where no rule
            # read what it raised (`_cut_exception`): that line says what was raised, its frame only where none does
            line, fields, statement = block.raised
            message = f"a traceback cut before its exception line; the statement that raised it: {statement.strip()}"
        else:
            line, fields = block.frame
            message = f"a traceback cut before its exception line; its innermost frame: {line.text.strip()}"
        return self._cut_stand_in(block, line, fields, TRACEBACK_HEADER, FRAME_READ, message)

    def _frames_only(self, block: _Block | None) -> Event | None:
        """The source ends inside a run of traceback frames that neither its `Traceback` line nor its
        exception line came with (a paste of frames cut at both ends): CPython prints frames in that form
        only in a traceback (and `traceback.print_stack`, which a log does not end inside), so an
        exception was printed, its text beyond the excerpt. Read as the traceback's first line, marked
        cut (judging/confidence.py says so), at the innermost frame's source line where the excerpt holds one: where
        the exception was raised or passed through, the nearest line to the one cut (labels quote it: realworld 529,
        590, 601, 748, 811, 821; 430 quotes the outermost frame)."""
        if block is None or block.finished or block.failed or block.ignored or block.headless is None:
            return None
        line, fields = block.headless
        message = "a traceback's frames, cut before its first line and its exception line"
        if block.frame is not None and not block.rich:
            line, fields = block.frame
            message = f"{message}; its innermost frame: {line.text.strip()}"
        elif block.statement is not None:
            # rich's box marks the line its innermost frame stopped at (`❱`), the statement read here; elsewhere no
            # frame was whole: its source line is the nearest to the exception
            line, quoted = block.statement
            message = f"{message}; its innermost frame's line: {quoted.strip()}"
        return self._cut_stand_in(block, line, fields, TRACEBACK_HEADER, "frames", message)

    def _dump_only(self, block: _Block | None) -> Event | None:
        """The source ends inside a faulthandler dump whose header is not in it (a paste cut above its `Current
        thread` line, or above the threads before it; or above its `Stack` line, the same dumps' one thread where all
        threads were not asked for). faulthandler labels a `Current thread` in two dumps only: a
        fatal error's (the process then dies of the signal) and one a signal asked for (`faulthandler.register`,
        the process goes on, so its log does not end in it but where the person stopped it). A log that ends in
        the dump is read as the fatal error's, its header's words (which signal) not known: the dump's thread line,
        marked cut (judging/confidence.py says so), the cause only if nothing else is. A dump the program's own
        lines follow ended the block before the end: nothing is read from it but where its frames place the rank."""
        if block is None or block.dump is None:
            return None  # (its other threads' lines are failures' in_block marks: `failed` says nothing here)
        line, fields, rule, captures = block.dump
        message = "a faulthandler dump whose header is not in the excerpt (a fatal error's: which one is not said)"
        return self._cut_stand_in(block, line, fields, (rule, captures), "dump", message)

    def _handler_only(self, block: _Block | None) -> Event | None:
        """A run of a fatal signal handler's frames whose header is not in the log (Open MPI's `[host:pid] [ 8] …`: a
        paste cut above its `*** Process received signal ***`), ended by another line or by the end of the source.
        Open MPI prints frames with that prefix from its handler alone, which then raises the signal again: read as
        its header, marked cut (judging/confidence.py says so), at the run's first frame, which signal not known; the
        cause only if nothing else is."""
        if block is None or block.handler is None:
            return None
        line, fields = block.handler
        message = "a fatal signal handler's frames, cut below its header (which signal is not said)"
        return self._cut_stand_in(block, line, fields, SIGNAL_HANDLER_HEADER, "handler", message)

    def cut_header(self, line: Line) -> Event | None:
        """The source's last line, which no rule read, is a traceback's first line cut before its end: a paste cut
        while CPython began printing an exception (`Trace`, of `Traceback (most recent call last):`; `Process
        mp_engine_proc`, of multiprocessing's `Process <name>:`). An exception was printed, its text beyond the
        excerpt: read as the whole header, marked cut (judging/confidence.py says so), the cause only if nothing
        else is."""
        fields, message = self.packs.split_prefix(line.text)
        header = cut_header(message.strip())
        if header is None:
            return None
        block = _Block(line.number, fields.rank, fields.prefixes)
        return self._cut_stand_in(block, line, fields, header, "header", message)

    def cut_phase_line(self, line: Line) -> Event | None:
        """The source's last line, which no rule read, is a step's line cut before the end of the text its rule's
        every match starts with (a rule's leading literal: `Warming u` of TGI's `Warming up model`): the paste was cut
        while the program printed it. Read as a mark of that rule's phase placed by no rule (judging says so, at low
        confidence), never a failure or a ready server (an end's cut line: a mark of its phase); only where every
        rule whose lead it begins gives one phase (`cut_phase`)."""
        fields, message = self.packs.split_prefix(line.text)
        placed = cut_phase(self.packs, message.rstrip(), fields.prefixes)
        if placed is None:
            return None
        rule, lead = placed
        return Event(
            source=line.source,
            line=line.number,
            time=self.last_time,
            rank=self._rank(fields, {}, False),
            rule=cut_rule(rule),
            captures={PLACED_BY: rule.id, CUT_LEAD: lead, CUT_KIND: rule.kind.value, CUT_ROLE: rule.role.value},
            text=line.text,
            message=message,
            stamped=False,
        )

    def cut_error_record(self, line: Line) -> Event | None:
        """The source's last line, which no rule read, is a logger's record cut inside its prefix after the prefix
        said its level, an error's (`2025-11-05T01:56:54.292138Z ERROR scheduler.run_sch` of dynamo's tracing format,
        `2025-03-30 18:54:49,299 ERROR serialization.py:462` of Ray's driver format: `cut_error_level`), or one whose
        whole prefix said it and whose message is cut inside a failure rule's lead (`cut_failure`): the program
        logged an error as the paste ended, its words beyond the excerpt. A failure, marked cut (judging/confidence.py
        says so): a cascade, the cause only where nothing else is."""
        fields, message = self.packs.split_prefix(line.text)
        level = cut_error_level(self.packs, line.text.rstrip())
        rule, said = CUT_RECORD_RULE, "cut before its message"
        if level is None and fields.level in LOGGED_ERROR_LEVELS:
            # a whole prefix at an error level, its message cut inside a failure rule's lead (`Error executing metho`
            # of vLLM's worker_base `Error executing method …`): that failure, its words beyond the excerpt
            found = cut_failure(self.packs, message.rstrip(), fields.prefixes)
            if found is not None:
                level, rule, said = fields.level, replace(found[0], role=Role.CASCADE), f"cut inside `{found[1]}`"
        if level is None:
            return None
        return Event(
            source=line.source,
            line=line.number,
            time=self.last_time,
            rank=self._rank(fields, {}, False),
            rule=rule,
            captures={CUT_TRACEBACK: RECORD_READ, "level": level},
            text=line.text,
            message=f"{line.text.strip()} (a record logged at {level}, {said})",
            stamped=False,
        )

    def _cut_stand_in(
        self,
        block: _Block,
        line: Line,
        fields: PrefixFields,
        header: str | tuple[Rule, dict[str, str]],
        read_from: str,
        message: str,
    ) -> Event | None:
        """The event that stands for a block's line the log does not hold (a traceback's or a dump's header, a
        signal handler's banner): `header` is that line's text, read by the rules as the line would be where
        `fields` (the block's first line's prefix) stand, or the rule and captures that already read the block's
        thread line; `read_from` says how it was read (CUT_TRACEBACK). None where no rule reads the header. The
        line it stands for is not in the log, so it is a cascade: the cause only where nothing else is."""
        best = self._best_rule(header, fields.prefixes, False) if isinstance(header, str) else header
        if best is None:
            return None
        rule, captures = best
        rule = replace(rule, role=Role.CASCADE)
        return self._cut_event(block, line, fields, rule, {**captures, CUT_TRACEBACK: read_from}, message)

    def _cut_event(
        self, block: _Block, line: Line, fields: PrefixFields, rule: Rule, captures: dict[str, str], message: str
    ) -> Event:
        """The event that stands for a traceback cut before its exception line (`captures` say how it was read)."""
        return Event(
            source=line.source,
            line=line.number,
            time=self.last_time,
            rank=fields.rank if fields.rank is not None else block.rank,
            rule=rule,
            captures=captures,
            text=line.text,
            message=message,
            block=block.opener_line,
            stamped=False,
        )

    @property
    def open_block(self) -> int | None:
        """The first line of the traceback or dump the lines read so far leave open (its exception line not read,
        nothing after it yet), or None: read live, its rest may still be on its way."""
        block = self.block
        return block.opener_line if block is not None and not block.finished and not block.ignored else None

    @property
    def rich_piece(self) -> bool:
        """The line just read may be the first part of a wrapped frame of rich's box: the next line must be read."""
        return self._rich_piece is not None

    def match_line(self, line: Line) -> tuple[Event, ...]:
        self._rich_read = False
        piece, self._rich_piece = self._rich_piece, None  # it joins the very next line only
        events = self._match_line(line, piece)
        if self._rich_read and self.block is not None:
            self.block.rich = True  # the box this line opened or continued
        return events

    def _match_line(self, line: Line, piece: str | None) -> tuple[Event, ...]:
        fields, message = self.packs.split_prefix(line.text)
        self.edited = edit(message) if not fields.prefixes else None
        if self.edited is Edit.NOTE and message.lstrip().startswith("#") and self.system in self.packs.comment_systems:
            self.edited = None  # nccl-tests' own `#` lines
        if self.edited in (Edit.NOTE, Edit.ELISION) and not self._claimed(message, fields.prefixes):
            # a person's note or cut: no line of the run's, so it leaves the clock, a traceback it sits in and the
            # step untouched (its words are never a rule's: `# then NCCL error: …` is what someone thinks)
            return _NOTHING
        if self.edited is not Edit.KEYSTROKE:
            self.edited = None  # a program's line of that shape (nccl-tests' `# Out of bounds values`)
        if line.rank is not None and fields.rank is None:
            fields = _with_envelope_rank(fields, line.rank)
        self.clock, stamp = self.clock.read(line.number, fields, line.stamp, self.stamps)
        message, flat = self._indented(message)
        if message.startswith(RICH_STARTS):
            message = self._rich(message, piece)
        block = self.block
        inside = self._continues_block(fields, message)
        self._ended = (block, line.number) if block is not None and self.block is None else None
        cut = (
            (self._cut_exception(block) or self._handler_only(block) or self._cut_at_frame(block))
            if self.block is not block
            else None
        )
        before = (cut,) if cut is not None else _NOTHING
        if not inside and fields.level in LOGGED_ERROR_LEVELS and LOGGED_EXCEPTION.match(message):
            self.block = _Block(line.number, fields.rank, fields.prefixes)  # a logged exception line (above)
            inside = True
        if message.startswith(CAUGHT_FRAME):
            message = "  " + message[2:]
        # after the exception line no frame comes but a `File "` one: an indented line there is the exception's
        # message continued (torchrun's ChildFailedError prints its failure table as its message), read by the rules
        framed = inside and not (self.block is not None and self.block.finished)
        group = self._frames
        if not framed and group is not None and group.pyspy:
            if PYSPY_FRAME.match(message):
                framed = True
            elif message.startswith(PYSPY_LOCALS):
                return before  # `--locals`' lines under a frame: the thread's frames go on after them
        if message[:1].isspace() and (framed or message.lstrip().startswith('File "')) and not _is_what(message):
            # a frame or a quoted code line: never a message, but a frame can tell the phase
            if not inside and TRACEBACK_FRAME.match(message):
                # an excerpt cut before its `Traceback` line: the frames are the block
                self.block = _Block(line.number, fields.rank, fields.prefixes, headless=(line, fields))
                inside = True
            if self.block is not None and inside:
                if flat:
                    self.block.flat_step = 1  # its source line comes next, at the margin too
                if RAISE_STATEMENT.match(message) or ASSERT_STATEMENT.match(message):
                    self.block.raised = (line, fields, message)
                framed_at = TRACEBACK_FRAME.match(message)
                if framed_at is not None:
                    self.block.raised = None  # a deeper frame: its own source line comes next
                    self.block.quoting = True
                    if message[framed_at.end() :].strip():  # the paste kept it up to its function's name
                        self.block.frame = (line, fields)
                elif self.block.quoting and message.strip().strip("^~"):
                    # (not a `^^^` marker line, nor one of whitespace alone: a log viewer's line between records)
                    self.block.statement, self.block.quoting = (line, message), False
            self._note_frame(line, fields, message, inside)
            return before
        if not inside and SIGNAL_HANDLER_FRAME.match(message):
            # a fatal signal handler's frame with no block open: its header is above the excerpt
            self.block = _Block(line.number, fields.rank, fields.prefixes, handler=(line, fields))
            inside = True
        native = native_frame_key(message) if inside else None
        if native is None and group is not None and group.debugger:
            native = debugger_frame_key(message)
        if native is not None:
            # a C/C++ backtrace's frame inside the failure's text (c10's `frame #N:`, TensorRT-LLM's trace), or under
            # a debugger's thread line: it places the stack as a Python frame does, and stays a line rules may read
            # (a checkTimeout frame)
            self._note_frame(line, fields, message, inside, native=native)
            held = before
        else:
            held = (*before, *self._flush_frames())
        if native is None and DEBUGGER_THREAD.match(message):
            self._frames = _FrameGroup(innermost_first=True, debugger=True)
        elif message.startswith(FRAME_HEADERS):
            pyspy = is_pyspy_thread(message)
            self._frames = _FrameGroup(
                innermost_first=not message.startswith("Traceback"),
                pyspy=pyspy,
                title_rank=group.title_rank if pyspy and group is not None else None,
            )
        elif native is None:
            self._frames = _pyspy_header(message, group)
        event = self._message_event(line, fields, message, stamp, inside)
        thread = self._dump_thread(message, fields) if event is None and not inside else None
        if thread is not None:
            # a dump's thread line outside any block: its header is not in the log; the dump is read at its end
            self.block = _Block(line.number, fields.rank, fields.prefixes, dump=(line, fields, *thread))
        if fields.rank is not None and (event is None or event.role is not Role.DIAGNOSTIC):
            # a rank that only shows up in a dump's header (`Pyspy dump for PID`) is not seen healthy
            self.ranks_seen.add(fields.rank)
        if event is None:
            return held
        return (*held, event) if held else (event,)

    def _indented(self, message: str) -> tuple[str, bool]:
        """A traceback's frame, source line and carets whose indentation was lost (FLAT_FRAME), indented again; and
        whether the line is such a frame (its block then waits for its source line)."""
        if message.startswith('File "') and FLAT_FRAME.match(message):
            return "  " + message, True
        block = self.block
        if block is None or not block.flat_step:
            return message, False
        step, block.flat_step = block.flat_step, 0
        if step == 1 and message.strip() and not message[:1].isspace():
            block.flat_step = 2
            return "    " + message, False
        if step == 2 and CARETS.match(message):
            return "    " + message, False
        return message, False

    def _rich(self, message: str, piece: str | None) -> str:
        """A line of rich's traceback box read as the line CPython prints for it (logs/rich_box.py); any other line
        as it is. A frame's line rich wrapped is read on the box line that completes it (`piece`: the line before's
        first part of one)."""
        block = self.block
        in_box = block is not None and block.rich and not block.finished
        text, self._rich_piece = translated(message, in_box, piece)
        if text is None:
            return message
        self._rich_read = True
        return text

    def _dump_thread(self, message: str, fields: PrefixFields) -> tuple[Rule, dict[str, str]] | None:
        """The rule (and its captures) that reads `message` as a faulthandler dump's `Current thread` (or `Stack`)
        line, as inside a dump's block; None for any other line."""
        if not message.startswith(DUMPING_THREAD):
            return None
        best = self._best_rule(message, fields.prefixes, True)
        return best if best is not None and best[0].in_block and best[0].kind is EventKind.FATAL else None

    def _claimed(self, message: str, prefixes: tuple[str, ...]) -> bool:
        """Whether a rule anchored on the line's first character reads it: the program prints lines of that shape
        (nccl-tests' `# nThread …`, vLLM's `# GPU blocks:`), so it is the program's, not a person's."""
        best = self._best_rule(message, prefixes, inside=False)
        if best is None:
            return False
        lead = best[0].pattern.text.removeprefix("^").removeprefix("\\")
        return lead[:1] == message.lstrip()[:1]

    @property
    def clock_pending(self) -> bool:
        """A stamp far ahead of the log's clock waits for the next stamped line to confirm it."""
        return self.stamps.held is not None

    def restart_clock(self, event: Event) -> Event:
        """A new start of the server in the same log: its clock starts again (a restarted container's
        lines may be stamped before the old ones'); `event`, the line that began it, re-timed."""
        self.stamps.restart(event.line)
        fields, _ = self.packs.split_prefix(event.text)
        self.clock = self.clock.restarted(fields)
        return event if fields.time is None else replace(event, time=self.clock.time)

    def _message_event(
        self, line: Line, fields: PrefixFields, message: str, stamp: datetime | None, inside: bool
    ) -> Event | None:
        best = self._best_rule(message, fields.prefixes, inside)
        if best is None:
            return self._fallback_event(line, fields, message, stamp, inside)
        rule, captures = best
        if rule.system:
            self.systems[rule.system] += 1
            if rule.system != self.system and self.systems[rule.system] > self.systems[self.system or ""]:
                self.system = rule.system  # the system this log has shown most so far
        rank = self._rank(fields, captures, inside)
        block_line = self.block.opener_line if inside and self.block else None
        tail = self._tail(message, rule) if inside else None
        if rule.opens_block and not inside:
            # a `Traceback` line right after `Process Process-6:` continues the same block
            self.block = _Block(line.number, rank, fields.prefixes, ignored=rule.ignored_block)
            block_line = line.number
        elif inside and self.block is not None and rule.kind in STATED_KINDS and not rule.opens_block:
            # the exception line (a C++ `what():` may state a watchdog's timeout): what follows is a new message
            captures = {**captures, **self._statement(self.block, message)}
            self.block.finished = True
            self.block.stated_by = self.block.stated_by or rule.id
        if inside and self.block is not None and rule.kind in FAILURE_KINDS:
            if self.block.ignored:
                rule = ignored_rule(rule)
            else:
                self.block.failed = True
        return Event(
            source=line.source,
            line=line.number,
            time=self.last_time,
            rank=rank,
            rule=rule,
            captures=captures,
            text=line.text,
            message=message,
            block=block_line,
            tail=tail,
            stamped=stamp is not None,
        )

    @staticmethod
    def _statement(block: _Block, message: str) -> dict[str, str]:
        """The innermost frame's source line, where `message`, the block's first exception line, names its class
        alone (BARE_EXCEPTION) and that frame quoted one (a frame with no source line leaves `quoting` set)."""
        if block.finished or block.quoting or block.statement is None or not BARE_EXCEPTION.fullmatch(message.strip()):
            return {}
        line, quoted = block.statement
        return {STATEMENT_LINE: str(line.number), STATEMENT_TEXT: line.text, STATEMENT: quoted.strip()}

    def _tail(self, message: str, rule: Rule) -> Tail | None:
        """How a line inside the block, read by `rule`, follows its exception line (`Tail`), read before the line
        itself moves the block on. A C++ `what():` or pydantic's `  Value error, …` says what failed (`_is_what`):
        never a tail, though pydantic prints it under its exception line (`ValidationError: 1 validation error for
        ModelConfig`), as a traceback cut above it reads it (its detail the cause); a line of the exception line's own
        rule again at the margin is a second failure's (two writers' C++ `what():` lines glued), and a rule that
        opens a block opens another traceback."""
        block = self.block
        if block is None or not block.finished or _is_what(message):
            return None
        if message[:1].isspace():
            return Tail.MESSAGE
        if rule.opens_block or rule.id == block.stated_by:
            return None
        return Tail.FOLLOWING

    def _fallback_event(
        self, line: Line, fields: PrefixFields, message: str, stamp: datetime | None, inside: bool
    ) -> Event | None:
        """A line of a known system that no rule reads, placed by the logger's module its prefix names (`[[module]]`),
        outside a traceback: a diagnostic mark at low confidence (judging/confidence.py), never a failure."""
        if fields.module is None or inside:
            return None
        hint = self.packs.module_hint(fields.module, fields.prefixes, message)
        if hint is None:
            return None
        return Event(
            source=line.source,
            line=line.number,
            time=self.last_time,
            rank=self._rank(fields, {}, inside),
            rule=fallback_rule(hint),
            captures={PLACED_BY: hint.file},
            text=line.text,
            message=message,
            stamped=stamp is not None,
        )

    def _best_rule(self, message: str, prefixes: tuple[str, ...], inside: bool) -> tuple[Rule, dict[str, str]] | None:
        """The highest-priority rule that matches — but a line that several systems print alike
        (uvicorn's `Application startup complete.`, a rule with `system = ""`, or another system's
        rule) goes to a rule of the system this log has shown so far, when one matches."""
        lowered = message.lower()
        system = self.system
        winner: tuple[Rule, dict[str, str]] | None = None
        for rule in self.packs.candidate_rules(lowered):  # sorted by priority
            if (rule.in_block and not inside) or (winner is not None and rule.system != system):
                continue
            literal = rule.literal
            if literal is not None and literal not in (lowered if rule.ignore_case else message):
                continue  # Rule.prefilter, inlined: this loop runs for every line
            captures = rule.match_prefiltered(message, prefixes)
            if captures is None:
                continue
            if winner is not None:
                return rule, captures
            winner = (rule, captures)
            if system is None or rule.system is None or rule.system == system:
                return winner
        return winner

    def _note_frame(
        self, line: Line, fields: PrefixFields, message: str, inside: bool, *, native: str | None = None
    ) -> None:
        """Remember the frame that proves the stack's phase; the group's event comes at its end. Start-up
        steps nest forward (a KV-cache profile calls the compiler, a draft worker's init its capture), so a
        stack is in the latest phase any of its frames proves: an inner frame refines an outer step, never
        takes a serving loop back to start-up (a weight update's process group while serving; a compile
        inside a capture is the capture's). Of frames proving one phase, the innermost names it. A
        traceback's source line under its innermost frame names the call into the next frame, which a
        traceback cut there no longer shows (`self.init_torch_distributed()`): that call counts as a frame.
        `native`: the key of a native backtrace's frame (innermost first, as every native printer writes them)."""
        framed = frame_key(message) if native is None else None
        key = native or (framed if framed is not None else self._called(message))
        if key is None:
            return
        group = self._frames
        if group is None:
            # a dump's tail with no header: faulthandler writes `line N in f`, a traceback `line N, in f`
            group = self._frames = _FrameGroup(innermost_first=native is not None or ", in " not in message)
        if framed is not None:
            group.last_file = framed.rsplit(" (", 1)[1][:-1]
        phase = self._frame_phases.get(key, _UNSEEN)
        if phase is _UNSEEN:
            phase = self.packs.frame_phase(key)
            if len(self._frame_phases) < FRAME_CACHE:
                self._frame_phases[key] = phase
        if not isinstance(phase, Phase):
            self._note_floor(group, line, fields, key, inside)
            return
        group.draft = group.draft or phase is Phase.DRAFT_INIT
        held = group.phase
        if held is None or phase.order > held.order or (phase is held and not group.innermost_first):
            group.phase, group.line, group.key = phase, line, key
            rank = fields.rank if fields.rank is not None else (self.block.rank if inside and self.block else None)
            group.rank = rank if rank is not None else group.title_rank

    def _note_floor(self, group: _FrameGroup, line: Line, fields: PrefixFields, key: str, inside: bool) -> None:
        """A frame no anchor places that proves a phase reached (an anchor's `reached`: a method of a group that
        exists only once the process group was built): the stack's floor, where no frame places it further."""
        if key in self._frame_floors:
            floor = self._frame_floors[key]
        else:
            floor = self.packs.frame_floor(key)
            if len(self._frame_floors) < FRAME_CACHE:
                self._frame_floors[key] = floor
        if floor is None or (group.floor is not None and floor.order <= group.floor.order):
            return
        group.floor, group.floor_line, group.floor_key = floor, line, key
        if group.phase is None:
            rank = fields.rank if fields.rank is not None else (self.block.rank if inside and self.block else None)
            group.rank = rank if rank is not None else group.title_rank

    def _called(self, message: str) -> str | None:
        """The frame key of the function a traceback's source line calls, in the file of the frame above it."""
        group = self._frames
        if group is None or group.innermost_first or not group.last_file:
            return None
        called = CALLED.match(message[:CALL_SPAN])  # bounded: the regex backtracks over a long run of spaces
        return f"{called['function']} ({group.last_file})" if called else None

    def _flush_frames(self) -> tuple[Event, ...]:
        group, self._frames = self._frames, None
        if group is None:
            return _NOTHING
        floor = group.floor
        if group.phase is not None and group.line is not None:
            line, reached = group.line, floor if floor is not None and floor.order > group.phase.order else None
            rule = frame_rule(group.phase, group.draft and group.phase is Phase.CUDA_GRAPH, reached)
            key = group.key
        elif floor is not None and group.floor_line is not None:
            line, rule = group.floor_line, frame_rule(None, reached=floor)
            key = group.floor_key
        else:
            return _NOTHING
        return (
            Event(
                source=line.source,
                line=line.number,
                time=self.last_time,
                rank=group.rank,
                rule=rule,
                captures={"frame": key},
                text=line.text,
                message=line.text.strip(),
                stamped=False,
            ),
        )

    def _continues_block(self, fields: PrefixFields, message: str) -> bool:
        """Inside a traceback: unprefixed lines, and lines with the opener's own prefix (vLLM
        prefixes every traceback line). After the exception line, its message's further lines and
        a chained traceback (`During handling of the above exception`) still belong to it; another
        rank's line, a new message or a new traceback ends it."""
        block = self.block
        if block is None:
            return False
        same_writer = (
            not fields.prefixes
            or (fields.prefixes == block.prefixes and fields.rank == block.rank)
            or _wrapped_record_goes_on(fields, block)
        )
        if block.handler is not None:
            # a handler's frames without their header: the run of them (two processes' may interleave)
            if same_writer and SIGNAL_HANDLER_FRAME.match(message):
                return True
            self.block = None
            return False
        if block.dump is not None:
            # a dump without its header holds threads, their frames (indented) and the blank lines between them
            if same_writer and (not message.strip() or message[:1].isspace() or message.startswith(BLOCK_MARKERS)):
                return True
            self.block = None
            return False
        if same_writer:
            if message.startswith(CHAINED):
                block.finished, block.stated_by = False, ""
                return True
            if not block.finished:
                if not fields.prefixes or not message.strip() or message[:1].isspace():
                    return True
                if message.startswith(BLOCK_MARKERS):
                    return True
                # the exception line that ends the traceback, in the same prefix: keep it in the block
                if any(r.in_block and r.match(message, fields.prefixes) is not None for r in self.packs.rules):
                    return True
            elif _stream_tag(fields) and not self._opens_block(message):
                # the exception message's further lines: CUDA's hints, a C++ what(), torch's NCCL error's `Last
                # error:` and NCCL's text after it, unprefixed or under the tag its stream puts on every line
                return True
            elif not message.strip():
                return True  # the blank line CPython prints before `The above exception ...` (vLLM prefixes it)
            elif message[:1].isspace() and not message.lstrip().startswith('File "'):
                # the message's indented text under a logger that prefixes every line of a traceback (vLLM's
                # NewLineFormatter): pydantic's `  Value error, …`, a failure table's rows
                return True
        self.block = None
        return False

    def _opens_block(self, message: str) -> bool:
        return message.startswith(BLOCK_MARKERS) or any(
            rule.opens_block and rule.match(message) is not None for rule in self.packs.rules
        )

    def _rank(self, fields: PrefixFields, captures: Mapping[str, str], inside: bool) -> str | None:
        if "tags" in captures:
            tagged = rank_from_tags(captures["tags"])
            if tagged:
                return tagged
        if fields.rank is not None:
            # the prefix names who wrote the line (torch's `[rank13]:`, the global rank); a `[Rank 1]` in the
            # message may be the rank within a sub-group (a `[PG ID 11 …]` process group)
            return fields.rank
        if (label := rank_label(captures.get("rank"))) is not None:
            return label
        if inside and self.block is not None:
            return self.block.rank
        return None


def _stream_tag(fields: PrefixFields) -> bool:
    """No prefix, or one that only names the writer (torch's `[rank1]: `, a Ray worker's `(pid=N) `): a tag its
    stream puts on every line, as a launcher does, not a logger's record (no time, no level, no module). Under it a
    line at the margin after the exception line goes on as an unprefixed one does; a logger's next record is a new
    message."""
    return fields.time is None and fields.level is None and fields.module is None


def _with_envelope_rank(fields: PrefixFields, rank: str) -> PrefixFields:
    """The rank an envelope's label gives a line whose prefix has none (srun's `3: `), kept apart from
    other writers as a prefix of its own (its time is the clock's: `Clock.read`)."""
    number = rank.rsplit(" ", 1)[-1]  # `task 3`, `local_rank 3`: the timeline counts ranks
    return replace(fields, rank=f"rank {number}", prefixes=(*fields.prefixes, ENVELOPE_RANK))


# multiprocessing's process.py `_bootstrap`: `Process %s:` with the process's name, then the traceback. A name is one
# token; one cut before its colon is told from words by a character a word has not (`mp_engine_proc`, `Process-1`).
PROCESS_HEADER_CUT = re.compile(r"Process [A-Za-z][\w.-]*[_\-\d][\w.-]*(?::\d+)*")
HEADER_CUT_MIN = 5  # `Trace`: shorter leads (`T`, `Tr`) are words as often as a cut


# A step's line cut at the paste's end is told from a whole line by what it holds of its rule's lead: a whole word,
# then part of the next (`Warming u`): a lone word, or a few letters, is the start of other lines as often. One real
# log is cut inside a step no whole line placed (real-771, TGI's `Warming u`); real-400, 663 and 770 are cut inside
# a line of a step already placed, which the timeline leaves to the whole line before it.
CUT_LEAD_MIN = 8
# A shorter lead (`nccl` of NCCL's `ncclCommInitAll comm 0x… rank 1 nranks 2 … busId 2d000 comm`, cut inside its
# `commId`: realworld 1241) tells the line where it goes on in the rule's own words: at least this many of the words
# its regex spells out (three letters or more), besides the lead's. A line of other words, or a rule whose regex
# matches anything after its lead (`.*`), has too few of them.
CUT_SHORT_LEAD_MIN = 4
CUT_RULE_WORDS_MIN = 3
_WORD = re.compile(r"[A-Za-z]{3,}")
_GROUP_NAME = re.compile(r"\(\?P<\w+>|\(\?P=\w+\)|\\[A-Za-z]")
# The longest cut line whose regex is tried for a partial match (`_partial`): a step's line is a line, and a crafted
# long one must not cost a regex's backtracking over all of it
CUT_PARTIAL_MAX = 2_000
# The kinds a cut line may place: a step's lines, its end's too: what is left still says which step ended (`Graph
# capt` of vLLM's `Graph capturing finished in …`; README, `root_cause_line`: a line cut short counts when it holds
# its message's first words), read as a mark of the step's phase placed by no rule, its count not read. A cut failure
# or ready line says less than its whole text, which the rule's regex needs (a ready line's URL); a cut traceback's
# first line is `cut_header`'s.
CUT_KINDS = frozenset({EventKind.BEGIN, EventKind.PROGRESS, EventKind.MARK, EventKind.END})


def _wrapped_record_goes_on(fields: PrefixFields, block: _Block) -> bool:
    """Whether a line under an outer writer's prefix alone goes on the record that opened `block` under that prefix and
    a logger's own after it. Python logging's Formatter writes a record's prefix once, before the first line of its
    message; the message's further lines (a traceback it holds, `exc_text`) come bare. A wrapper that prefixes every
    physical line of the process's output (a second logger re-logging it, a launcher's process tag) gives those lines
    its own prefix alone: the opener's prefixes without the inner logger's, and no other rank's."""
    outer = fields.prefixes
    return (
        0 < len(outer) < len(block.prefixes)
        and block.prefixes[: len(outer)] == outer
        and fields.rank in (None, block.rank)
    )


def cut_phase(packs: PackSet, message: str, prefixes: tuple[str, ...]) -> tuple[Rule, str] | None:
    """The rule of a step's line that `message`, cut before its end, begins, and the lead it was told by; None where it
    is no such cut (too short, no whole word), or the rules it begins (and whose `after_prefix` its prefixes pass)
    place it in more than one phase. A message begins a rule's line where it is a proper prefix of one of the rule's
    leads (`branch_leads`: the text a branch of a `^`-anchored regex starts with; `Warming u` of TGI's `Warming up
    model`), or holds a whole lead of CUT_LEAD_MIN characters and the regex can still match it once the line goes on
    (a partial match: `Using cache directory: /root/.cache/…/eagle_head` of vLLM's `Using cache directory: … for vLLM's
    torch.compile`, `Checking if Neuron` of its platform probe). Only a rule whose regex starts `^` with the message's
    first character or a group is parsed for its leads: the few a line can be."""
    if len(message) < CUT_LEAD_MIN or " " not in message.strip():
        return None
    starts = ("^" + message[0], "^\\" + message[0], "^(")
    found: list[tuple[Rule, str]] = []
    for rule in packs.rules:
        if (
            rule.kind not in CUT_KINDS
            or rule.phase is None
            or rule.in_block
            or rule.ignore_case
            or not rule.pattern.text.startswith(starts)
        ):
            continue
        if rule.after_prefix and not any(prefix in prefixes for prefix in rule.after_prefix):
            continue
        lead = _cut_lead(rule.pattern.text, message)
        if lead is not None:
            found.append((rule, lead))
    if not found or len({rule.phase for rule, _ in found}) > 1:
        return None
    return found[0]


def cut_failure(packs: PackSet, message: str, prefixes: tuple[str, ...]) -> tuple[Rule, str] | None:
    """The failure rule whose line `message`, cut before its end, begins, and the lead it was told by (as `cut_phase`
    tells a step's): read only under a prefix that said an error level (Matcher.cut_error_record), where the level
    and the rule's own words agree that a failure was logged. None where no rule's lead is begun, or the rules begun
    give more than one kind of failure."""
    if len(message) < CUT_LEAD_MIN or " " not in message.strip():
        return None
    starts = ("^" + message[0], "^\\" + message[0], "^(")
    found: list[tuple[Rule, str]] = []
    for rule in packs.rules:
        if (
            rule.kind not in FAILURE_KINDS
            or rule.in_block
            or rule.ignore_case
            or not rule.pattern.text.startswith(starts)
            or (rule.after_prefix and not any(prefix in prefixes for prefix in rule.after_prefix))
        ):
            continue
        lead = _cut_lead(rule.pattern.text, message)
        if lead is not None:
            found.append((rule, lead))
    if not found or len({rule.kind for rule, _ in found}) > 1:
        return None
    return found[0]


def _cut_lead(pattern_text: str, message: str) -> str | None:
    """The lead of the regex that `message`, a line cut before its end, is told by (`cut_phase`), or None."""
    leads = branch_leads(pattern_text)
    for lead in leads:
        if len(message) < len(lead) and lead.startswith(message):
            return lead
    for lead in leads:
        if (
            (len(lead) >= CUT_LEAD_MIN or _short_lead(pattern_text, message, lead))
            and len(message) <= CUT_PARTIAL_MAX
            and message.startswith(lead)
            and _partial(pattern_text, message)
        ):
            return lead
    return None


def _short_lead(pattern_text: str, message: str, lead: str) -> bool:
    """Whether `message` goes on after its short `lead` in CUT_RULE_WORDS_MIN of the words the regex spells out."""
    if len(lead) < CUT_SHORT_LEAD_MIN:
        return False
    spelled = set(_WORD.findall(_GROUP_NAME.sub(" ", pattern_text))) - set(_WORD.findall(lead))
    return len(spelled & set(_WORD.findall(message[len(lead) :]))) >= CUT_RULE_WORDS_MIN


def _partial(pattern_text: str, message: str) -> bool:
    """Whether the whole message is the start of a line the regex matches, and no whole match (the rule would have
    read it): the regex module's partial matching, which stops at the text's end where more could follow."""
    import regex  # only a last line no rule read (~5 ms of import)

    found = regex.compile(pattern_text).fullmatch(message, partial=True)
    return found is not None and bool(found.partial)


def cut_error_level(packs: PackSet, text: str) -> str | None:
    """The error level (LOGGED_ERROR_LEVELS) a line cut inside a prefix template holds: the text is the start of a line
    the template's regex matches, the regex wants more where the text ends (the regex module's partial matching), and
    its `level` group had closed before (a level cut itself, `ERR`, is no level). None for a line whose prefix a
    template reads whole with its level, whatever follows it (its message may be any words, another template's
    partial match of them says nothing), and for a level that is no error's."""
    import regex  # only a last line no rule read (~5 ms of import)

    if packs.split_prefix(text)[0].level is not None:
        return None  # a prefix read whole said its level: the record's words follow it, cut or not
    for prefix in packs.prefixes:
        groups = prefix.pattern.groups
        if groups is not None and "level" not in groups:
            continue
        found = regex.compile(prefix.pattern.text).match(text, partial=True)
        if found is None or not found.partial or "level" not in found.groupdict():
            continue
        level = found.group("level")
        if level in LOGGED_ERROR_LEVELS and found.end("level") < len(text):
            return str(level)
    return None


# CUT_TRACEBACK's value for a logger's record cut inside its prefix after an error level (`cut_error_level`)
RECORD_READ = "record"
# The rule a record cut after its error level carries (Matcher.cut_error_record): a failure that says no more than
# its level, read by no pack's rule; a cascade, so a line that states a failure stays the cause.
CUT_RECORD_RULE = unmatched_rule(
    id=f"{FALLBACK_PACK}.cut.error_record",
    pack=FALLBACK_PACK,
    kind=EventKind.ERROR,
    role=Role.CASCADE,
    summary="the log's last line, a record its logger wrote at an error level, cut before its message",
)


@cache
def cut_rule(rule: Rule) -> Rule:
    """The rule a step's line cut at the paste's end carries (`cut_phase`): a diagnostic mark of `rule`'s phase in the
    fallback pack, so the timeline counts the phase as placed by no rule (judging/confidence.py: low confidence)."""
    return replace(
        rule,
        id=f"{FALLBACK_PACK}.cut.{rule.id}",
        pack=FALLBACK_PACK,
        kind=EventKind.MARK,
        role=Role.DIAGNOSTIC,
        priority=0,
        literal=None,
        pattern=PackRegex("(?!)", False, None),  # never matches a line: made from a cut one
        after_prefix=(),
        opens_block=False,
        ambient=False,
        closes_from=None,
        reached=None,
        summary=f"a last line cut inside {rule.id}'s leading text, no rule read it",
        examples=(),
        counter_examples=(),
    )


def cut_header(text: str) -> str | None:
    """The traceback header that `text`, cut before its end, begins (multiprocessing's `Process <name>:` heads one
    too); None for a whole line or any other text."""
    if HEADER_CUT_MIN <= len(text) < len(TRACEBACK_HEADER) and TRACEBACK_HEADER.startswith(text):
        return TRACEBACK_HEADER
    if PROCESS_HEADER_CUT.fullmatch(text):
        return TRACEBACK_HEADER  # the traceback it heads follows at once: read as its first line
    return None


def _is_what(message: str) -> bool:
    """The indented `what():` of a C++ exception is its message, not a frame; so is pydantic's error detail
    (PYDANTIC_DETAIL)."""
    return message.lstrip().startswith(CPP_WHAT) or PYDANTIC_DETAIL.match(message) is not None
