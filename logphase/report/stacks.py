"""Pure renderers of a StacksReport: the merged tree, the table of groups, JSON, markdown (strings)."""

from __future__ import annotations

import json

from tabulate import tabulate

from logphase.judging.stacks import WAIT_STATES
from logphase.ranks import format_rank_set
from logphase.stacks.model import Group, StacksReport, TreeNode

_COLOURS = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "bold": "1", "dim": "2"}


def _paint(text: str, colour: str, enabled: bool) -> str:
    return f"\x1b[{_COLOURS[colour]}m{text}\x1b[0m" if enabled else text


def _state_colour(state: str) -> str:
    if state == "idle":
        return "green"
    if state in WAIT_STATES or state == "subprocess_wait":
        return "yellow"
    if state == "crashed":
        return "red"
    return "cyan"


def render_tree(report: StacksReport, *, color: bool = False, max_chain: int = 6) -> str:
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
        painted = _paint(
            label, "red" if culprits & set(node.labels) and culprits >= set(node.labels) else "bold", color
        )
        pad = " " * len(label)
        lines: list[str] = []
        skipped = 0
        for index, item in enumerate(chain):
            if len(chain) > max_chain and index not in keep:
                skipped += 1
                continue
            if skipped:
                lines.append(_paint(f"… {skipped} frame{'s' if skipped != 1 else ''} …", "dim", color))
                skipped = 0
            text = item.key
            if item.state:
                text += "  " + _paint(f"[{item.state}]", _state_colour(item.state), color)
            lines.append(text)
        for index, text in enumerate(lines):
            out.append(f"{first if index == 0 else rest}{painted if index == 0 else pad}  {text}")
        children = chain[-1].children
        for index, child in enumerate(children):
            last = index == len(children) - 1
            render(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "))

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
    return tabulate(group_rows(report), headers=GROUP_HEADERS, tablefmt="simple")


def problem_rows(report: StacksReport) -> list[list[str]]:
    return [
        [str(p.pid) if p.pid is not None else "-", p.rank or p.role or "-", p.title or "-", p.error or ""]
        for p in report.processes
        if p.error
    ]


def render_table(report: StacksReport, *, color: bool = False) -> str:
    parts = [_paint(report.summary, "red" if report.stuck else "green", color)]
    if report.culprit_ranks:
        parts.append(f"odd ranks: {', '.join(report.culprit_ranks)}")
    if report.divergence is not None:
        parts.append(f"the groups diverge below {report.divergence}")
    details = [f"{report.readable} of {len(report.processes)} processes read", f"{report.samples} sample(s)"]
    if report.samples > 1:
        details.append(f"every {report.interval_s:g}s")
    if report.skew_s is not None:
        details.append(f"capture skew {report.skew_s * 1000:.0f} ms")
    parts.append(", ".join(details))
    tree = render_tree(report, color=color)
    if tree:
        parts += ["", tree]
    if report.groups:
        parts += ["", render_groups(report)]
    problems = problem_rows(report)
    if problems:
        parts += ["", tabulate(problems, headers=["pid", "rank", "title", "not read"], tablefmt="simple")]
    return "\n".join(parts) + "\n"


def render_json(report: StacksReport) -> str:
    return json.dumps(report.to_json(), indent=2) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: StacksReport) -> str:
    lines = ["## logphase stacks", "", f"**{_md_cell(report.summary)}**", ""]
    if report.culprit_ranks:
        lines += [f"- odd ranks: {', '.join(report.culprit_ranks)}"]
    if report.divergence is not None:
        lines += [f"- the groups diverge below `{report.divergence}`"]
    lines += [f"- {report.readable} of {len(report.processes)} processes read, {report.samples} sample(s)"]
    if report.skew_s is not None:
        lines += [f"- capture skew {report.skew_s * 1000:.0f} ms"]
    lines += ["", "### Groups", ""]
    lines += [tabulate(group_rows(report), headers=GROUP_HEADERS, tablefmt="github")]
    tree = render_tree(report)
    if tree:
        lines += ["", "### Merged stacks", "", "```", tree, "```"]
    problems = problem_rows(report)
    if problems:
        lines += ["", "### Not read", ""]
        lines += [tabulate(problems, headers=["pid", "rank", "title", "not read"], tablefmt="github")]
    return "\n".join(lines) + "\n"


def render(report: StacksReport, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return render_json(report)
    if fmt == "markdown":
        return render_markdown(report)
    return render_table(report, color=color)
