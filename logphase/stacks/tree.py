"""Merge stacks STAT-style (pure): a prefix tree of frames labelled with rank sets, equivalence
classes of ranks that share a path, the frame where the classes diverge, rank ranges `TP[0-1,3]`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from logphase.stacks.model import Frame, ProcessSnapshot, ThreadStack, TreeNode

_NUMBERED = re.compile(r"^(?P<stem>.*?)(?P<n>\d+)$")


def natural_key(label: str) -> tuple[object, ...]:
    """`TP2` < `TP10`; `DP0 TP3` < `DP1 TP0`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label))


def format_ranks(labels: Iterable[str]) -> str:
    """`['TP0', 'TP1', 'TP3']` → `TP[0-1,3]`; `['rank 0', 'rank 1']` → `rank [0-1]`; one label as is."""
    stems: dict[str, list[int]] = {}
    plain: list[str] = []
    for label in sorted(set(labels), key=natural_key):
        found = _NUMBERED.match(label)
        if found and not found.group("stem").endswith(tuple("0123456789")):
            stems.setdefault(found.group("stem"), []).append(int(found.group("n")))
        else:
            plain.append(label)
    parts: list[str] = []
    for stem, numbers in stems.items():
        if len(numbers) == 1:
            parts.append(f"{stem}{numbers[0]}")
            continue
        ranges: list[str] = []
        start = prev = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == prev + 1:
                prev = number
                continue
            ranges.append(f"{start}-{prev}" if prev != start else f"{start}")
            if number is not None:
                start = prev = number
        parts.append(f"{stem}[{','.join(ranges)}]")
    return ",".join(parts + plain)


def list_ranks(labels: Sequence[str], limit: int = 4) -> str:
    """For headlines: `TP0, TP1, TP3` when few, else the range form."""
    ordered = sorted(set(labels), key=natural_key)
    return ", ".join(ordered) if len(ordered) <= limit else format_ranks(ordered)


def selected_threads(snapshot: ProcessSnapshot, threads: str = "main") -> list[ThreadStack]:
    """The threads that take part in the merge: the main thread (py-spy's `MainThread`, faulthandler's
    non-`threading` thread), or every thread with `threads="all"`."""
    if threads == "all":
        return [t for t in snapshot.threads if t.frames]
    main = snapshot.main_thread()
    return [main] if main is not None and main.frames else []


def path_of(thread: ThreadStack) -> tuple[str, ...]:
    """Root-first frame keys (`function (file)`), the unit of merging."""
    return tuple(frame.key for frame in reversed(thread.frames))


@dataclass
class _Node:
    key: str
    labels: list[str] = field(default_factory=list)
    children: dict[str, _Node] = field(default_factory=dict)
    state: str | None = None

    def freeze(self) -> TreeNode:
        seen: list[str] = []
        for label in self.labels:
            if label not in seen:
                seen.append(label)
        return TreeNode(
            key=self.key,
            labels=tuple(sorted(seen, key=natural_key)),
            children=tuple(child.freeze() for child in self.children.values()),
            state=self.state,
        )


def build_tree(items: Iterable[tuple[str, tuple[str, ...], str | None]]) -> TreeNode:
    """Items are (label, root-first path, state of the leaf); returns the root (key "")."""
    root = _Node(key="")
    for label, path, state in items:
        node = root
        node.labels.append(label)
        for key in path:
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(key=key)
            child.labels.append(label)
            node = child
        if state and node is not root:
            node.state = state
    return root.freeze()


def common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    shortest = min(paths, key=len)
    for index, key in enumerate(shortest):
        if any(path[index] != key for path in paths):
            return shortest[:index]
    return shortest


def divergence_frame(threads: Sequence[ThreadStack]) -> Frame | None:
    """The deepest frame every given thread shares: where the equivalence classes split."""
    paths = [path_of(t) for t in threads]
    if len({p for p in paths}) < 2:
        return None
    shared = common_prefix(paths)
    if not shared:
        return None
    thread = threads[0]
    return thread.frames[len(thread.frames) - len(shared)]


def depth_of(thread: ThreadStack) -> int:
    return len(thread.frames)
