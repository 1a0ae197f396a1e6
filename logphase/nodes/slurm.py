"""The Slurm transport: one step inside the running job (`srun --overlap --jobid J --ntasks-per-node=1`), a task
per node, its output told apart by srun's `--label`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from logphase.errors import SnapshotError
from logphase.nodes.transport import MAX_ANSWER_BYTES, NodeRun, last_words, remote_failure, run_local

# `srun: error: node2: task 1: Exited with exit code 3`
_TASK_EXIT = re.compile(r"srun: error: (?P<node>\S+): tasks? (?P<task>\d+)(?:-\d+)?: (?P<what>.+)")
_LABEL = re.compile(rb"^\s*(\d+): ?")
_TEXT_LABEL = re.compile(r"^\s*(\d+): ?")
_EXIT_CODE = re.compile(r"Exited with exit code (\d+)")


@dataclass(frozen=True)
class SlurmTransport:
    """A step of `job` with one task on each of its nodes; the job's nodes from `squeue` (in task order)."""

    job: str
    engine: str = "slurm"
    nodelist: tuple[str, ...] | None = None  # the step on these of the job's nodes only (its logs: nodes/logs.py)

    def nodes(self, *, timeout_s: float) -> list[str]:
        """The job's nodes in Slurm's order (task i runs on the i-th): `squeue -o %N`, expanded by scontrol."""
        listed = run_local("squeue", ["squeue", "-h", "-j", self.job, "-o", "%T %N"], timeout_s=timeout_s)
        said = listed.failure or last_words(listed.stderr)
        if listed.returncode != 0 or listed.failure is not None or not listed.stdout.strip():
            raise SnapshotError(
                f"no such job: Slurm knows no running job {self.job}" + (f" ({said})" if said else ""),
                hint="check the job id with `squeue --me`",
            )
        state, _, nodelist = listed.stdout.decode("utf-8", "replace").strip().splitlines()[0].partition(" ")
        if state != "RUNNING":
            raise SnapshotError(f"job {self.job} is {state.lower()}, not running", hint="its nodes run nothing yet")
        expanded = run_local("scontrol", ["scontrol", "show", "hostnames", nodelist], timeout_s=timeout_s)
        names = expanded.stdout.decode("utf-8", "replace").split()
        if expanded.returncode != 0 or not names:
            raise SnapshotError(
                f"scontrol could not expand the node list {nodelist!r}: {last_words(expanded.stderr)}",
                hint="is Slurm's `scontrol` on PATH?",
            )
        return names

    def argv(self, nodes: Sequence[str], command: Sequence[str]) -> list[str]:
        return [
            "srun",
            "--overlap",  # share the job's resources: no new allocation, no wait
            f"--jobid={self.job}",
            f"--nodes={len(nodes)}",
            *([f"--nodelist={','.join(nodes)}"] if self.nodelist is not None else []),
            "--ntasks-per-node=1",
            "--label",
            "--input=none",
            "--",
            *command,
        ]

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float,
        parallel: int,
        limit: int = MAX_ANSWER_BYTES,
        cut: bool = False,
    ) -> list[NodeRun]:
        # one step: Slurm fans the task out itself (a tree), so `parallel` does not bound it
        nodes = list(self.nodelist) if self.nodelist is not None else self.nodes(timeout_s=timeout_s)
        argv = self.argv(nodes, command)
        step = run_local(f"job {self.job}", argv, timeout_s=timeout_s, limit=limit * len(nodes), cut=cut)
        return split_step(step, nodes)


def split_step(step: NodeRun, nodes: Sequence[str]) -> list[NodeRun]:
    """One srun step's labelled output → a NodeRun per node (task i ran on nodes[i])."""
    stdout: dict[int, list[bytes]] = {}
    # lines end at \n only: srun labels what follows each \n (a progress bar's \r stays inside its line)
    for raw in step.stdout.split(b"\n"):
        raw += b"\n"
        label = _LABEL.match(raw)
        if label is not None:
            stdout.setdefault(int(label.group(1)), []).append(raw[label.end() :])
    stderr: dict[int, list[str]] = {}
    exits: dict[int, int] = {}
    general: list[str] = []
    for line in step.stderr.splitlines():
        task_exit = _TASK_EXIT.search(line)
        labelled = _TEXT_LABEL.match(line)
        if task_exit is not None:
            task = int(task_exit.group("task"))
            status = _EXIT_CODE.search(task_exit.group("what"))
            exits[task] = int(status.group(1)) if status else -1
            stderr.setdefault(task, []).append(line)
        elif labelled is not None:
            stderr.setdefault(int(labelled.group(1)), []).append(line[labelled.end() :])
        else:
            general.append(line)
    runs = []
    for task, node in enumerate(nodes):
        out = b"".join(stdout.get(task, []))
        err = "\n".join(stderr.get(task, []))
        code = exits.get(task, 0 if step.returncode == 0 else None)
        failure: str | None = None
        if step.failure is not None and not out.strip():
            failure = step.failure
        elif not out.strip():
            words = last_words("\n".join(general))
            failure = remote_failure(err, code) or last_words(err) or (f"srun failed: {words}" if words else None)
            failure = failure or "srun gave no output for this node"
        runs.append(
            NodeRun(
                node=node,
                stdout=out,
                stderr=err,
                returncode=code if step.failure is None else None,
                started=step.started,
                ended=step.ended,
                failure=failure,
                wall_started=step.wall_started,
                first_output=step.first_output,
                cut=step.cut,
            )
        )
    return runs


split_lines_by_label = split_step
