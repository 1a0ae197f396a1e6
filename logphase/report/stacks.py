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
            text = with_lines(item.key, item.lines)
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


def with_lines(key: str, lines: tuple[int, ...]) -> str:
    """`capture (cuda_graph_runner.py:812)`: a frame key with the lines its threads are at (`:812,815`; `:812,…`
    past three)."""
    if not lines or not key.endswith(")"):
        return key
    shown = ",".join(str(n) for n in lines[:3]) + (",…" if len(lines) > 3 else "")
    return f"{key[:-1]}:{shown})"


def _moving(group: Group, samples: int) -> str:
    """Of several samples, whether the stack moved; of one, py-spy's mark (on the CPU, or idle); working by its
    GPU's evidence (NVML), said so."""
    if group.moving is True and group.gpu_busy:
        return "working (GPU busy)"
    if samples == 1:
        return {True: "working (on CPU)", False: "waiting (idle)", None: "-"}[group.moving]
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
                _moving(group, report.samples),
                cpu_text(group.cpu_pct),
                str(cls.frame) if cls.frame else "-",
                str(cls.context) if cls.context else "-",
            ]
        )
    return rows


GROUP_HEADERS = ["group", "ranks", "n", "state", "motion", "cpu", "where", "inside"]


def cpu_text(shares: tuple[float | None, ...]) -> str:
    """The CPU % of a group's processes (of one core, over the sampling window): `97%`; of several, each
    (`0%, 97%`), past three the range (`0–97%`); `-` where none was read (dumps from files)."""
    known = [share for share in shares if share is not None]
    if not known:
        return "-"
    if len(shares) <= 3:
        return ", ".join(f"{share:.0f}%" if share is not None else "-" for share in shares)
    low, high = min(known), max(known)
    return f"{low:.0f}%" if f"{low:.0f}" == f"{high:.0f}" else f"{low:.0f}–{high:.0f}%"


def render_groups(report: StacksReport, width: int | None = None) -> str:
    return simple_table(group_rows(report), GROUP_HEADERS, width, whole=("motion", "cpu"))


PROBLEM_HEADERS = ["pid", "rank", "title", "not read"]


def problem_rows(report: StacksReport) -> list[list[str]]:
    return [
        [str(p.pid) if p.pid is not None else "-", p.rank or p.role or "-", p.title or "-", p.error or ""]
        for p in report.processes
        if p.error
    ]


GPU_HEADERS = ["gpu", "model", "busy", "memory used", "processes"]
GPU_PROCESS_HEADERS = ["gpu", "pid", "process", "kernels", "GPU memory"]


def gpu_title(report: StacksReport) -> str | None:
    """The GPU section's first line: what read them, or why they were not read (None: not asked, e.g. dumps)."""
    reading = report.gpus
    if reading is None:
        return None
    if not reading.gpus:
        return reading.note or "GPUs not read"
    said = [f"driver {reading.driver}"] if reading.driver else []
    if reading.window_s is not None:
        said.append(f"process kernels over the last {reading.window_s:g}s")
    return f"GPUs (NVML{', ' if said else ''}{', '.join(said)}):"


def gpu_rows(report: StacksReport) -> list[list[str]]:
    reading = report.gpus
    return [
        [
            str(gpu.index),
            gpu.name or "-",
            f"{gpu.utilisation_pct}%" if gpu.utilisation_pct is not None else "-",
            _memory(gpu.memory_used_bytes, gpu.memory_total_bytes),
            str(len(gpu.processes)),
        ]
        for gpu in (reading.gpus if reading is not None else ())
    ]


def gpu_process_rows(report: StacksReport) -> list[list[str]]:
    """A row per process on a GPU, named as the stacks name it: whether its kernels kept the GPU busy."""
    reading = report.gpus
    rows = []
    for gpu in reading.gpus if reading is not None else ():
        for process in gpu.processes:
            kernels = {True: "busy", False: "idle", None: "-"}[process.busy]
            if process.sm_pct is not None:
                kernels += f" ({process.sm_pct}% SM)"
            memory = _gib(process.memory_bytes) if process.memory_bytes is not None else "-"
            rows.append([str(gpu.index), str(process.pid), process.label or "-", kernels, memory])
    return rows


def _memory(used: int | None, total: int | None) -> str:
    if used is None or total is None:
        return "-"
    return f"{used / (1 << 30):.1f} of {_gib(total)}"


def _gib(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB"
