"""Every node's stacks through a transport: each node's `logphase stacks --format json` read back into snapshots
named by their node, and a node that gave none listed with why, so the merge names it and never hides it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from logphase.nodes.transport import NodeRun, Transport, last_words
from logphase.stacks.dumps_json import iter_json_documents, parse_json_text
from logphase.stacks.model import NODE_ROLE, SCHEMA, ProcessSnapshot


def remote_stacks_command(
    remote: Sequence[str],
    *,
    pids: Sequence[int] = (),
    match: str | None = None,
    samples: int = 1,
    interval_s: float = 1.0,
    timeout_s: float = 10.0,
    native: bool = False,
    nonblocking: bool = False,
) -> list[str]:
    """What each node runs: its own `logphase stacks` over its processes (`--pid` there, else `--all`)."""
    command = [*remote, "stacks", "--format", "json", "--timeout", f"{timeout_s:g}"]
    command += [f"--pid={pid}" for pid in pids] if pids else ["--all", *(["--match", match] if match else [])]
    if samples > 1:
        command += ["--samples", str(samples), "--interval", f"{interval_s:g}"]
    if native:
        command.append("--native")
    if nonblocking:
        command.append("--nonblocking")
    return command


def collect_stacks(
    transport: Transport, command: Sequence[str], *, timeout_s: float, parallel: int
) -> tuple[list[ProcessSnapshot], float | None]:
    """Run `command` on every node; the snapshots of all nodes and the capture skew between the nodes."""
    runs = transport.run(command, timeout_s=timeout_s, parallel=parallel)
    return snapshots_of(runs, transport.engine), skew_of(runs)


def snapshots_of(runs: Sequence[NodeRun], engine: str) -> list[ProcessSnapshot]:
    """Each node's processes, their host the node's name as the engine knows it (loopback hosts share one
    hostname); a node without an answer becomes one unread entry that says why."""
    out: list[ProcessSnapshot] = []
    for run in runs:
        snapshots, failure = _read_answer(run)
        if failure is not None:
            out.append(
                ProcessSnapshot(
                    pid=None,
                    role=NODE_ROLE,
                    title=f"{run.node} ({engine})",
                    host=run.node,
                    error=f"no answer: {failure}",
                    source=engine,
                )
            )
            continue
        out += [replace(s, host=run.node, source=f"{engine} {run.node}") for s in snapshots]
    return out


def _read_answer(run: NodeRun) -> tuple[list[ProcessSnapshot], str | None]:
    if run.failure is not None:
        return [], run.failure
    text = run.stdout.decode("utf-8", "replace")
    if not text.strip():
        words = last_words(run.stderr)
        return [], f"nothing printed (exit status {run.returncode}{': ' + words if words else ''})"
    first = text.strip().splitlines()[0][:80]
    try:
        documents = list(iter_json_documents(text))  # what a login shell printed before it is skipped
        if not any(isinstance(d, dict) and d.get("schema") == SCHEMA for d in documents):
            return [], f"an answer without logphase stacks JSON ({first!r}); is the node's logphase current?"
        snapshots = parse_json_text(text)
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        return [], f"an answer that is not logphase stacks JSON ({type(exc).__name__}: {first!r})"
    return snapshots, None


def skew_of(runs: Sequence[NodeRun]) -> float | None:
    """The spread of the nodes' capture times (the middle of each node's run), as far as this machine saw them."""
    middles = [(run.started + run.ended) / 2 for run in runs if run.failure is None and run.ended]
    return max(middles) - min(middles) if middles else None
