"""The Ray transport: the cluster's alive nodes (`ray.nodes()`), on each a task pinned to it (hard node
affinity) that runs the command there; Ray is imported here only, and only when `--ray` asks for it."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logphase.errors import SnapshotError
from logphase.nodes.transport import MAX_ANSWER_BYTES, NO_LOGPHASE, NodeRun, remote_failure

# What Ray may take on top of the command's own timeout to start a worker on the node and return its answer;
# past it the task is cancelled and the node named as one that did not answer.
RAY_GRACE_S = 5.0
_RAY_REASONS = {
    "NodeDiedError": "node died",
    "WorkerCrashedError": "worker crashed",
    "TaskUnschedulableError": "unschedulable",
    "OutOfMemoryError": "out of memory",
    "RuntimeEnvSetupError": "runtime env failed",
    "TaskCancelledError": "cancelled",
}


# A word of the command that stands for the node's Ray session folder (its logs/ hold each worker's output):
# replaced on each node by its own, from `ray.nodes()` (the parent of the session's sockets/ folder).
RAY_SESSION = "{ray-session}"
RAY_DEFAULT_SESSION = "/tmp/ray/session_latest"  # Ray's default temp folder's link to its newest session


@dataclass(frozen=True)
class RayNode:
    name: str  # as `ray status` names it: its node name, by default its IP address
    node_id: str
    session: str = RAY_DEFAULT_SESSION  # its session folder

    def argv(self, command: Sequence[str]) -> list[str]:
        return [word.replace(RAY_SESSION, self.session) for word in command]


def session_of(entry: Mapping[str, Any]) -> str:
    """A node's session folder from `ray.nodes()`: its object store's socket is `<session>/sockets/plasma_store`."""
    socket_path = str(entry.get("ObjectStoreSocketName") or "")
    parts = socket_path.rsplit("/sockets/", 1)
    return parts[0] if len(parts) == 2 and parts[0] else RAY_DEFAULT_SESSION


@dataclass(frozen=True)
class RayTransport:
    """A task on each alive node of the Ray cluster at `address` ("auto": the one this machine belongs to, or
    RAY_ADDRESS), pinned there, that runs the command as a subprocess and returns its output."""

    address: str = "auto"
    engine: str = "ray"

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float,
        parallel: int,
        limit: int = MAX_ANSWER_BYTES,
        cut: bool = False,
    ) -> list[NodeRun]:
        ray = import_ray()
        joined = connect(ray, self.address, timeout_s=timeout_s)
        try:
            nodes = alive_nodes(ray.nodes())
            if not nodes:
                raise SnapshotError(f"the Ray cluster at {self.address} has no alive node", hint="see `ray status`")
            return run_tasks(ray, nodes, command, timeout_s=timeout_s, parallel=parallel, limit=limit, cut=cut)
        finally:
            if joined:
                ray.shutdown()


def import_ray() -> Any:
    """The `ray` package: never a dependency of logphase, imported when a cluster is asked for."""
    try:
        import ray
    except ImportError as exc:
        raise SnapshotError(
            f"--ray needs Ray's Python package next to logphase ({sys.executable}): {exc}",
            hint="pip install ray (the cluster's version) into logphase's Python, or install logphase into Ray's",
        ) from None
    return ray


def connect(ray: Any, address: str, *, timeout_s: float) -> bool:
    """Join the cluster as a driver; False when this process already had joined one (left joined after)."""
    if ray.is_initialized():
        return False
    hint = (
        "check `ray status --address ADDRESS`; run logphase on a node of the cluster (or give ray://HEAD:10001), "
        "with the cluster's Python and Ray versions"
    )
    given = os.environ.get("RAY_ADDRESS", address) if address == "auto" else address
    unreachable = cannot_reach(given, timeout_s=min(timeout_s, 10.0))
    if unreachable is not None:  # ray.init retries an address that does not answer for minutes
        raise SnapshotError(f"cannot reach the Ray cluster at {given}: {unreachable}", hint=hint)
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # ConnectionError, RuntimeError (versions differ), ValueError: all say why in words
        said = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise SnapshotError(f"cannot join the Ray cluster at {address}: {said}", hint=hint) from None
    return True


def cannot_reach(address: str, *, timeout_s: float) -> str | None:
    """Why nothing answers at an address `host:port` (or `ray://host:port`); None when it answers, or when the
    address is one Ray resolves itself ("auto")."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def alive_nodes(table: Sequence[Mapping[str, Any]]) -> list[RayNode]:
    """The alive nodes of `ray.nodes()` by name (address order); two of one name told apart by their id."""
    alive = [entry for entry in table if entry.get("Alive")]
    names = [str(entry.get("NodeName") or entry.get("NodeManagerAddress")) for entry in alive]
    repeated = Counter(names)
    nodes = [
        RayNode(
            name=name if repeated[name] == 1 else f"{name}/{entry['NodeID'][:8]}",
            node_id=str(entry["NodeID"]),
            session=session_of(entry),
        )
        for name, entry in zip(names, alive, strict=True)
    ]
    return sorted(nodes, key=lambda node: _address_order(node.name))


def _address_order(name: str) -> tuple[int, int, str]:
    try:
        return (0, int(ipaddress.ip_address(name.split("/")[0])), name)
    except ValueError:
        return (1, 0, name)


def run_tasks(
    ray: Any,
    nodes: Sequence[RayNode],
    command: Sequence[str],
    *,
    timeout_s: float,
    parallel: int,
    limit: int = MAX_ANSWER_BYTES,
    cut: bool = False,
) -> list[NodeRun]:
    """A task per node, at most `parallel` at once: the command under `timeout_s` there, the task itself under
    `timeout_s + RAY_GRACE_S` here (cancelled past it); in the order of `nodes`."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(node_task())
    waiting = list(nodes)
    running: dict[Any, tuple[RayNode, float]] = {}
    done: dict[str, NodeRun] = {}
    limit_s = timeout_s + RAY_GRACE_S
    while waiting or running:
        while waiting and len(running) < parallel:
            node = waiting.pop(0)
            pinned = NodeAffinitySchedulingStrategy(node_id=node.node_id, soft=False)
            # no CPU of its own: the server's workers may hold them all; never retried on another node
            ref = task.options(num_cpus=0, max_retries=0, scheduling_strategy=pinned, name="logphase-stacks")
            running[ref.remote(node.argv(command), timeout_s, min(limit, MAX_ANSWER_BYTES))] = (node, time.monotonic())
        first_deadline = min(started for _, started in running.values()) + limit_s
        ready, _ = ray.wait(list(running), num_returns=1, timeout=max(0.0, first_deadline - time.monotonic()))
        for ref in ready:
            node, started = running.pop(ref)
            try:
                answer, failure = ray.get(ref), None
            except ray.exceptions.RayError as exc:
                answer, failure = {}, ray_failure(exc)
            done[node.name] = node_run(
                node.name, answer, failure, started=started, ended=time.monotonic(), timeout_s=timeout_s, cut=cut
            )
        now = time.monotonic()
        for ref, (node, started) in list(running.items()):
            if now >= started + limit_s:
                ray.cancel(ref, force=True)
                del running[ref]
                failure = f"timeout: no answer within {limit_s:g}s (Ray did not run the task on the node)"
                done[node.name] = NodeRun(node=node.name, started=started, ended=now, failure=failure)
    return [done[node.name] for node in nodes]


def node_task() -> Callable[[list[str], float, int], dict[str, Any]]:
    """What runs on each node. Defined inside a function, so that Ray sends it by value: the node's Ray Python
    needs no logphase of its own (the command may be a logphase installed elsewhere)."""

    def run_on_node(argv: list[str], timeout_s: float, limit: int) -> dict[str, Any]:
        import contextlib
        import os
        import signal
        import subprocess

        pipe = subprocess.PIPE
        try:  # its own session: at the timeout the command and its py-spy children go together
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, start_new_session=True)
        except OSError as exc:
            return {"errno": exc.errno, "error": f"cannot run {argv[0]}: {exc.strerror}"}
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            stdout, stderr = child.communicate()
            return {"timeout": True, "stderr": stderr[-4000:].decode("utf-8", "replace")}
        return {
            "returncode": child.returncode,
            "stdout": stdout[: limit + 1],
            "stderr": stderr[-4000:].decode("utf-8", "replace"),
        }

    return run_on_node


def node_run(
    node: str,
    answer: Mapping[str, Any],
    failure: str | None,
    *,
    started: float,
    ended: float,
    timeout_s: float,
    cut: bool = False,
) -> NodeRun:
    """A node task's answer (or Ray's failure to run it) as a NodeRun, with why it gave none in words."""
    stdout: bytes = answer.get("stdout", b"")
    if failure is None and "error" in answer:
        failure = NO_LOGPHASE if answer.get("errno") == errno.ENOENT else str(answer["error"])
    elif failure is None and answer.get("timeout"):
        failure = f"timeout: no answer within {timeout_s:g}s"
    elif failure is None and len(stdout) > MAX_ANSWER_BYTES and not cut:
        failure, stdout = f"an answer over {MAX_ANSWER_BYTES >> 20} MB", b""
    run = NodeRun(
        node=node,
        stdout=stdout,
        stderr=str(answer.get("stderr", "")),
        returncode=answer.get("returncode"),
        started=started,
        ended=ended,
        failure=failure,
        wall_started=time.time() - (time.monotonic() - started),
        cut=cut and len(stdout) > MAX_ANSWER_BYTES,
    )
    if run.failure is None and run.returncode not in (0, None) and not run.stdout.strip():
        said = remote_failure(run.stderr, run.returncode)
        return replace(run, failure=said) if said else run
    return run


def ray_failure(exc: Exception) -> str:
    """Why Ray could not run a node's task, in words: the kind, then the first line Ray gave."""
    kind = _RAY_REASONS.get(type(exc).__name__, f"ray: {type(exc).__name__}")
    words = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{kind}: {words[:200]}" if words else kind
