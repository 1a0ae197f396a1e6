"""Stack dumps as JSON (py-spy's `dump --json`, logphase's `stacks --format json`) → ProcessSnapshots;
and a whole dump file, whichever kind it is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from logphase.bounded import MAX_NUMBER
from logphase.frames import printable
from logphase.stacks.dumps import (
    make_frame,
    parse_dumps_in_text,
    parse_frame_text,
    pick_main,
    role_and_rank_from_title,
)
from logphase.stacks.model import SCHEMA, Gpu, GpuProcess, GpuReading, ProcessSnapshot, ThreadStack

# JSON opens with `[` or `{` and then a value or its end; a log line such as `[2025-10-29 ...` does not.
_JSON_START = re.compile(r"\s*[\[{]\s*(?:[\[{\]}\"]|$)")


def looks_like_json(text: str) -> bool:
    return _JSON_START.match(text) is not None


def iter_json_documents(text: str) -> Iterator[Any]:
    """One or several JSON documents back to back (`py-spy dump --subprocesses --json` concatenates)."""
    decoder = json.JSONDecoder()
    index, end = 0, len(text)
    while True:
        while index < end and text[index] in " \t\r\n":
            index += 1
        if index >= end:
            return
        if text[index] not in "[{":  # py-spy's `-----` separators, or trailing text
            newline = text.find("\n", index)
            if newline < 0:
                return
            index = newline + 1
            continue
        document, index = decoder.raw_decode(text, index)
        yield document


def parse_json_text(text: str) -> list[ProcessSnapshot]:
    """py-spy `dump --json` output (one or several arrays of threads) or logphase's `stacks` JSON.
    Raises ValueError when the text is not JSON of either kind."""
    return parse_json_dump(text)[0]


def parse_json_dump(text: str) -> tuple[list[ProcessSnapshot], list[GpuReading]]:
    """`parse_json_text`, with the GPU readings (NVML's, `gpus`) that logphase's `stacks` JSON carries."""
    snapshots: list[ProcessSnapshot] = []
    readings: list[GpuReading] = []
    for document in iter_json_documents(text):
        if isinstance(document, dict) and document.get("schema") == SCHEMA:
            snapshots.extend(_from_logphase_json(document))
            gpus = document.get("gpus")
            if gpus is not None:
                readings.append(gpu_reading_from_json(gpus))
        elif isinstance(document, list):
            snapshots.extend(snapshots_from_pyspy_json(document))
        else:
            raise ValueError("neither py-spy JSON (an array of threads) nor logphase stacks JSON")
    return snapshots, readings


def gpu_reading_from_json(item: Any) -> GpuReading:
    """The `gpus` object of logphase's `stacks` JSON (GpuReading.to_json) back as the reading it was.
    Raises ValueError naming a field that is not of the type logphase writes."""
    where = "gpus"
    if not isinstance(item, dict):
        raise _wrong("the document", "gpus", "an object", item)
    devices = []
    for index, raw in enumerate(_objects(item, "devices", where)):
        place = f"{where}: devices[{index}]"
        processes = []
        for at, proc in enumerate(_objects(raw, "processes", place)):
            spot = f"{place}: processes[{at}]"
            pid = _number(proc, "pid", spot)
            if pid is None:
                raise _wrong(spot, "pid", "a whole number", None)
            processes.append(
                GpuProcess(
                    pid=pid,
                    memory_bytes=_number(proc, "memory_bytes", spot),
                    sm_pct=_number(proc, "sm_pct", spot),
                )
            )
        devices.append(
            Gpu(
                index=_number(raw, "index", place) or 0,
                name=_text(raw, "name", place),
                uuid=_text(raw, "uuid", place),
                utilisation_pct=_number(raw, "utilisation_pct", place),
                memory_used_bytes=_number(raw, "memory_used_bytes", place),
                memory_total_bytes=_number(raw, "memory_total_bytes", place),
                processes=tuple(processes),
                error=_text(raw, "error", place),
            )
        )
    return GpuReading(
        gpus=tuple(devices),
        driver=_text(item, "driver", where),
        nvml=_text(item, "nvml", where),
        window_s=_seconds(item, "window_s", where),
        note=_text(item, "note", where),
        host=_text(item, "host", where),
    )


def snapshots_from_pyspy_json(threads: list[Any], pid: int | None = None) -> list[ProcessSnapshot]:
    """Raises ValueError naming the field that is not of the type py-spy writes."""
    by_pid: dict[int | None, list[ThreadStack]] = {}
    titles: dict[int | None, str | None] = {}
    for index, item in enumerate(threads):
        where = f"thread {index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where} is {_kind(item)}, expected an object")
        thread_pid = _number(item, "pid", where) if "pid" in item else pid
        frames = []
        for at, raw in enumerate(_objects(item, "frames", where)):
            place = f"{where}: frames[{at}]"
            file = _text(raw, "short_filename", place) or _text(raw, "filename", place) or _text(raw, "module", place)
            frame = make_frame(
                _text(raw, "name", place) or "?",
                file or "?",
                _number(raw, "line", place) or None,
                "module" in raw and raw["module"] is not None,
            )
            if frame is not None:
                frames.append(frame)
        tid = _text(item, "os_thread_id", where) or _text(item, "thread_id", where) or "?"
        name = _text(item, "thread_name", where)
        by_pid.setdefault(thread_pid, []).append(
            ThreadStack(
                thread_id=tid,
                name=printable(name) if name is not None else None,
                frames=tuple(frames),
                active=_flag(item, "active", where),
                gil=_flag(item, "owns_gil", where),
            )
        )
        info = item.get("process_info")
        if isinstance(info, dict) and (command := _text(info, "command_line", f"{where}: process_info")):
            titles[thread_pid] = command
    out = []
    for thread_pid, stacks in by_pid.items():
        title = titles.get(thread_pid)
        role, rank = role_and_rank_from_title(title) if title else (None, None)
        out.append(
            ProcessSnapshot(
                pid=thread_pid,
                threads=tuple(pick_main(stacks, thread_pid)),
                title=title,
                role=role,
                rank=rank,
                source="py-spy",
            )
        )
    return out


# The same frames recur on every rank of every node: each text is parsed once (frames are frozen, so shared).
_frame_of = lru_cache(maxsize=1 << 16)(parse_frame_text)


def _from_logphase_json(document: dict[str, Any]) -> list[ProcessSnapshot]:
    group_frames: dict[tuple[int | None, str | None], list[str]] = {}
    for index, group in enumerate(_objects(document, "groups", "the document")):
        where = f"groups[{index}]"
        texts = _texts(group, "frames", where)
        for pid, label in zip(_items(group, "pids", where), _items(group, "ranks", where), strict=False):
            group_frames[(_number({"pid": pid}, "pid", where), _text({"rank": label}, "rank", where))] = texts
    out = []
    for index, item in enumerate(_objects(document, "processes", "the document")):
        where = f"processes[{index}]"
        threads = []
        for at, raw in enumerate(_objects(item, "threads", where)):
            place = f"{where}: threads[{at}]"
            texts = _texts(raw, "frames", place)
            threads.append(
                ThreadStack(
                    thread_id=_text(raw, "id", place) or "?",
                    name=_text(raw, "name", place),
                    frames=tuple(f for f in map(_frame_of, texts) if f is not None),
                    active=_flag(raw, "active", place),
                    gil=_flag(raw, "gil", place),
                    main=bool(_flag(raw, "main", place)),
                )
            )
        pid = _number(item, "pid", where)
        if not threads:  # a producer that wrote only the contract keys: the group's frames are the main thread
            shared = group_frames.get((pid, _text(item, "label", where) or _text(item, "rank", where)))
            if shared:
                frames = tuple(f for f in map(_frame_of, shared) if f is not None)
                threads.append(ThreadStack(thread_id=str(pid), name="MainThread", frames=frames, main=True))
        out.append(
            ProcessSnapshot(
                pid=pid,
                ppid=_number(item, "ppid", where),
                rank=_text(item, "rank", where),
                role=_text(item, "role", where),
                title=_text(item, "title", where),
                host=_text(item, "host", where),
                error=_text(item, "error", where),
                fatal=_text(item, "fatal", where),
                moving=_flag(item, "moving", where),
                source=_text(item, "source", where) or "json",
                skipped=bool(_flag(item, "skipped", where)),
                threads=tuple(threads),
                cpu_pct=_percent(item, "cpu_pct", where),
            )
        )
    return out


# Field readers: a dump is anyone's JSON, so each field is taken only in the type its producer writes
# (null as absent; a number where a name belongs as its digits) and anything else is bad input, named
# (ValueError: `stacks --from` says it with exit 3), never a list where a key is hashed later.


def _wrong(where: str, key: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"{where}: {key!r} is {_kind(value)}, expected {expected}")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _text(item: dict[str, Any], key: str, where: str) -> str | None:
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and -MAX_NUMBER <= value <= MAX_NUMBER:
        return str(value)  # a thread id or a rank written as a number
    raise _wrong(where, key, "a string", value)


def _number(item: dict[str, Any], key: str, where: str) -> int | None:
    value = item.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NUMBER):
        return value
    raise _wrong(where, key, f"a whole number up to {MAX_NUMBER}", value)


def _seconds(item: dict[str, Any], key: str, where: str) -> float | None:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1e9:
        return float(value)
    raise _wrong(where, key, "a number of seconds", value)


def _percent(item: dict[str, Any], key: str, where: str) -> float | None:
    """A CPU share in % of one core: a process of many threads uses more than 100."""
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1e6:
        return float(value)
    raise _wrong(where, key, "a percentage", value)


def _flag(item: dict[str, Any], key: str, where: str) -> bool | None:
    value = item.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise _wrong(where, key, "true or false", value)


def _items(item: dict[str, Any], key: str, where: str) -> list[Any]:
    value = item.get(key)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise _wrong(where, key, "an array", value)


def _objects(item: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    values = _items(item, key, where)
    for index, value in enumerate(values):
        if not isinstance(value, dict):
            raise _wrong(where, f"{key}[{index}]", "an object", value)
    return values


def _texts(item: dict[str, Any], key: str, where: str) -> list[str]:
    values = _items(item, key, where)
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise _wrong(where, f"{key}[{index}]", "a string", value)
    return values


def parse_dump_text(text: str) -> list[ProcessSnapshot]:
    """A whole dump file: JSON (py-spy or logphase) or text (faulthandler, py-spy, pystack, a log)."""
    if looks_like_json(text):
        try:
            return parse_json_text(text)
        except (ValueError, json.JSONDecodeError, AttributeError, TypeError):
            pass  # a log that happens to start with `[`: parse it as text
    return parse_dumps_in_text(text.splitlines())
