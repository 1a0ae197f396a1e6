"""Torch flight-recorder dumps (one per rank): which ranks never enqueued the collective the others wait in."""

from __future__ import annotations

import io
import json
import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logphase.bounded import MAX_NUMBER, read_int
from logphase.errors import InputError
from logphase.frames import short_path
from logphase.logs.reader import READ_ERRORS, decompressing
from logphase.stacks.dumps import rank_from_file_name
from logphase.stacks.model import Frame

# A dump holds at most TORCH_FR_BUFFER_SIZE entries (2,000 by default; 20,000 with their frames is
# ~10 MB): more is not a flight-recorder dump. The bound keeps unpickling within ~100 MB even for a
# pickle made of nothing but references to one object.
MAX_DUMP_BYTES = 32 << 20
# Entries judged per dump: the newest, where the pending collective is (a ring buffer's tail).
MAX_ENTRIES = 100_000
FRAMES_SHOWN = 6


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
    groups: Mapping[str, tuple[str, tuple[int, ...]]]  # process group → (description, global ranks)
    entries: tuple[Collective, ...]


@dataclass(frozen=True)
class GroupFinding:
    """One process group across the dumps: the first collective not every rank has finished."""

    pg: str
    desc: str
    ranks: tuple[int, ...]
    enqueued: Mapping[str, int]
    completed: Mapping[str, int]
    pending: Collective | None
    missing: tuple[str, ...]  # ranks that never enqueued `pending`
    mismatched: tuple[str, ...]  # ranks that enqueued another op or other sizes at its sequence number
    without_dump: tuple[str, ...]  # members of the group no dump was given for

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
            last = ", ".join(f"#{self.enqueued[rank]}" for rank in self.missing)
            which = "the missing rank" if len(self.missing) == 1 else "the missing ranks"
            parts.append(f"{_names(self.missing)} never enqueued it (last: {last}): {which}")
        if self.mismatched:
            parts.append(f"{_names(self.mismatched)} enqueued another op or other sizes as #{pending.seq}")
        if self.without_dump:
            parts.append(f"no dump of {_names(self.without_dump)}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        pending = self.pending
        return {
            "pg": self.pg,
            "desc": self.desc,
            "ranks": list(self.ranks),
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
    return [parse_dump(_read(path), path) for path in paths]


def _read(path: str) -> bytes:
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
        raise InputError(
            f"{path}: over {MAX_DUMP_BYTES >> 20} MB, too big for a flight-recorder dump",
            hint="a dump holds TORCH_FR_BUFFER_SIZE entries of one rank; give the files torch wrote, one per rank",
        )
    return data


def parse_dump(data: bytes, path: str) -> RankDump:
    """One rank's dump; its rank from the file name (torch writes `<prefix><rank>`)."""
    broken = InputError(f"{path}: not a readable flight-recorder dump", hint=_WHOLE)
    try:
        document = _PlainData(io.BytesIO(data)).load()
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
        raise InputError(f"{broken.message}: {' '.join(str(exc).split())}", hint=broken.hint) from None
    if not isinstance(document, dict) or not isinstance(document.get("entries", []), list):
        raise broken
    try:
        listed = document.get("entries", [])
        entries = tuple(
            _collective(entry) for entry in listed[-MAX_ENTRIES:] if isinstance(entry, dict) and not entry.get("is_p2p")
        )
        status = {
            str(pg): (_int(s.get("last_enqueued_collective")), _int(s.get("last_completed_collective")))
            for pg, s in _table(document.get("pg_status")).items()
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
                str(pg): (_text(c.get("desc"), ""), _ranks(c.get("ranks")))
                for pg, c in _table(document.get("pg_config")).items()
                if isinstance(c, dict)
            },
            entries=entries,
        )
    except (AttributeError, TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"{broken.message}: {exc}", hint=broken.hint) from None


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


def _ranks(text: Any) -> tuple[int, ...]:
    try:
        values = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return ()
    return tuple(value for value in _items(values) if isinstance(value, int))


def _collective(entry: Mapping[str, Any]) -> Collective:
    group = _items(entry.get("process_group")) or [entry.get("pg_id")]
    return Collective(
        seq=_int(entry.get("collective_seq_id")),
        pg=_text(group[0]),
        op=_text(entry.get("profiling_name")),
        state=_text(entry.get("state")),
        input_sizes=tuple(tuple(_int(n) for n in _items(sizes)) for sizes in _items(entry.get("input_sizes"))),
        frames=tuple(
            str(Frame(_text(frame.get("name")), _short(_text(frame.get("filename"))), _line(frame.get("line"))))
            for frame in _items(entry.get("frames"))[:FRAMES_SHOWN]
            if isinstance(frame, dict)
        ),
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
    for pg in sorted({pg for dump in dumps for pg in dump.status}, key=_pg_order):
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
                without_dump=tuple(f"rank {r}" for r in members if f"rank {r}" not in dumped),
            )
        )
    return FlightReport(tuple(dumps), tuple(findings))


def _pg_order(pg: str) -> tuple[int, str]:
    number = read_int(pg)
    return (number, pg) if number is not None else (MAX_NUMBER + 1, pg)


def _names(ranks: Sequence[str]) -> str:
    return ", ".join(ranks)
