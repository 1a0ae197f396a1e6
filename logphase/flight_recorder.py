"""Torch flight-recorder dumps (one per rank): which ranks never enqueued the collective the others wait in."""

from __future__ import annotations

import gc
import io
import itertools
import json
import pickle
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from logphase.bounded import MAX_NUMBER, read_int
from logphase.errors import InputError
from logphase.frames import short_path
from logphase.logs.reader import READ_ERRORS, decompressing
from logphase.stacks.dumps import rank_from_file_name
from logphase.stacks.model import Frame

# A dump holds at most TORCH_FR_BUFFER_SIZE entries (TORCH_NCCL_TRACE_BUFFER_SIZE before torch 2.8;
# 2,000 by default from 2.11). What bounds reading one is what it unpacks to, counted as it is made
# (see _Bounded): MAX_OBJECTS of CPython's memory blocks, each ~60-75 bytes (measured: a byte of a
# hostile pickle makes at most one; the real dumps' shape makes 0.13 a byte, 68 bytes each), so
# ~110 MB; a real dump of up to ~12 MB (~40,000 entries) is read. Its bytes are read up to
# MAX_DUMP_BYTES. (A dump's entries are one list, made by the C unpickler, which has no hook per entry:
# keeping only the newest while unpickling would need an unpickler of our own, ~7 s for 20 MB in Python.)
MAX_DUMP_BYTES = 16 << 20
MAX_OBJECTS = 1_600_000
# Entries kept per process group of a dump: the newest, where the pending collective is (a ring
# buffer's tail); a rank stuck in a collective is at most a few behind the others.
MAX_ENTRIES = 16
# Process groups read per dump: a rank is a member of one per kind of parallelism (tens); and judged
# across the dumps (every rank's own tensor-parallel group: hundreds in a big job).
MAX_GROUPS = 64
MAX_GROUPS_JUDGED = 4096
FRAMES_SHOWN = 6
# Ranks a finding names in words and in its JSON lists: the rest are counted (`and 3 more ranks`).
NAMED_RANKS = 32


@dataclass(frozen=True)
class Collective:
    """One entry of a rank's ring buffer."""

    seq: int
    pg: str
    op: str
    state: str
    input_sizes: tuple[tuple[int, ...], ...]
    frames: tuple[str, ...]  # innermost first: `all_reduce (torch/distributed/distributed_c10d.py:3068)`


@dataclass(frozen=True)
class RankDump:
    path: str
    rank: str | None
    version: str
    status: Mapping[str, tuple[int, int]]  # process group → (last enqueued, last completed)
    groups: Mapping[str, tuple[str, Sequence[int]]]  # process group → (description, global ranks: shared)
    entries: tuple[Collective, ...]


@dataclass(frozen=True)
class GroupFinding:
    """One process group across the dumps: the first collective not every rank has finished."""

    pg: str
    desc: str
    ranks: Sequence[int]
    enqueued: Mapping[str, int]
    completed: Mapping[str, int]
    pending: Collective | None
    missing: tuple[str, ...]  # ranks that never enqueued `pending`
    mismatched: tuple[str, ...]  # ranks that enqueued another op or other sizes at its sequence number
    without_dump: tuple[str, ...]  # members of the group no dump was given for: the first NAMED_RANKS
    without_dump_more: int = 0  # and how many more

    def summary(self) -> str | None:
        """`collective #4 nccl:all_reduce of default_pg: enqueued by rank 0 (scheduled); rank 1
        never enqueued it (last: #3): the missing rank`."""
        pending = self.pending
        if pending is None:
            return None
        joined = [rank for rank, count in self.enqueued.items() if count >= pending.seq]
        parts = [
            f"collective #{pending.seq} {pending.op} of {self.desc or 'pg ' + self.pg}: "
            f"enqueued by {_names(joined)} ({pending.state})"
        ]
        if self.missing:
            last = ", ".join(f"#{self.enqueued[rank]}" for rank in self.missing[:NAMED_RANKS])
            last += ", …" if len(self.missing) > NAMED_RANKS else ""
            which = "the missing rank" if len(self.missing) == 1 else "the missing ranks"
            parts.append(f"{_names(self.missing)} never enqueued it (last: {last}): {which}")
        if self.mismatched:
            parts.append(f"{_names(self.mismatched)} enqueued another op or other sizes as #{pending.seq}")
        if self.without_dump:
            parts.append(f"no dump of {_names(self.without_dump, self.without_dump_more)}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        pending = self.pending
        return {
            "pg": self.pg,
            "desc": self.desc,
            "ranks": list(self.ranks[:NAMED_RANKS]),
            "rank_count": len(self.ranks),
            "enqueued": dict(self.enqueued),
            "completed": dict(self.completed),
            "pending": None
            if pending is None
            else {
                "seq": pending.seq,
                "op": pending.op,
                "state": pending.state,
                "input_sizes": [list(sizes) for sizes in pending.input_sizes],
                "frames": list(pending.frames),
            },
            "missing_ranks": list(self.missing),
            "mismatched_ranks": list(self.mismatched),
            "ranks_without_dump": list(self.without_dump),
            "more_ranks_without_dump": self.without_dump_more,
            "summary": self.summary(),
        }


@dataclass(frozen=True)
class FlightReport:
    dumps: tuple[RankDump, ...]
    groups: tuple[GroupFinding, ...]

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(rank for group in self.groups for rank in group.missing))

    @property
    def summary(self) -> str | None:
        said = [text for group in self.groups if (text := group.summary())]
        return " | ".join(said) if said else None

    def to_json(self) -> dict[str, Any]:
        return {
            "dumps": [
                {"path": d.path, "rank": d.rank, "version": d.version, "entries": len(d.entries)} for d in self.dumps
            ],
            "groups": [group.to_json() for group in self.groups],
            "missing_ranks": list(self.missing),
            "summary": self.summary,
        }


# --- reading (the I/O edge) ---------------------------------------------------------------------------


class _PlainData(pickle.Unpickler):
    """Dicts, lists, tuples, strings and numbers only: a dump never needs a class, and a pickle
    that asks for one could run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it asks for {module}.{name}; a flight-recorder dump holds plain data")


def read_dumps(paths: Iterable[str]) -> list[RankDump]:
    shared: dict[object, Any] = {}  # one copy of what the dumps repeat: a group's ranks, an entry's frames
    return [parse_dump(read_dump_bytes(path), path, shared) for path in paths]


def read_dump_bytes(path: str) -> bytes:
    """The dump's bytes, decompressed when it was compressed (a gzipped dump is read as torch wrote it)."""
    try:
        with open(path, "rb") as raw:
            data = decompressing(raw, path).read(MAX_DUMP_BYTES + 1)
    except OSError as exc:
        if exc.strerror is not None:  # the file itself; a damaged archive's errors have none
            raise InputError(
                f"{path}: cannot read: {exc.strerror}", hint="check the path and its permissions"
            ) from None
        raise InputError(f"{path}: the compressed dump ends early or is damaged: {exc}", hint=_WHOLE) from None
    except READ_ERRORS as exc:
        raise InputError(f"{path}: the compressed dump ends early or is damaged: {exc}", hint=_WHOLE) from None
    if len(data) > MAX_DUMP_BYTES:
        raise InputError(f"{path}: over {MAX_DUMP_BYTES >> 20} MB, too big for a flight-recorder dump", hint=_SMALLER)
    return data


class _TooBig(Exception):
    """What a dump unpacks to passed MAX_OBJECTS."""


class _Bounded:
    """A dump's bytes as the unpickler reads them (with `peek`, ~64 KB at a time), stopping it once the
    objects it has made pass MAX_OBJECTS memory blocks: a bound on memory, not on bytes."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)
        self._start = sys.getallocatedblocks()

    def _check(self) -> None:
        if sys.getallocatedblocks() - self._start > MAX_OBJECTS:
            raise _TooBig

    def read(self, size: int = -1) -> bytes:
        self._check()
        return self._stream.read(size)

    def readinto(self, buffer: bytearray | memoryview) -> int:
        self._check()
        return self._stream.readinto(buffer)

    def readline(self) -> bytes:
        self._check()
        return self._stream.readline()

    def peek(self, size: int = 0) -> bytes:
        self._check()
        position = self._stream.tell()
        ahead = self._stream.read(max(size, 1))
        self._stream.seek(position)
        return ahead


def parse_dump(data: bytes, path: str, shared: dict[object, Any] | None = None) -> RankDump:
    """One rank's dump; its rank from the file name (torch writes `<prefix><rank>`). `shared` keeps one
    copy of the rank lists and frames the dumps of one job repeat (every rank's dump lists every group)."""
    shared = {} if shared is None else shared
    broken = InputError(f"{path}: not a readable flight-recorder dump", hint=_WHOLE)
    document = load_plain(data, path)
    if not isinstance(document, dict) or not isinstance(document.get("entries", []), list):
        raise broken
    try:
        entries = _newest(document.get("entries", []), shared)
        status = {
            str(pg): (_int(s.get("last_enqueued_collective")), _int(s.get("last_completed_collective")))
            for pg, s in _first(_table(document.get("pg_status")), MAX_GROUPS)
            if isinstance(s, dict)
        }
        if not status:  # dumps before `pg_status` (torch < 2.5): the ring buffer's own record
            for entry in entries:
                enqueued, completed = status.get(entry.pg, (-1, -1))
                done = entry.seq if entry.state == "completed" else completed
                status[entry.pg] = (max(enqueued, entry.seq), max(completed, done))
        return RankDump(
            path=path,
            rank=rank_from_file_name(Path(path).name),
            version=str(document.get("version", "")),
            status=status,
            groups={
                str(pg): (_text(c.get("desc"), ""), _shared_ranks(c.get("ranks"), shared))
                for pg, c in _first(_table(document.get("pg_config")), MAX_GROUPS)
                if isinstance(c, dict)
            },
            entries=entries,
        )
    except (AttributeError, TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"{broken.message}: {exc}", hint=broken.hint) from None


def load_plain(data: bytes, path: str) -> Any:
    """A pickle's plain data (dicts, lists, tuples, sets, strings, bytes, numbers), never a class."""
    collecting = gc.isenabled()
    gc.disable()  # plain data: the collector would walk the millions of containers made, again and again
    try:
        return _PlainData(_Bounded(data)).load()
    except _TooBig:
        raise InputError(
            f"{path}: {len(data) / (1 << 20):.1f} MB that unpacks to more than a flight-recorder dump is read to "
            f"({MAX_OBJECTS:,} objects, ~110 MB)",
            hint=_SMALLER,
        ) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        OverflowError,
        MemoryError,
    ) as exc:
        message = f"{path}: not a readable flight-recorder dump: {' '.join(str(exc).split())}"
        raise InputError(message, hint=_WHOLE) from None
    finally:
        if collecting:
            gc.enable()


_SMALLER = (
    "a dump holds TORCH_FR_BUFFER_SIZE entries of one rank (TORCH_NCCL_TRACE_BUFFER_SIZE before torch 2.8): "
    "record with a smaller one (2000, the default, is plenty to find a hang), and give the files torch wrote, "
    "one per rank"
)
_WHOLE = "give the files torch wrote (TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE + rank), whole"


# Field readers: a dump is untrusted data, so each field is taken only in the type torch writes;
# anything else (a float infinity, a list nested 100,000 deep where a name belongs) reads as unknown.


def _int(value: Any, default: int = -1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _text(value: Any, default: str = "?") -> str:
    return value if isinstance(value, str) else str(value) if isinstance(value, int) else default


def _table(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else []


def _first(table: Mapping[Any, Any], count: int) -> list[tuple[Any, Any]]:
    return list(itertools.islice(table.items(), count))


def _newest(listed: Any, shared: dict[object, Any]) -> tuple[Collective, ...]:
    """The newest MAX_ENTRIES collectives of each process group (p2p entries aside), in the dump's order."""
    entries = _items(listed)
    kept: dict[str, list[tuple[int, Collective]]] = {}
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if not isinstance(entry, dict) or entry.get("is_p2p"):
            continue
        collective = _collective(entry, shared)
        newest = kept.get(collective.pg)
        if newest is None:
            if len(kept) == MAX_GROUPS:
                continue
            newest = kept[collective.pg] = []
        if len(newest) < MAX_ENTRIES:
            newest.append((index, collective))
    return tuple(collective for _, collective in sorted(pair for group in kept.values() for pair in group))


def _shared_ranks(text: Any, shared: dict[object, Any]) -> Sequence[int]:
    """A group's global ranks, one copy for every dump that lists them (torch writes them as a JSON string):
    a range where they are consecutive (a group of a million ranks is then a few bytes), else a compact array."""
    if not isinstance(text, str):
        return _ranks(text)
    key = ("ranks", text)
    found = shared.get(key)
    if found is None:
        found = shared[key] = _ranks(text)
    return cast("Sequence[int]", found)


def _ranks(text: Any) -> Sequence[int]:
    try:
        values = json.loads(text) if isinstance(text, str) else text
    except (ValueError, RecursionError):
        return ()
    numbers = array("q", (value for value in _items(values) if isinstance(value, int) and -(2**63) <= value < 2**63))
    if len(numbers) > 1 and numbers[1] != numbers[0]:
        step = numbers[1] - numbers[0]
        span = range(numbers[0], numbers[-1] + step, step)
        if len(span) == len(numbers) and all(a == b for a, b in zip(span, numbers, strict=True)):
            return span
    return numbers if len(numbers) != 1 else range(numbers[0], numbers[0] + 1)


def _collective(entry: Mapping[str, Any], shared: dict[object, Any]) -> Collective:
    group = _items(entry.get("process_group")) or [entry.get("pg_id")]
    frames = tuple(
        str(Frame(_text(frame.get("name")), _short(_text(frame.get("filename"))), _line(frame.get("line"))))
        for frame in _items(entry.get("frames"))[:FRAMES_SHOWN]
        if isinstance(frame, dict)
    )
    return Collective(
        seq=_int(entry.get("collective_seq_id")),
        pg=_text(group[0]),
        op=_text(entry.get("profiling_name")),
        state=_text(entry.get("state")),
        input_sizes=tuple(tuple(_int(n) for n in _items(sizes)) for sizes in _items(entry.get("input_sizes"))),
        frames=shared.setdefault(("frames", frames), frames),
    )


def _short(path: str) -> str:
    """As py-spy names files: a package's path inside site-packages, a script's file name."""
    shortened = short_path(path)
    return shortened if shortened != path else path.rsplit("/", 1)[-1]


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- judging (pure) ----------------------------------------------------------------------------------------


def judge_dumps(dumps: Sequence[RankDump]) -> FlightReport:
    """Per process group: the lowest sequence number a rank has enqueued but not completed; the
    ranks whose dumps say they never enqueued it are missing from it (torch's fr_trace says the same)."""
    names = [dump.rank or f"dump {index + 1}" for index, dump in enumerate(dumps)]
    findings = []
    named = dict.fromkeys(pg for dump in dumps for pg in dump.status)
    for pg in sorted(itertools.islice(named, MAX_GROUPS_JUDGED), key=_pg_order):
        counts = {name: dump.status[pg] for name, dump in zip(names, dumps, strict=True) if pg in dump.status}
        desc, members = next((dump.groups[pg] for dump in dumps if pg in dump.groups), ("", ()))
        in_flight = [completed + 1 for enqueued, completed in counts.values() if enqueued > completed]
        pending_seq = min(in_flight) if in_flight else None
        pending = None
        missing: list[str] = []
        mismatched: list[str] = []
        if pending_seq is not None:
            entries = {
                name: next((e for e in dump.entries if e.pg == pg and e.seq == pending_seq), None)
                for name, dump in zip(names, dumps, strict=True)
                if pg in dump.status
            }
            pending = next((entry for entry in entries.values() if entry is not None), None)
            missing = [name for name, (enqueued, _) in counts.items() if enqueued < pending_seq]
            if pending is not None:
                mismatched = [
                    name
                    for name, entry in entries.items()
                    if entry is not None and (entry.op, entry.input_sizes) != (pending.op, pending.input_sizes)
                ]
        dumped = {dump.rank for dump in dumps if pg in dump.status}
        undumped = (f"rank {r}" for r in members if f"rank {r}" not in dumped)
        without_dump = tuple(itertools.islice(undumped, NAMED_RANKS))
        findings.append(
            GroupFinding(
                pg=pg,
                desc=desc,
                ranks=members,
                enqueued={name: enqueued for name, (enqueued, _) in counts.items()},
                completed={name: completed for name, (_, completed) in counts.items()},
                pending=pending,
                missing=tuple(missing),
                mismatched=tuple(mismatched),
                without_dump=without_dump,
                without_dump_more=sum(1 for _ in undumped),
            )
        )
    return FlightReport(tuple(dumps), tuple(findings))


def _pg_order(pg: str) -> tuple[int, str]:
    number = read_int(pg)
    return (number, pg) if number is not None else (MAX_NUMBER + 1, pg)


def _names(ranks: Sequence[str], more: int = 0) -> str:
    """`rank 1, rank 3`; past NAMED_RANKS, the first of them and `and N more ranks`."""
    more += max(0, len(ranks) - NAMED_RANKS)
    named = ", ".join(ranks[:NAMED_RANKS])
    return f"{named} and {more} more ranks" if more else named
