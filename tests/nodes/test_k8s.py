"""`logphase stacks --k8s -l SELECTOR`: against a stand-in `kubectl` (tests/nodes/bin/kubectl: Kubernetes
cannot run here) whose pods are PID namespaces running the rank program, reached with nsenter."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli

from .conftest import REMOTE, Node, namespaces_work, skip_unless

pytestmark = [pytest.mark.live, pytest.mark.slow]

STANDIN = Path(__file__).resolve().parent / "bin"


@pytest.fixture
def pods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[list[dict]], None]:  # type: ignore[type-arg]
    """pods([{"name", "labels", "pid", ...}]): what the stand-in kubectl, first on PATH, lists."""
    skip_unless(namespaces_work())
    listing = tmp_path / "pods.json"
    monkeypatch.setenv("KUBECTL_STANDIN_PODS", str(listing))
    monkeypatch.setenv("PATH", f"{STANDIN}:{os.environ['PATH']}")

    def write(items: list[dict]) -> None:  # type: ignore[type-arg]
        listing.write_text(json.dumps(items))

    return write


def stacks(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("stacks", "--k8s", *args, "--remote", REMOTE, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def test_the_stuck_pod_and_rank_are_named(pods, start_node: Callable[..., Node]) -> None:  # type: ignore[no-untyped-def]
    # GIVEN two pods of the selector (and one of another app), each four ranks; every rank waits in the
    # barrier of eight but sglang-1's rank 3
    a = start_node("sglang-0", ["barrier"] * 4, barrier_size=8)
    b = start_node("sglang-1", ["barrier", "barrier", "barrier", "slow"], barrier_size=8)
    app = {"app": "sglang"}
    pods(
        [
            {"name": "sglang-0", "labels": app, "containers": ["server"], "pid": a.pid},
            {"name": "sglang-1", "labels": app, "containers": ["server"], "pid": b.pid},
            {"name": "router-0", "labels": {"app": "router"}, "pid": a.pid},
        ]
    )
    # WHEN the stacks of the selector's pods are taken through kubectl exec into their server container
    code, data = stacks("-l", "app=sglang", "--container", "server", "--pid", "1")
    # THEN the culprit is sglang-1's TP3, and only the two pods were asked
    assert data["culprit_ranks"] == ["sglang-1:TP3"]
    assert {p["host"] for p in data["processes"]} == {"sglang-0", "sglang-1"}
    assert code == 4


def test_pods_that_refuse_are_named_with_why(pods, start_node: Callable[..., Node]) -> None:  # type: ignore[no-untyped-def]
    # GIVEN one pod whose ranks are idle, one whose exec RBAC forbids, one whose image lacks logphase, one that
    # hangs, all of the selector, in namespace serving
    a = start_node("ok", ["idle", "idle"])
    base = {"namespace": "serving", "labels": {"app": "sglang"}, "pid": a.pid}
    pods(
        [
            {**base, "name": "ok"},
            {**base, "name": "locked", "forbidden": True},
            {**base, "name": "bare", "bare": True},
            {**base, "name": "stuck", "hang": True},
        ]
    )
    # WHEN their stacks are asked for with a per-node timeout of 4 s
    code, data = stacks("-l", "app=sglang", "-n", "serving", "--match", "sglang::", "--node-timeout", "4")
    # THEN each that gave none says why, and the answer (and exit code) is the idle pod's
    silent = {p["host"]: p["error"] for p in data["processes"] if p["role"] == "node"}
    assert silent == {
        "locked": 'no answer: auth: Error from server (Forbidden): pods "locked" is forbidden: User "dev" cannot '
        'create resource "pods/exec" in API group "" in the namespace "serving"',
        "bare": "no answer: no logphase: the command is not installed on the node (see --remote)",
        "stuck": "no answer: timeout: no answer within 4s",
    }
    assert sorted(p["rank"] for p in data["processes"] if p["rank"]) == ["TP0", "TP1"]
    assert code == 0


def test_a_selector_without_pods_is_said(pods) -> None:  # type: ignore[no-untyped-def]
    # GIVEN no pod of the selector WHEN the stacks are asked for THEN kubectl's empty list is said: exit 3
    pods([])
    result = run_cli("stacks", "--k8s", "-l", "app=none", "--remote", REMOTE)
    assert result.exit_code == 3
    assert "no running pod matches pods -l app=none" in result.stderr


def kubelet_form(text: str) -> str:
    """A log as the API server returns it with timestamps: the runtime's RFC 3339 stamp before each line (here the
    line's own second, as the runtime stamps a line when it is written)."""
    out = []
    for line in text.splitlines(keepends=True):
        second = line[1:20].replace(" ", "T") if line[1:5].isdigit() else "2025-12-18T03:10:03"
        out.append(f"{second}.000000000Z {line}")
    return "".join(out)


def test_the_stuck_pod_and_rank_are_named_from_the_logs(pods, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # GIVEN two SGLang pods of the selector that state no node rank (each one node of its own): every rank reached
    # weight_load but sglang-1's TP1, whose log stops in dist_init; and a pod whose logs RBAC forbids
    from .test_logs_ssh import node_log

    logs = {"sglang-0": node_log({0: True, 1: True}, None), "sglang-1": node_log({0: True, 1: False}, None)}
    for name, text in logs.items():
        (tmp_path / f"{name}.log").write_text(kubelet_form(text))
    base = {"labels": {"app": "sglang"}, "containers": ["server"], "pid": os.getpid()}
    pods(
        [
            {**base, "name": "sglang-0", "log": str(tmp_path / "sglang-0.log")},
            {**base, "name": "sglang-1", "log": str(tmp_path / "sglang-1.log")},
            {**base, "name": "locked", "log_forbidden": True, "forbidden": True},
        ]
    )
    # WHEN the selector's logs are judged (kubectl logs --timestamps --prefix of each pod)
    result = run_cli("analyze", "--k8s", "-l", "app=sglang", "--post-mortem", "--format", "json")
    data = json.loads(result.stdout)
    # THEN the ranks are named by their pod, the culprit is sglang-1's TP1
    assert sorted(data["ranks"]) == ["sglang-0:TP0", "sglang-0:TP1", "sglang-1:TP0", "sglang-1:TP1"]
    assert data["culprit_ranks"] == ["sglang-1:TP1"]
    # and the pod whose logs are forbidden is named with kubectl's words; its clock could not be read either
    nodes = {n["node"]: n for n in data["nodes"]["nodes"]}
    assert nodes["locked"]["error"] == (
        'auth: Error from server (Forbidden): pods "locked" is forbidden: User "dev" cannot get resource "pods/log" '
        'in API group "" in the namespace "default"'
    )
    assert nodes["locked"]["notes"][0].startswith("clock not measured (kubectl exec date: auth: Error from server")
    # and the others' clocks were measured through kubectl exec (the same machine: within what it can tell)
    for name in logs:
        assert abs(nodes[name]["clock_offset_s"]) <= nodes[name]["clock_uncertainty_s"] + 0.05
    assert [log["path"] for log in nodes["sglang-1"]["logs"]] == ["kubectl logs sglang-1"]
    assert result.exit_code == 4
