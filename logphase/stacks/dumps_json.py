"""Stack dumps as JSON (py-spy's `dump --json`, logphase's `stacks --format json`) → ProcessSnapshots;
and a whole dump file, whichever kind it is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from logphase.frames import printable
from logphase.stacks.dumps import (
    make_frame,
    parse_dumps_in_text,
    parse_frame_text,
    pick_main,
    role_and_rank_from_title,
)
from logphase.stacks.model import SCHEMA, ProcessSnapshot, ThreadStack

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
    snapshots: list[ProcessSnapshot] = []
    for document in iter_json_documents(text):
        if isinstance(document, dict) and document.get("schema") == SCHEMA:
            snapshots.extend(_from_logphase_json(document))
        elif isinstance(document, list):
            snapshots.extend(snapshots_from_pyspy_json(document))
        else:
            raise ValueError("neither py-spy JSON (an array of threads) nor logphase stacks JSON")
    return snapshots


def snapshots_from_pyspy_json(threads: list[Any], pid: int | None = None) -> list[ProcessSnapshot]:
    by_pid: dict[int | None, list[ThreadStack]] = {}
    titles: dict[int | None, str | None] = {}
    for item in threads:
        if not isinstance(item, dict):
            raise ValueError("a py-spy JSON thread must be an object")
        thread_pid = item.get("pid", pid)
        frames = []
        for raw in item.get("frames") or []:
            file = raw.get("short_filename") or raw.get("filename") or raw.get("module") or "?"
            frame = make_frame(
                str(raw.get("name", "?")), str(file), raw.get("line") or None, raw.get("module") is not None
            )
            if frame is not None:
                frames.append(frame)
        os_tid = item.get("os_thread_id")
        tid = str(os_tid if os_tid is not None else item.get("thread_id", "?"))
        by_pid.setdefault(thread_pid, []).append(
            ThreadStack(
                thread_id=tid,
                name=printable(str(item["thread_name"])) if item.get("thread_name") is not None else None,
                frames=tuple(frames),
                active=_mark(item.get("active")),
                gil=_mark(item.get("owns_gil")),
            )
        )
        info = item.get("process_info")
        if isinstance(info, dict) and info.get("command_line"):
            titles[thread_pid] = str(info["command_line"])
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


def _from_logphase_json(document: dict[str, Any]) -> list[ProcessSnapshot]:
    group_frames: dict[tuple[Any, ...], list[str]] = {}
    for group in document.get("groups") or []:
        for pid, label in zip(group.get("pids") or [], group.get("ranks") or [], strict=False):
            group_frames[(pid, label)] = group.get("frames") or []
    out = []
    for item in document.get("processes") or []:
        threads = []
        for raw in item.get("threads") or []:
            frames = tuple(f for f in (parse_frame_text(text) for text in raw.get("frames") or []) if f is not None)
            threads.append(
                ThreadStack(
                    thread_id=str(raw.get("id", "?")),
                    name=raw.get("name"),
                    frames=frames,
                    active=_mark(raw.get("active")),
                    gil=_mark(raw.get("gil")),
                    main=bool(raw.get("main")),
                )
            )
        if not threads:  # a producer that wrote only the contract keys: the group's frames are the main thread
            texts = group_frames.get((item.get("pid"), item.get("label") or item.get("rank")))
            if texts:
                frames = tuple(f for f in (parse_frame_text(t) for t in texts) if f is not None)
                threads.append(ThreadStack(thread_id=str(item.get("pid")), name="MainThread", frames=frames, main=True))
        out.append(
            ProcessSnapshot(
                pid=item.get("pid"),
                ppid=item.get("ppid"),
                rank=item.get("rank"),
                role=item.get("role"),
                title=item.get("title"),
                host=item.get("host"),
                error=item.get("error"),
                fatal=item.get("fatal"),
                moving=item.get("moving"),
                source=item.get("source") or "json",
                skipped=bool(item.get("skipped")),
                threads=tuple(threads),
            )
        )
    return out


def parse_dump_text(text: str) -> list[ProcessSnapshot]:
    """A whole dump file: JSON (py-spy or logphase) or text (faulthandler, py-spy, pystack, a log)."""
    if looks_like_json(text):
        try:
            return parse_json_text(text)
        except (ValueError, json.JSONDecodeError, AttributeError, TypeError):
            pass  # a log that happens to start with `[`: parse it as text
    return parse_dumps_in_text(text.splitlines())


def _mark(value: Any) -> bool | None:
    """py-spy's per-thread marks are booleans; anything else in a file is no mark."""
    return value if isinstance(value, bool) else None
