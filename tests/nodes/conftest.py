"""Fake nodes for the many-node tests: each node is a PID namespace (`unshare --pid --mount-proc`) holding the
stacks tests' rank program, so that a node's own logphase sees only its own ranks, as on a real node; the
engines (sshd, the stand-in kubectl, Slurm) reach into it. Everything is killed at teardown."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.stacks.conftest import APP, free_port, py_spy_path
from tests.stacks.conftest import signatures as signatures  # the stall signatures, for the merge tests

# What each node runs: this checkout's logphase, by the Python that runs the tests (a node has no PATH to it).
REMOTE = f"{sys.executable} -m logphase"


def namespaces_work() -> str | None:
    """Why a node cannot be faked here (no unshare, not allowed), or None."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return "unshare/nsenter (util-linux) not installed"
    if py_spy_path() is None:
        return "py-spy is not installed"
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"cannot make a PID namespace: {probe.stderr.strip()[:200]} (needs root or user namespaces)"
    return None


def skip_unless(reason: str | None) -> None:
    if reason is not None:
        print(f"skipped: {reason}", file=sys.stderr)  # the reason shows in CI's log, not only with -rs
        pytest.skip(reason)


@dataclass
class Node:
    name: str
    launcher: subprocess.Popen[bytes]  # `unshare … launch.py`: its session holds the whole node
    pid: int  # the namespace's PID 1 (the launcher) as this machine sees it: nsenter's target


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    with contextlib.suppress(OSError):
        return [int(p) for p in path.read_text().split()]
    return []


def launch_node(folder: Path, name: str, ranks: list[str], *, barrier_size: int | None, wait_s: float = 30.0) -> Node:
    """A node whose ranks are titled `sglang::scheduler_TP{local rank}` and are in their named functions when it
    returns; the caller kills its launcher's session (`kill_node`)."""
    ready = folder / f"ready-{name}"
    ready.mkdir()
    spec = {
        "ranks": ranks,
        "title": "sglang::scheduler_TP{rank}",
        "ready_dir": str(ready),
        "port": free_port(),
        "barrier_size": barrier_size,
    }
    argv = ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(APP / "launch.py"), json.dumps(spec)]
    launcher = subprocess.Popen(argv, start_new_session=True)
    node = Node(name=name, launcher=launcher, pid=0)
    deadline = time.monotonic() + wait_s
    while len(list(ready.glob("ready.*"))) < len(ranks) or not _children(launcher.pid):
        exited = launcher.poll()
        if exited is not None:
            kill_node(node)
            raise RuntimeError(f"node {name} exited with {exited}")
        if time.monotonic() > deadline:
            kill_node(node)
            raise TimeoutError(f"node {name}: ranks not ready after {wait_s}s")
        time.sleep(0.05)
    time.sleep(0.3)  # from "ready" to inside the blocking call
    node.pid = _children(launcher.pid)[0]
    return node


def kill_node(node: Node) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.launcher.pid, signal.SIGKILL)  # unshare leads its session; the namespace dies with its PID 1
    node.launcher.wait(timeout=10)


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[Callable[..., Node]]:
    """start_node("b", ["barrier", "barrier", "slow", "barrier"], barrier_size=8): a node (launch_node), killed
    at teardown."""
    started: list[Node] = []

    def start(name: str, ranks: list[str], *, barrier_size: int | None = None, wait_s: float = 30.0) -> Node:
        started.append(launch_node(tmp_path, name, ranks, barrier_size=barrier_size, wait_s=wait_s))
        return started[-1]

    yield start
    for node in started:
        kill_node(node)


@pytest.fixture
def spawned() -> Iterator[Callable[[list[str]], subprocess.Popen[bytes]]]:
    """Start a helper (sshd, a listener) in its own session; killed with it at teardown."""
    children: list[subprocess.Popen[bytes]] = []

    def spawn(argv: list[str]) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        children.append(child)
        return child

    yield spawn
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)


def wait_for_port(host: str, port: int, child: subprocess.Popen[bytes], wait_s: float = 15.0) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        if child.poll() is not None:
            stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
            raise RuntimeError(f"{host}:{port} exited with {child.returncode}: {stderr[-500:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on {host}:{port} after {wait_s}s")
        time.sleep(0.05)
