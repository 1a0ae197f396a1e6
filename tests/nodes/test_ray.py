"""`logphase stacks --ray ADDRESS`: a real Ray cluster on this machine (the test extra's `ray`), a head and a
worker node, each a raylet inside a fake node's PID namespace on its own loopback address, so that the task
Ray pins to a node sees only that node's ranks; the merged answer names the stuck node and rank."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.stacks.conftest import free_port

from .conftest import REMOTE, Node, kill_node, launch_node, namespaces_work, skip_unless

pytestmark = [pytest.mark.live, pytest.mark.slow]

RAY = Path(sys.executable).parent / "ray"
HEAD, WORKER = "127.0.0.2", "127.0.0.3"
# Each node's own log folder, bound (inside the node's mount namespace) at the one path LOGS["common"] on every
# node, as separate machines hold their own files at the same path.
LOGS: dict[str, Path] = {}


def ray_missing() -> str | None:
    if importlib.util.find_spec("ray") is None or not RAY.exists():
        return "Ray is not installed (pip install ray; the test extra has it)"
    return namespaces_work()


def ray_start(node: Node, *args: str) -> None:
    """`ray start` inside the node's namespaces: the raylet and the workers it starts see that node's processes."""
    argv = ["nsenter", "-t", str(node.pid), "-p", "-m", str(RAY), "start", "--num-cpus", "1", "--disable-usage-stats"]
    argv += ["--metrics-export-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()), *args]
    started = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    if started.returncode != 0:
        skip_unless(f"Ray did not start on {node.name}: {(started.stderr or started.stdout).strip()[-400:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray cluster of two nodes, its head on 127.0.0.2 (node a: four ranks in a barrier of eight) and a worker
    on 127.0.0.3 (node b: the same but its local rank 2, still loading its weights); its address."""
    skip_unless(ray_missing())
    folder = tmp_path_factory.mktemp("ray")
    # Ray's sockets live under its temp dir: a short path, as a unix socket's name is at most 107 bytes
    temp = tempfile.mkdtemp(prefix="logphase-ray-")
    nodes: list[Node] = []
    try:
        nodes.append(launch_node(folder, "a", ["barrier"] * 4, barrier_size=8))
        nodes.append(launch_node(folder, "b", ["barrier", "barrier", "slow", "barrier"], barrier_size=8))
        LOGS["common"] = folder / "var-log"
        LOGS["common"].mkdir()
        for node in nodes:
            LOGS[node.name] = folder / f"logs-{node.name}"
            LOGS[node.name].mkdir()
            bind = ["nsenter", "-t", str(node.pid), "-m", "mount", "--bind", str(LOGS[node.name]), str(LOGS["common"])]
            subprocess.run(bind, check=True, capture_output=True, timeout=30)
        address = f"{HEAD}:{free_port()}"
        ray_start(
            nodes[0],
            "--head",
            "--node-ip-address",
            HEAD,
            "--port",
            address.rpartition(":")[2],
            "--temp-dir",
            temp,
            "--include-dashboard",
            "false",
        )
        ray_start(nodes[1], "--address", address, "--node-ip-address", WORKER)
        yield address
    finally:
        for node in nodes:
            # `ray stop` inside a node's namespace sees, and stops, that node's Ray only; what it kills stays a
            # zombie there (the launcher reaps none) until the namespace goes, so it is given no time to wait
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(
                    ["nsenter", "-t", str(node.pid), "-p", "-m", str(RAY), "stop", "--force", "--grace-period", "0"],
                    capture_output=True,
                    timeout=60,
                    check=False,
                )
            kill_node(node)
        shutil.rmtree(temp, ignore_errors=True)


def stacks(address: str, *extra: str, remote: str = REMOTE) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("stacks", "--ray", address, "--remote", remote, "--match", "sglang::", "--format", "json", *extra)
    return result.exit_code, json.loads(result.stdout)


def test_the_stuck_node_and_rank_are_named(cluster: str) -> None:
    # GIVEN the two nodes: every rank waits in the barrier of eight but the worker node's local rank 2
    # WHEN their stacks are taken through Ray, a task pinned to each node
    code, data = stacks(cluster, "--node-timeout", "60")
    # THEN the culprit is TP2 of the worker node, named by its address, and every rank of both was read
    assert data["culprit_ranks"] == [f"{WORKER}:TP2"]
    ranks = sorted((p["host"], p["rank"]) for p in data["processes"] if p["rank"])
    assert ranks == [(node, f"TP{r}") for node in (HEAD, WORKER) for r in range(4)]
    assert code == 4


def test_a_node_that_hangs_is_named_with_why(cluster: str, tmp_path: Path) -> None:
    # GIVEN a logphase that never answers on the worker node (where its Ray's processes name its address)
    wrapper = tmp_path / "logphase"
    pattern = WORKER.replace(".", "\\.")  # grep's own arguments do not match it
    wrapper.write_text(f"#!/bin/sh\nps -ww -eo args | grep -q '{pattern}' && exec sleep 600\nexec {REMOTE} \"$@\"\n")
    wrapper.chmod(0o755)
    # WHEN the stacks are taken with a per-node timeout of 4 s, one node at a time
    code, data = stacks(cluster, "--node-timeout", "4", "--parallel", "1", remote=str(wrapper))
    # THEN the worker node is one unread entry that says why; the head's ranks are read, and judged alone
    silent = {p["host"]: p["error"] for p in data["processes"] if p["role"] == "node"}
    assert silent == {WORKER: "no answer: timeout: no answer within 4s"}
    read = sorted(p["rank"] for p in data["processes"] if p["host"] == HEAD and p["rank"])
    assert read == [f"TP{r}" for r in range(4)]
    assert data["summary"].endswith(f" — 1 node did not answer: {WORKER}, look there first")
    assert code == 4


def test_nodes_without_logphase_are_said(cluster: str) -> None:
    # GIVEN a logphase command that no node has WHEN the stacks are asked for THEN each node says so: exit 3
    code, data = stacks(cluster, "--node-timeout", "60", remote="/nonexistent/logphase")
    assert {p["host"]: p["error"] for p in data["processes"]} == {
        HEAD: "no answer: no logphase: the command is not installed on the node (see --remote)",
        WORKER: "no answer: no logphase: the command is not installed on the node (see --remote)",
    }
    assert code == 3


def test_an_address_where_no_cluster_listens_is_said() -> None:
    # GIVEN an address where nothing listens WHEN the stacks are asked for THEN it is said before any task: exit 3
    skip_unless(ray_missing())
    result = run_cli("stacks", "--ray", f"{HEAD}:{free_port()}", "--remote", REMOTE)
    assert result.exit_code == 3
    assert f"cannot reach the Ray cluster at {HEAD}:" in result.stderr
    assert "Connection refused" in result.stderr


def test_the_stuck_node_and_rank_are_named_from_the_logs(cluster: str) -> None:
    # GIVEN each node's SGLang log at the same path, neither stating a node rank: every rank reached weight_load
    # but the worker node's TP1, whose log stops in dist_init
    from .test_logs_ssh import node_log

    (LOGS["a"] / "server.log").write_text(node_log({0: True, 1: True}, node_rank=None))
    (LOGS["b"] / "server.log").write_text(node_log({0: True, 1: False}, node_rank=None))
    # WHEN the logs are judged, read by a task pinned to each node
    result = run_cli(
        "analyze", "--ray", cluster, "--log-path", f"{LOGS['common']}/server.log", "--post-mortem", "--format", "json"
    )
    data = json.loads(result.stdout)
    # THEN each rank is named by its node's address, and the worker's TP1 is the culprit
    assert sorted(data["ranks"]) == [f"{node}:TP{r}" for node in (HEAD, WORKER) for r in range(2)]
    assert data["culprit_ranks"] == [f"{WORKER}:TP1"]
    assert [n["node"] for n in data["nodes"]["nodes"] if n["logs"]] == [HEAD, WORKER]
    assert result.exit_code == 4
