"""What the formats show of a StacksReport, worked out once: the merged tree, the groups, the processes not read."""

from __future__ import annotations

from logphase.judging.stacks import WAIT_STATES
from logphase.ranks import format_rank_set
from logphase.report.paint import paint
from logphase.report.text_table import simple_table
from logphase.stacks.model import MAX_FRAMES, Group, StacksReport, TreeNode


def _state_colour(state: str) -> str:
    if state == "idle":
        return "green"
    if state in WAIT_STATES or state == "subprocess_wait":
        return "yellow"
    if state == "crashed":
        return "red"
    return "cyan"


def render_tree(report: StacksReport, *, colour: bool = False, max_chain: int = 6) -> str:
    """STAT-style prefix tree: each branch labelled with its rank set and count; a chain of frames
    shared by the same ranks prints as one block (long chains are elided in the middle)."""
    out: list[str] = []
    culprits = set(report.culprit_ranks)

    def render(node: TreeNode, first: str, rest: str) -> None:
        chain = [node]
        while len(chain[-1].children) == 1 and chain[-1].children[0].labels == node.labels:
            chain.append(chain[-1].children[0])
        keep = set(range(2)) | set(range(len(chain) - 3, len(chain)))
        keep |= {i for i, n in enumerate(chain) if n.state}
        label = f"{format_rank_set(node.labels)} ({len(node.labels)})"
        painted = paint(
            label, "red" if culprits & set(node.labels) and culprits >= set(node.labels) else "bold", colour
        )
        pad = " " * len(label)
        lines: list[str] = []
        skipped = 0
        for index, item in enumerate(chain):
            if len(chain) > max_chain and index not in keep:
                skipped += 1
                continue
            if skipped:
                lines.append(paint(f"… {skipped} frame{'s' if skipped != 1 else ''} …", "dim", colour))
                skipped = 0
            text = item.key
            if item.state:
                text += "  " + paint(f"[{item.state}]", _state_colour(item.state), colour)
            lines.append(text)
        for index, text in enumerate(lines):
            out.append(f"{first if index == 0 else rest}{painted if index == 0 else pad}  {text}")
        children = chain[-1].children
        for index, child in enumerate(children):
            last = index == len(children) - 1
            render(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "))

    if report.tree.children and any(thread.cut for snap in report.processes for thread in snap.threads):
        out += [f"(stacks cut at {MAX_FRAMES} frames: the innermost kept; the notes name them)", ""]
    for index, child in enumerate(report.tree.children):
        if index:
            out.append("")
        render(child, "", "")
    return "\n".join(out)


def _moving(group: Group) -> str:
    return {True: "working", False: "frozen", None: "-"}[group.moving]


def group_rows(report: StacksReport) -> list[list[str]]:
    rows = []
    for index, group in enumerate(report.groups, 1):
        cls = group.classification
        rows.append(
            [
                str(index),
                format_rank_set(group.labels),
                str(len(group.labels)),
                group.state,
                _moving(group),
                str(cls.frame) if cls.frame else "-",
                str(cls.context) if cls.context else "-",
            ]
        )
    return rows


GROUP_HEADERS = ["group", "ranks", "n", "state", "motion", "where", "inside"]


def render_groups(report: StacksReport) -> str:
    return simple_table(group_rows(report), GROUP_HEADERS)


PROBLEM_HEADERS = ["pid", "rank", "title", "not read"]


def problem_rows(report: StacksReport) -> list[list[str]]:
    return [
        [str(p.pid) if p.pid is not None else "-", p.rank or p.role or "-", p.title or "-", p.error or ""]
        for p in report.processes
        if p.error
    ]
