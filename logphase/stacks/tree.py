"""Merge stacks STAT-style (pure): a prefix tree of frames labelled with rank sets, equivalence
classes of ranks that share a path, the frame where the classes diverge."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from logphase.ranks import natural_key
from logphase.stacks.model import Frame, ProcessSnapshot, ThreadStack, TreeNode


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

    def freeze(self, rank_of: dict[str, int]) -> TreeNode:
        """`rank_of`: each label's place in natural order, worked out once for the whole tree (4,096 ranks
        sorted again at every node were most of a big merge's time)."""
        return TreeNode(
            key=self.key,
            labels=tuple(sorted(dict.fromkeys(self.labels), key=rank_of.__getitem__)),
            children=tuple(child.freeze(rank_of) for child in self.children.values()),
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
    ordered = sorted(dict.fromkeys(root.labels), key=natural_key)
    return root.freeze({label: index for index, label in enumerate(ordered)})


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
