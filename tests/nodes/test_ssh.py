"""`logphase stacks --hosts`: real sshd (Debian's openssh-server) on loopback addresses, one per fake node, a
throw-away key; the merged answer names the stuck node and rank, and each node that gave none with why."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.stacks.conftest import free_port

from .conftest import REMOTE, Node, namespaces_work, skip_unless, wait_for_port

pytestmark = [pytest.mark.live, pytest.mark.slow]

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def sshd_missing() -> str | None:
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "sshd/ssh not installed (Debian: apt-get install openssh-server; .ci/run installs it)"
    return namespaces_work()


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


@pytest.fixture
def cluster(
    tmp_path: Path, start_node: Callable[..., Node], spawned: Callable[[list[str]], subprocess.Popen[bytes]]
) -> Iterator[Callable[..., Path]]:
    """cluster({"a": ranks, "b": ranks}) → an ssh config naming each node `a`, `b`… (an sshd in each node's
    namespace on 127.0.0.2, .3, …); besides `refused` (nothing listens), `stranger` (node a's sshd, a key it
    does not know) and `silent` (a listener that never says a word)."""
    skip_unless(sshd_missing())
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder
    key, stranger, host_key = keygen(tmp_path / "id"), keygen(tmp_path / "stranger"), keygen(tmp_path / "host")
    (tmp_path / "authorized_keys").write_text((tmp_path / "id.pub").read_text())
    quiet = silent_listener()

    def make(nodes: dict[str, list[str]], *, barrier_size: int | None = None) -> Path:
        entries = []
        for index, (name, ranks) in enumerate(nodes.items(), 2):
            node = start_node(name, ranks, barrier_size=barrier_size)
            address, port = f"127.0.0.{index}", free_port()
            config = tmp_path / f"sshd-{name}.conf"
            config.write_text(
                f"ListenAddress {address}:{port}\nHostKey {host_key}\nAuthorizedKeysFile {tmp_path}/authorized_keys\n"
                f"PidFile {tmp_path}/sshd-{name}.pid\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            )
            sshd = spawned(["nsenter", "-t", str(node.pid), "-p", "-m", SSHD, "-D", "-e", "-f", str(config)])
            wait_for_port(address, port, sshd)
            entries.append((name, address, port, key))
            if index == 2:
                entries.append(("stranger", address, port, stranger))
        entries.append(("refused", "127.0.0.250", free_port(), key))
        entries.append(("silent", "127.0.0.1", quiet.getsockname()[1], key))
        client = tmp_path / "ssh_config"
        client.write_text(
            "".join(
                f"Host {name}\n  HostName {address}\n  Port {port}\n  User root\n  IdentityFile {identity}\n"
                "  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  LogLevel ERROR\n"
                for name, address, port, identity in entries
            )
        )
        return client

    yield make
    quiet.close()


def silent_listener() -> socket.socket:
    """A port that accepts connections and never answers: a node that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener


def stacks(config: Path, hosts: str, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli(
        "stacks",
        "--hosts",
        hosts,
        "--ssh-config",
        str(config),
        "--remote",
        REMOTE,
        "--match",
        "sglang::",
        "--format",
        "json",
        *extra,
    )
    return result.exit_code, json.loads(result.stdout)


def test_the_stuck_node_and_rank_are_named(cluster) -> None:  # type: ignore[no-untyped-def]
    # GIVEN two nodes of four ranks each; every rank waits in the barrier of eight but b's local rank 2, which
    # still loads its weights
    config = cluster({"a": ["barrier"] * 4, "b": ["barrier", "barrier", "slow", "barrier"]}, barrier_size=8)
    # WHEN the stacks of both are taken through ssh
    code, data = stacks(config, "a,b", "--node-timeout", "60")
    # THEN the culprit is node b's rank TP2, named with its node, and the rest wait in the barrier
    assert data["culprit_ranks"] == ["b:TP2"]
    assert data["summary"] == (
        "a:TP[0-3], b:TP[0-1,3] wait in barrier (distributed/parallel_state.py) inside load_model "
        "(model_runner.py); b:TP2 is still in load_weights (model_runner.py) (weight_load) "
        "(waiting: idle when sampled) — b:TP2 is behind"
    )
    ranks = sorted((p["host"], p["rank"]) for p in data["processes"] if p["rank"])
    assert ranks == [(n, f"TP{r}") for n in "ab" for r in range(4)]
    assert code == 4


def test_nodes_that_refuse_or_hang_are_named_with_why(cluster) -> None:  # type: ignore[no-untyped-def]
    # GIVEN one node whose ranks are idle, and hosts that refuse the connection, refuse the key, and never answer
    config = cluster({"a": ["idle", "idle"]})
    # WHEN the stacks of all four are taken with a per-node timeout of 4 s
    code, data = stacks(config, "a,refused,stranger,silent", "--node-timeout", "4")
    # THEN node a's ranks are read; each other node is one unread entry that says why, in the headline too
    assert sorted(p["rank"] for p in data["processes"] if p["host"] == "a" and p["rank"]) == ["TP0", "TP1"]
    silent = {p["host"]: p["error"] for p in data["processes"] if p["role"] == "node"}
    assert sorted(silent) == ["refused", "silent", "stranger"]
    assert silent["refused"].startswith("no answer: unreachable: ssh: connect to host 127.0.0.250 port ")
    assert silent["refused"].endswith(": Connection refused")
    assert silent["stranger"].startswith("no answer: auth: ") and "Permission denied (publickey" in silent["stranger"]
    assert silent["silent"] == "no answer: timeout: no answer within 4s"
    assert data["summary"] == (
        "all ranks idle in the event loop: the server is up; look at the health check, not the server"
        " — 3 nodes did not answer: refused, silent, stranger (see `not read`)"
    )
    # and the exit code is the answering node's: idle ranks, 0
    assert code == 0


def test_no_node_answers_is_exit_3(cluster) -> None:  # type: ignore[no-untyped-def]
    # GIVEN only hosts that refuse WHEN their stacks are asked for THEN nothing could be read: exit 3
    config = cluster({})
    code, data = stacks(config, "refused", "--node-timeout", "4")
    assert [p["error"].split(":")[:2] for p in data["processes"]] == [["no answer", " unreachable"]]
    assert code == 3
