"""The transport interface: one command on every node through a cluster's engine, in parallel under a
bound and a per-node timeout; each node's output, or why it gave none, in words a person can act on.

Like stacks/pyspy.py this is an edge: the engines (ssh, srun, kubectl) are subprocesses, each started in its
own session so that a node that overruns its timeout is killed through its own process group, never anything
else."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from logphase.stacks.pyspy import kill_group

# What a node's answer may weigh: a logphase stacks JSON of 512 processes of 50 frames is ~5 MB.
MAX_ANSWER_BYTES = 16 << 20


@dataclass(frozen=True)
class NodeRun:
    """One node's run of the command: its output, or why there is none (`failure`, in words)."""

    node: str
    stdout: bytes = b""
    stderr: str = ""
    returncode: int | None = None  # None: killed at the timeout, or never started
    started: float = 0.0
    ended: float = 0.0
    failure: str | None = None  # "timeout: no answer within 10s", "auth: Permission denied (publickey)", ...
    wall_started: float = 0.0  # this machine's wall clock when it started (time.time())
    first_output: float | None = None  # when its first stdout bytes came (on `started`'s clock)
    cut: bool = False  # its output passed the bound it was read under and was cut there (a log)

    def wall_at(self, moment: float) -> float:
        """A moment of this run (on `started`'s clock) on this machine's wall clock."""
        return self.wall_started + (moment - self.started)


class Transport(Protocol):
    """An engine that reaches a cluster's nodes: ssh, Slurm's srun, Ray's tasks, kubectl."""

    @property
    def engine(self) -> str:
        """ "ssh", "slurm", "ray", "k8s": how the nodes were reached, named beside every node that gave no answer."""
        ...

    def run(
        self,
        command: Sequence[str],
        *,
        timeout_s: float,
        parallel: int,
        limit: int = MAX_ANSWER_BYTES,
        cut: bool = False,
    ) -> list[NodeRun]:
        """`command` on every node, at most `parallel` at once, each under `timeout_s`; one NodeRun per node, its
        output at most `limit` bytes (refused past it, or with `cut` kept to it)."""
        ...


def run_local(
    node: str,
    argv: Sequence[str],
    *,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    limit: int = MAX_ANSWER_BYTES,
    cut: bool = False,
) -> NodeRun:
    """Run one engine client (`ssh host …`, `kubectl exec pod …`, `srun …`) here, under a timeout. Its output
    is read as it comes, so that when its first bytes came is known (a remote clock read there is dated by
    it: nodes/logs.py). Past `limit` bytes the answer is refused, or with `cut` (a log) kept to `limit`."""
    started, wall = clock(), time.time()
    try:
        child = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        said = f"cannot run {argv[0]}: {exc.strerror}"
        return NodeRun(node=node, started=started, ended=clock(), failure=said, wall_started=wall)
    read = _read_both(child, started + timeout_s, limit, clock)
    stdout, stderr = b"".join(read.stdout)[:limit], read.stderr.decode("utf-8", "replace")[-4000:]
    failure: str | None = None
    if read.timed_out:
        failure = f"timeout: no answer within {timeout_s:g}s"
    elif read.over and not cut:
        failure, stdout = f"an answer over {limit >> 20} MB", b""
    if read.timed_out or read.over:
        kill_group(child.pid)  # a log past its bound: what came is kept, the rest is not waited for
    returncode = child.wait()
    return NodeRun(
        node=node,
        stdout=stdout,
        stderr=stderr,
        returncode=None if read.timed_out or (read.over and cut) else returncode,
        started=started,
        ended=clock(),
        failure=failure,
        wall_started=wall,
        first_output=read.first_output,
        cut=read.over and cut,
    )


@dataclass
class _Read:
    stdout: list[bytes]
    stderr: bytes = b""
    first_output: float | None = None
    timed_out: bool = False
    over: bool = False


def _read_both(child: subprocess.Popen[bytes], deadline: float, limit: int, clock: Callable[[], float]) -> _Read:
    """Both pipes until they close, the deadline passes or stdout passes `limit` bytes."""
    assert child.stdout is not None and child.stderr is not None
    read = _Read(stdout=[])
    size, stderr = 0, bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        selector.register(child.stderr, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - clock()
            if left <= 0:
                read.timed_out = True
                break
            for key, _ in selector.select(timeout=left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is child.stdout:
                    if read.first_output is None:
                        read.first_output = clock()
                    read.stdout.append(chunk)
                    size += len(chunk)
                else:
                    stderr += chunk
                    del stderr[:-8000]
            if size > limit:
                read.over = True
                break
    child.stdout.close()
    child.stderr.close()
    read.stderr = bytes(stderr)
    return read


def run_each(
    commands: Sequence[tuple[str, Sequence[str]]],
    *,
    timeout_s: float,
    parallel: int,
    limit: int = MAX_ANSWER_BYTES,
    cut: bool = False,
) -> list[NodeRun]:
    """(node, argv) pairs, at most `parallel` at once, each under its own timeout; in the order given."""
    if not commands:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(commands))), thread_name_prefix="node") as pool:
        return list(
            pool.map(lambda item: run_local(item[0], item[1], timeout_s=timeout_s, limit=limit, cut=cut), commands)
        )


# --- why a node gave no answer -------------------------------------------------------------------------

# What the remote logphase says on stderr when it cannot do its job (cli prints `logphase: error: …`).
_REMOTE_ERROR = "logphase: error: "
NO_LOGPHASE = "no logphase: the command is not installed on the node (see --remote)"


def remote_failure(stderr: str, returncode: int | None) -> str | None:
    """What the node's own logphase (or its shell) said went wrong; None when it said nothing useful."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = next((line.removeprefix(_REMOTE_ERROR) for line in lines if line.startswith(_REMOTE_ERROR)), None)
    lowered = stderr.lower()
    if returncode == 127 or "command not found" in lowered or "executable file not found" in lowered:
        return NO_LOGPHASE
    if said is not None:
        if "py-spy" in said and ("not installed" in said or "not found" in said):
            return f"no py-spy: {said}"
        if "permission denied" in said.lower():
            return f"ptrace denied: {said}"
        return said
    return None


def last_words(stderr: str, limit: int = 200) -> str:
    """The last non-empty line of an engine's stderr, as the reason of last resort."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""
