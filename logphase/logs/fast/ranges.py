"""Candidate lines of a file's byte ranges, found by worker processes ahead of the ordered walk (`--jobs`).

Most of a big log's scan is `CandidateScan.line_starts`: the byte scan and the check of each line
that holds a steady factor. Its answer for a window of whole lines depends only on the scan's
state (its compiled patterns, the templates and the (template, factor) pairs it knows) and on those
lines' bytes, not on what the matcher read before: so workers compute it for ranges ahead of the
walk under the state the walk had when it queued them, and the walk takes their answer where its
state is still that one, else computes it itself. The walk (FastLines) stays the one ordered pass;
the report is the same with any number of jobs and any range size (tests/test_jobs.py).

Who scans a queued range is decided when it starts, not when it is queued: the walk and the workers
claim it in shared memory (`Claims`), the first one wins. A walk that reaches a range no worker
started scans it itself (and the one after: the worker is then behind, and skips ahead), and while it
waits for a range a worker is scanning, it scans ranges ahead that no worker started (their answers
kept: a scan-bound log, journald's, had the walk idle half the time), so the split follows the work:
where the walk has much besides the scan (CRI's envelope clock), the workers scan nearly every range;
where the scan is most of it (an NCCL storm), the two share them (a fixed share, a range in
`jobs + 1` the walk's, left the walk half the scan of a CRI log). A worker pays only where a core is
idle: while another process holds one of two, its CPU comes out of the walk's core (BENCHMARKS.md).

A window's answer is the union of its pieces' answers when no match spans a newline. The packs'
literals and the learned templates' patterns cannot; the dump trigger `^\\s{4}\\S` can, from a
line shorter than 4 bytes into the next: a window is never cut, nor a worker's answer taken from
inside its range, right after such a line (a "seam"); the walk scans the piece over the seam itself
(two ranges' worth), and takes the workers' answers for the window's other pieces (a spliced log's
blank line on a range's first byte once left a whole window, 130 kB, to the walk).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import count, pairwise
from typing import TYPE_CHECKING, Any

from logphase.errors import LogphaseError
from logphase.jobs import Jobs
from logphase.logs.fast.cache import ScannerCache
from logphase.logs.fast.candidates import CandidateScan, Hits, first_template, gate_open, lines_to_read
from logphase.logs.fast.plan import Check, holds_required, message_matches, message_start
from logphase.logs.fast.scanners import Scanner, make_scanner
from logphase.logs.fast.templates import BareStarts, Template
from logphase.logs.reader import ANSI_ESCAPE_BYTES, uncoloured
from logphase.packs import Rule

if TYPE_CHECKING:  # the process pool's modules load only when workers start (start-up: most runs have none)
    from concurrent.futures import Future, ProcessPoolExecutor

MIN_RANGES = 4  # a file shorter than this many ranges is the walk's alone
LOOKAHEAD = 2  # ranges queued per worker ahead of the walk (one running, one waiting)
SLOTS = 1 << 12  # claims kept in shared memory: far more than the ranges queued at once
WALK_TAKES = True  # the walk scans a range no worker started (False: it waits; the tests' way to make workers answer)
# A state must hold for this share of a range before workers are given ranges under it: a log's
# first lines teach the scan its templates, and ranges scanned under a state left are work lost.
SETTLE_SHARE = 16
# An alternative that may span lines: `^`, N bytes of a class that holds the newline (the dump
# trigger's indent), a non-space: a line shorter than N and its newline may be among the N.
WHITESPACE_RUN = re.compile(rb"\^(?:\\s|\[\\s(?:\\.|[^\]\\])*\])\{(\d+)\}\\S")
INLINE_DOTALL = re.compile(rb"\(\?[a-zA-Z]*s")
SYNTAX = {bytes([byte]) for byte in b"()|?*+^$."}  # what is no atom (`.` stops at a newline)
# One token of a pattern: a byte's hex escape (`\xe2`, rich's box drawing in UTF-8), an escape, a class, or one byte.
TOKEN = re.compile(rb"\\x[0-9a-fA-F]{2}|\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|.", re.DOTALL)


@dataclass(frozen=True)
class ScanState:
    """What `CandidateScan.line_starts` answers from, in a form a worker can receive."""

    generation: int  # the scan's compile count: with `registered`, names the state
    patterns: tuple[tuple[bytes, bool], ...]
    plain_patterns: int
    loose_factors: tuple[tuple[bytes, ...], ...]
    template_regex: bytes | None  # of the first templates (those compiled)
    templates: tuple[Template, ...]  # all the scan knows (`registered` names them by index)
    registered: frozenset[tuple[int, bytes, str]]  # (template index, factor, rule id)
    shadows: tuple[tuple[int, str, tuple[tuple[bytes, Rule], ...]], ...]  # by template index: `Shadows`
    steady: tuple[tuple[bytes, tuple[str, ...]], ...]  # factor → its rules' ids
    requires: tuple[tuple[str, tuple[frozenset[bytes], ...]], ...]  # rule id → the byte sets it needs
    gates: tuple[tuple[str, frozenset[str]], ...]  # rule id → the prefixes it is gated on (`Plan.gates`)
    anchored: tuple[tuple[str, str], ...]  # rule id → its regex, anchored at the message's start (`Plan.anchored`)
    bare: BareStarts | None  # the lines of no prefix (`CandidateScan.bare`)
    checks: tuple[tuple[Check, ...] | None, ...]  # by candidate: what its rules need (`CandidateScan.checks`)
    accelerate: bool
    cache: ScannerCache | None  # the walk's compiled databases: a worker loads what the walk stored
    seams: int  # a pattern may span a line shorter than this (and its newline) into the next

    @property
    def key(self) -> tuple[int, int]:
        return self.generation, len(self.registered)


def state_of(scan: CandidateScan) -> ScanState | None:
    """The scan's state as it compiled it; None when a pattern may span lines in a way the
    ranges cannot reproduce (the walk then computes every window itself)."""
    seams = 0
    for pattern, _ in scan.patterns:
        seams = max([seams, *(int(run) for run in WHITESPACE_RUN.findall(pattern))])
        if not line_local(WHITESPACE_RUN.sub(b"", pattern)):
            return None
    index = {template: number for number, template in enumerate(scan.templates)}
    plan = scan.plan
    return ScanState(
        generation=scan.generation,
        patterns=tuple(scan.patterns),
        plain_patterns=scan.plain_patterns,
        loose_factors=tuple(tuple(factors) for factors in scan.loose_factors),
        template_regex=scan.template_re.pattern if scan.template_re is not None else None,
        templates=tuple(scan.templates),
        registered=frozenset((index[template], factor, rule) for template, factor, rule in scan.registered),
        shadows=tuple((index[template], rule, tuple(kinds)) for (template, rule), kinds in scan.shadows.items()),
        steady=tuple(scan.steady_ids.items()),
        requires=tuple((rule, tuple(sets)) for rule, sets in plan.requires.items()),
        gates=tuple(plan.gates.items()),
        anchored=tuple(plan.anchored.items()),
        bare=scan.bare,
        checks=tuple(scan.checks),
        accelerate=scan.accelerate,
        cache=scan.cache,
        seams=seams,
    )


def line_local(pattern: bytes) -> bool:
    """True when no match of the pattern can hold a newline: no atom of it (a byte, an escape, a
    class) matches one, and `.` does not (no DOTALL). An atom it cannot read counts as one that may."""
    if INLINE_DOTALL.search(pattern):
        return False
    for token in TOKEN.findall(pattern):
        if token in SYNTAX:
            continue
        try:
            if re.fullmatch(token, b"\n"):
                return False
        except re.error:
            return False
    return True


# -- who scans a range


@dataclass(frozen=True)
class Claims:
    """Who scans each queued range (its ticket): the walk or a worker, the first to claim it. In
    shared memory, given to the workers when they start."""

    tickets: Any  # multiprocessing RawArray of SLOTS signed 64-bit ints: a slot holds its last claimed ticket + 1
    lock: Any  # multiprocessing Lock

    @classmethod
    def shared(cls, context: Any) -> Claims:
        """Claims in shared memory of this multiprocessing context, none claimed yet."""
        return cls(context.RawArray("q", SLOTS), context.Lock())

    def claim(self, ticket: int) -> bool:
        """True when no one claimed this ticket before: the caller scans its range."""
        slot = ticket % SLOTS
        with self.lock:
            if self.tickets[slot] == ticket + 1:
                return False
            self.tickets[slot] = ticket + 1
            return True


@dataclass
class Workers:
    """The worker processes and the claims they share with the walk; tickets number the tasks."""

    pool: ProcessPoolExecutor
    claims: Claims
    tickets: Iterator[int] = field(default_factory=count)


_CLAIMS: list[Claims] = []  # in a worker: the claims it was started with


def _start_worker(claims: Claims) -> None:
    """A worker's start: keep the claims."""
    _CLAIMS.append(claims)


# -- the worker's side


@dataclass(frozen=True)
class RangeCandidates:
    """One range's answer: the starts of the lines in [start, stop) the scan marks, as `start` plus their
    offset in the bytes scanned: the range's own (`coloured` False, or None where it holds no ESC byte) or
    those without their colour codes (`coloured` True, `reader.uncoloured`: a log coloured on every line is
    scanned so by the walk, chunk by chunk, and the same lines of a range so by a worker)."""

    start: int
    stop: int
    starts: tuple[int, ...]
    coloured: bool | None = None

    def fits(self, plain: bool) -> bool:
        """Whether it answers a walk whose chunk was scanned without its colour codes (`plain`) or as it is."""
        return self.coloured is None or self.coloured == plain


def range_answer(line_starts: Callable[[bytes], list[int]], begin: int, end: int, data: bytes) -> RangeCandidates:
    """A range's answer (whole lines `data`, from the file's byte `begin` to `end`) by `line_starts` of its
    bytes: without their colour codes where `uncoloured` takes them out (each line's codes are its own: a
    range's lines are a chunk's lines alike), else as they are."""
    if b"\x1b" not in data:
        return RangeCandidates(begin, end, tuple(line + begin for line in line_starts(data)))
    plain = uncoloured(data)
    scanned = data if plain is None else plain
    return RangeCandidates(begin, end, tuple(line + begin for line in line_starts(scanned)), plain is not None)


# A worker's compiled scanners, by what they are compiled from (not by `key`: that names a state
# of one source's scan, and another source's may bear the same).
_SCANNERS: dict[tuple[object, ...], tuple[Scanner, re.Pattern[bytes] | None]] = {}
KEEP_SCANNERS = 4


def candidates_in(state: ScanState, path: str, start: int, stop: int, ticket: int) -> RangeCandidates | None:
    """The whole lines that start in [start, stop) of the file at `path`, scanned as one window
    of `line_starts`; None where the walk claimed the range first. Runs in a worker."""
    if _CLAIMS and not _CLAIMS[0].claim(ticket):
        return None
    begin, end, data = _range_data(path, start, stop)
    source = (state.patterns, state.template_regex, state.accelerate)
    compiled = _SCANNERS.get(source)
    if compiled is None:
        if len(_SCANNERS) >= KEEP_SCANNERS:
            _SCANNERS.clear()  # the walk moved on from the older states
        template_re = re.compile(state.template_regex) if state.template_regex is not None else None
        scanner = make_scanner(state.patterns, accelerate=state.accelerate, cache=state.cache)
        compiled = _SCANNERS[source] = (scanner, template_re)
    scanner, template_re = compiled
    registered = {(state.templates[index], factor, rule) for index, factor, rule in state.registered}
    shadows = {(state.templates[index], rule): kinds for index, rule, kinds in state.shadows}

    def line_starts(scanned: bytes) -> list[int]:
        return lines_to_read(
            Hits(scanned, 0, len(scanned), scanner.matches(scanned, 0, len(scanned))),
            state.plain_patterns,
            state.loose_factors,
            partial(first_template, template_re, state.templates),
            registered,
            dict(state.steady),
            _could_match(state),
            shadows,
            state.checks,
            state.bare,
        )

    return range_answer(line_starts, begin, end, data)


def _could_match(state: ScanState) -> Callable[[Template, str, bytes], bool]:
    """`Plan.could_match` of a steady rule (by id), its gate (`gate_open`) and its anchored regex
    (`message_matches`), from the state's copy of the plan's requirements, gates and regexes."""
    requires = dict(state.requires)
    gates = dict(state.gates)
    anchored = dict(state.anchored)
    return lambda template, rule_id, line: (
        gate_open(gates.get(rule_id), template)
        and holds_required(requires.get(rule_id, ()), line)
        and message_matches(anchored.get(rule_id), message_start(template, line, None), line)
    )


def _range_data(path: str, start: int, stop: int) -> tuple[int, int, bytes]:
    """The whole lines that start in [start, stop) of the file: where they begin and end, their bytes."""
    with open(path, "rb") as stream:
        begin, end = line_boundary(stream, start), line_boundary(stream, stop)
        stream.seek(begin)
        return begin, end, stream.read(end - begin)


def line_boundary(stream: object, offset: int) -> int:
    """The start of the first line that starts at or after `offset` (the file's size past its end)."""
    from typing import BinaryIO, cast

    file = cast(BinaryIO, stream)
    if offset <= 0:
        return 0
    file.seek(offset - 1)
    position = offset - 1
    while block := file.read(1 << 16):
        newline = block.find(b"\n")
        if newline >= 0:
            return position + newline + 1
        position += len(block)
    return position


# -- the walk's side


@dataclass
class _Task:
    key: tuple[int, int]
    ticket: int
    future: Future[RangeCandidates | None]
    walks: bool = False  # the walk claimed it: it scans the range itself
    answer: RangeCandidates | None = None  # the walk's, scanned while it waited for a worker


@dataclass
class PlainChunk:
    """A chunk scanned without its colour codes (`reader.uncoloured`): where the first line of each range that
    starts inside it is in the scanned bytes (`positions`, ascending, with the ranges' `indexes`), the range
    its first line is in, and the file offset of its end."""

    positions: list[int]
    indexes: list[int]
    first_index: int
    raw_end: int


def plain_chunk(data: bytes, offset: int, range_bytes: int) -> PlainChunk:
    """The ranges' first lines in `data` (whole lines from the file's byte `offset`, every escape in them one
    `uncoloured` takes out) as positions in its bytes without the colour codes: each piece between two is
    uncoloured on its own (no escape spans a newline), its length summed."""
    positions, indexes = [], []
    at, plain = 0, 0
    for index in range(offset // range_bytes + 1, (offset + len(data) - 1) // range_bytes + 1):
        first = data.find(b"\n", index * range_bytes - offset - 1) + 1
        if not 0 < first < len(data):
            break
        plain += len(ANSI_ESCAPE_BYTES.sub(b"", data[at:first]))
        at = first
        positions.append(plain)
        indexes.append(index)
    return PlainChunk(positions, indexes, offset // range_bytes, offset + len(data))


@dataclass
class RangeOracle:
    """One file cut in ranges of `range_bytes`, queued to the workers ahead of the walk under the
    scan's latest state; the walk scans those no worker started when it reaches them. A window of
    the walk is cut at the ranges' starts; each piece is a worker's answer where it has one under the
    walk's state, else scanned by the walk. Pieces give the window's answer unless a cut falls after
    a line a match may span (`ScanState.seams`): then the walk scans the whole window."""

    workers: Workers
    path: str
    size: int  # the file's size when the scan began: a live log's later bytes are the walk's
    range_bytes: int
    jobs: int
    state: ScanState | None = None
    since = 0  # where the walk was when the state changed
    key: tuple[int, int] = (-1, -1)  # the scan's state that `state` was taken at (None: not line-local)
    tasks: dict[int, _Task] = field(default_factory=dict)
    answered = 0  # pieces the workers answered (what --jobs saved the walk)
    taken = 0  # queued ranges the walk claimed before a worker started them
    stolen = 0  # of those, the ones it scanned ahead while it waited for a worker
    reached = -1  # the range the walk reached last
    broken = False  # the workers are gone

    def line_starts(
        self,
        scan: CandidateScan,
        buf: bytes,
        offset: int,
        start: int,
        end: int,
        chunk_end: int,
        plain: PlainChunk | None = None,
    ) -> list[int]:
        """`scan.line_starts(buf, start, end, chunk_end)`, buf[0] being the file's byte `offset`; `plain`: buf
        is the chunk from there without its colour codes (its ranges' first lines where they are in buf)."""
        bounds = self._bounds(buf, offset, start, end, plain)

        def index_at(low: int) -> int:
            """The range the line at buf's `low` is in."""
            if plain is None:
                return (offset + low) // self.range_bytes
            at = bisect_left(bounds.positions, low + 1) - 1
            return bounds.indexes[at] if at >= 0 else plain.first_index

        position = (offset + start) if plain is None else index_at(start) * self.range_bytes
        if (scan.generation, len(scan.registered)) != self.key:
            self._update(scan, position)
        state = self.state
        if state is None or (offset + end if plain is None else plain.raw_end) > self.size:
            return scan.line_starts(buf, start, end, chunk_end)
        self._queue(position, (offset + end) if plain is None else index_at(end - 1) * self.range_bytes)
        self._reach(index_at(start))
        cuts = [start]
        seamed: set[int] = set()  # pieces over a seam: they span two ranges or more, the walk scans them
        for cut, index in zip(bounds.positions, bounds.indexes, strict=True):
            if cuts[-1] < cut < end:
                if state.seams and _short_line_before(buf, cut, state.seams):
                    seamed.add(cuts[-1])  # a match may span the cut: no cut
                    self._walks(index)
                else:
                    cuts.append(cut)
        cuts.append(end)
        found: list[int] = []
        for low, high in pairwise(cuts):
            index = index_at(low)
            answer = None if low in seamed else self._answer(scan, index)
            base = (
                None
                if answer is None or not answer.fits(plain is not None)
                else self._base(answer, index, offset, bounds, plain)
            )
            if (
                answer is not None
                and base is not None
                and plain is None
                and not answer.start <= offset + low < offset + high <= answer.stop
            ):
                base = None  # not this range's piece (cannot be: the cuts are its bounds)
            if base is not None and base != low and state.seams and _short_line_before(buf, low, state.seams):
                base = None  # the worker scanned across `low`: a match may span into it from a short line
            if answer is None or base is None:
                found += scan.line_starts(buf, low, high, chunk_end)
                continue
            self.answered += 1
            lines = [base + line - answer.start for line in answer.starts]
            found += lines[bisect_left(lines, low) : bisect_left(lines, high)]
        return found

    def _bounds(self, buf: bytes, offset: int, start: int, end: int, plain: PlainChunk | None) -> PlainChunk:
        """The first lines (in buf) of the ranges that start inside buf[start:end], with their indexes."""
        if plain is not None:
            return plain
        positions, indexes = [], []
        for index in range((offset + start) // self.range_bytes + 1, (offset + end - 1) // self.range_bytes + 1):
            newline = buf.find(b"\n", index * self.range_bytes - offset - 1)
            positions.append(end if newline < 0 else newline + 1)  # the range's first line (line_boundary)
            indexes.append(index)
        return PlainChunk(positions, indexes, -1, -1)

    def _base(
        self, answer: RangeCandidates, index: int, offset: int, bounds: PlainChunk, plain: PlainChunk | None
    ) -> int | None:
        """Where the answer's range starts in buf (its starts are offsets from there); None where a chunk
        scanned without its colour codes does not hold the range's first line (the range began in the
        chunk before: its offsets in buf are not known)."""
        if plain is None:
            return answer.start - offset
        if answer.start == offset:
            return 0
        at = bisect_left(bounds.indexes, index)
        return bounds.positions[at] if at < len(bounds.indexes) and bounds.indexes[at] == index else None

    def last_first_line(self, data: bytes, offset: int, cut: int) -> int:
        """Where a chunk (`data` from the file's byte `offset`, whole lines up to `cut`) that may be scanned
        without its colour codes ends: at the first line of the last range that starts inside it, where one
        does (else `cut`). The next chunk then starts at a range's first line, and the workers' answer for that
        range places in it (`_base`); a range that began in the chunk before would not."""
        index = (offset + cut - 1) // self.range_bytes
        while index * self.range_bytes > offset:
            first = data.find(b"\n", index * self.range_bytes - offset - 1) + 1
            if 0 < first < cut:
                return first
            index -= 1
        return cut

    def _update(self, scan: CandidateScan, position: int) -> None:
        """The scan compiled or learned a (template, factor) pair: later ranges are queued again
        under its new state (queued ones under the old state are dropped; running ones finish,
        unused)."""
        self.key = (scan.generation, len(scan.registered))
        self.since = position
        self.state = state = state_of(scan)
        for index, task in list(self.tasks.items()):
            if state is None or task.key != state.key:
                self._drop(index)

    def _drop(self, index: int) -> None:
        """A task no one will read: a worker that has not started it skips it."""
        task = self.tasks.pop(index)
        if not task.walks and not task.future.cancel():
            self.workers.claims.claim(task.ticket)

    def _reach(self, index: int) -> None:
        """The walk reached range `index`: the next one, if no worker started it yet, is the walk's
        too (the workers are behind: they go on after it)."""
        if index == self.reached:
            return
        self.reached = index
        task = self.tasks.get(index + 1)
        if WALK_TAKES and task is not None and not task.walks and not task.future.done():
            self._take(task)

    def _walks(self, index: int) -> None:
        """The walk scans range `index` as part of a piece over a seam: a worker that has not started
        it skips it."""
        task = self.tasks.get(index)
        if task is not None and not task.walks and not task.future.done():
            self._take(task)

    def _take(self, task: _Task) -> bool:
        """The walk claims a task no worker started; False where one did."""
        if task.future.cancel() or self.workers.claims.claim(task.ticket):
            task.walks = True
            self.taken += 1
        return task.walks

    def _queue(self, position: int, until: int) -> None:
        """The workers' ranges up to `until` and the next few are queued; those behind the walk
        forgotten."""
        state = self.state
        if state is None or self.broken or position - self.since < self.range_bytes // SETTLE_SHARE:
            return
        current = position // self.range_bytes
        for index in range(current + 1, until // self.range_bytes + 1 + LOOKAHEAD * self.jobs):
            if index * self.range_bytes >= self.size:
                break
            if index not in self.tasks:
                start, stop = index * self.range_bytes, (index + 1) * self.range_bytes
                from concurrent.futures.process import BrokenProcessPool  # loaded with the pool

                ticket = next(self.workers.tickets)
                try:
                    future = self.workers.pool.submit(candidates_in, state, self.path, start, stop, ticket)
                except BrokenProcessPool:  # a worker died (killed for memory?): the walk reads on alone
                    self.broken = True
                    return
                self.tasks[index] = _Task(state.key, ticket, future)
        for index in [i for i in self.tasks if i < current]:
            self._drop(index)

    def _answer(self, scan: CandidateScan, index: int) -> RangeCandidates | None:
        """A worker's answer for this range: waited for where a worker started it; None where no
        worker did (the walk claims it) or the answer is under another state. While it waits, the
        walk scans ranges ahead that no worker started (its answers kept for when it gets there):
        else, where the scan is most of the work, the walk idles while one worker scans."""
        task = self.tasks.get(index)
        if task is None or self.state is None or task.key != self.state.key:
            return None
        if task.walks:
            return task.answer
        if WALK_TAKES and not task.future.done() and self._take(task):
            return None
        if WALK_TAKES:
            self._scan_ahead(scan, index, task.future)
        try:
            return task.future.result()
        except Exception:  # a worker that died or could not read: the walk reads it itself
            return None

    def _scan_ahead(self, scan: CandidateScan, index: int, waited: Future[RangeCandidates | None]) -> None:
        """Until the worker's answer the walk waits for is there, the walk claims the ranges after
        `index` queued under its state that no worker started, in order, and scans each as a worker
        would (the scan's state is the task's)."""
        state = self.state
        if state is None:
            return
        for ahead in sorted(self.tasks):
            if waited.done():
                return
            task = self.tasks[ahead]
            if ahead <= index or task.walks or task.key != state.key or task.future.done():
                continue
            if not self._take(task):
                continue  # a worker started it
            begin, end, data = _range_data(self.path, ahead * self.range_bytes, (ahead + 1) * self.range_bytes)
            task.answer = range_answer(
                lambda scanned: scan.line_starts(scanned, 0, len(scanned), len(scanned)), begin, end, data
            )
            self.stolen += 1


def _short_line_before(buf: bytes, line: int, length: int) -> bool:
    """The line before the one at `line` is shorter than `length` bytes (or not in buf)."""
    if line <= 0:
        return True
    return line - 1 - (buf.rfind(b"\n", 0, line - 1) + 1) < length


@contextmanager
def workers_for(jobs: Jobs, paths: Sequence[str | None]) -> Iterator[Workers | None]:
    """`jobs.count - 1` worker processes where the plain files among `paths` are big enough to
    pay for them (None: the walk reads alone); stopped on the way out."""
    if jobs.count < 2 or plain_files(paths, jobs) < jobs.min_bytes or not any(paths):
        yield None
        return
    workers = start_workers(jobs.count - 1)
    try:
        yield workers
    finally:
        workers.pool.shutdown(wait=True, cancel_futures=True)


def oracle_for(workers: Workers | None, path: str | None, jobs: Jobs) -> RangeOracle | None:
    """The ranges of one source, where there are workers and it is a plain file."""
    size = plain_files([path], jobs)
    if workers is None or path is None or not size:
        return None
    return RangeOracle(workers, path, size, jobs.range_bytes, jobs.count)


def start_workers(count: int) -> Workers:
    """`count` worker processes, started now (forked where the system can: they inherit the
    imported modules and the scanner cache, and start in milliseconds)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_all_start_methods, get_context

    context = get_context("fork" if "fork" in get_all_start_methods() else None)
    try:
        claims = Claims.shared(context)
        pool = ProcessPoolExecutor(max_workers=count, mp_context=context, initializer=_start_worker, initargs=(claims,))
        pool.submit(int).result()  # a fork that fails fails here, not halfway through a log
    except (OSError, BrokenProcessPool) as exc:
        raise LogphaseError(
            f"--jobs: cannot start {count} worker process{'es' if count != 1 else ''}: {exc}",
            hint="run with --jobs 1 (one process reads the logs), or free some memory or processes",
        ) from None
    return Workers(pool, claims)


def plain_files(paths: Sequence[str | None], jobs: Jobs) -> int:
    """The bytes of the plain files among these (None: a source that is no plain file) that are
    MIN_RANGES ranges long or more: in a shorter one, the walk learns its templates in the first
    range and the workers have little left to scan (a log per rank of 12 MB took longer with them)."""
    total = 0
    for path in paths:
        if path is not None:
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            total += size if size >= MIN_RANGES * jobs.range_bytes else 0
    return total
