"""`logphase analyze --hosts … --log-path PATH`: real sshd (Debian's openssh-server) on loopback addresses, one per
node, each in a mount namespace where PATH holds that node's own log (as on separate machines); the merged judgement
names the stuck node and rank, each node that gave none with why, and the clock offset measured on each."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.stacks.conftest import free_port

from .conftest import skip_unless, wait_for_port
from .test_ssh import SSHD, keygen, silent_listener, sshd_missing

pytestmark = [pytest.mark.live, pytest.mark.slow]

# SGLang's own lines (fixtures/logs/sglang/two-node-tp16-node*.log, SGLang 0.5.6 with --tp 16 --nnodes 2): the
# ServerArgs line each node prints at launch, then each rank's `[time TPn]` lines.
ARGS = (
    "[2025-12-18 03:10:03] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=4, pp_size=1, "
    "dist_init_addr='10.12.0.31:20000', nnodes=2, node_rank={node_rank}, attention_backend=None)\n"
)
DIST_BEGIN = "[2025-12-18 03:10:1{s} TP{r}] Init torch distributed begin.\n"
DIST_END = "[2025-12-18 03:10:16 TP{r}] Init torch distributed ends. mem usage=1.46 GB\n"
LOAD_BEGIN = "[2025-12-18 03:10:16 TP{r}] Load weight begin. avail mem=77.53 GB\n"
LOADING = "[2025-12-18 03:12:17 TP{r}] Using model weights format ['*.safetensors']\n"


def rank_lines(rank: int, *, loaded: bool) -> str:
    lines = DIST_BEGIN.format(s=1, r=rank)
    if loaded:
        lines += DIST_END.format(r=rank) + LOAD_BEGIN.format(r=rank) + LOADING.format(r=rank)
    return lines


def node_log(ranks: dict[int, bool], node_rank: int | None) -> str:
    """A node's log, its ranks' lines in the order of their stamps (as they were written)."""
    head = ARGS.format(node_rank=node_rank) if node_rank is not None else ""
    lines = [line for rank, loaded in ranks.items() for line in rank_lines(rank, loaded=loaded).splitlines(True)]
    return head + "".join(sorted(lines, key=lambda line: line[:21]))


# A node's clock set ahead: its `date` (the only clock the collection reads there) bind-mounted over by this one,
# which answers `date +%s.%N` and `date -r FILE +%s` that many seconds later than this machine's clock.
FAKE_DATE = """#!{python}
import os, sys, time
ahead = {ahead}
if sys.argv[1:2] == ["-r"]:
    print(int(os.stat(sys.argv[2]).st_mtime + ahead))
else:
    print(f"{{time.time() + ahead:.9f}}")
"""


@pytest.fixture
def hosts(
    tmp_path: Path, spawned: Callable[[list[str]], subprocess.Popen[bytes]]
) -> Iterator[Callable[..., tuple[Path, Path]]]:
    """hosts({"a": {"server.log": text}, …}, ahead={"b": 120.0}) → (ssh config, the log folder's path on every host):
    node a's sshd in a mount namespace where that folder holds a's files only (and where `date` runs `ahead` s
    ahead). Besides the nodes, `refused` (nothing listens) and `silent` (a listener that never says a word)."""
    skip_unless(sshd_missing())
    Path("/run/sshd").mkdir(exist_ok=True)
    key, host_key = keygen(tmp_path / "id"), keygen(tmp_path / "host")
    (tmp_path / "authorized_keys").write_text((tmp_path / "id.pub").read_text())
    common = tmp_path / "var-log"
    common.mkdir()
    quiet = silent_listener()

    def make(nodes: dict[str, dict[str, str]], ahead: dict[str, float] | None = None) -> tuple[Path, Path]:
        entries = []
        for index, (name, files) in enumerate(nodes.items(), 2):
            own = tmp_path / f"logs-{name}"
            own.mkdir()
            for file, text in files.items():
                (own / file).write_text(text)
            address, port = f"127.0.0.{index}", free_port()
            config = tmp_path / f"sshd-{name}.conf"
            config.write_text(
                f"ListenAddress {address}:{port}\nHostKey {host_key}\nAuthorizedKeysFile {tmp_path}/authorized_keys\n"
                f"PidFile {tmp_path}/sshd-{name}.pid\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            )
            inner = f"mount --bind {own} {common} && "
            if ahead and name in ahead:
                fake = tmp_path / f"date-{name}"
                fake.write_text(FAKE_DATE.format(python=sys.executable, ahead=ahead[name]))
                fake.chmod(0o755)
                inner += f"mount --bind {fake} $(readlink -f $(command -v date)) && "
            inner += f"exec {SSHD} -D -e -f {config}"
            sshd = spawned(["unshare", "--mount", "--propagation", "private", "sh", "-c", inner])
            wait_for_port(address, port, sshd)
            entries.append((name, address, port))
        entries.append(("refused", "127.0.0.250", free_port()))
        entries.append(("silent", "127.0.0.1", quiet.getsockname()[1]))
        client = tmp_path / "ssh_config"
        client.write_text(
            "".join(
                f"Host {name}\n  HostName {address}\n  Port {port}\n  User root\n  IdentityFile {key}\n"
                "  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  LogLevel ERROR\n"
                for name, address, port in entries
            )
        )
        return client, common

    yield make
    quiet.close()


def analyze(config: Path, hosts: str, path: str, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli(
        "analyze", "--hosts", hosts, "--ssh-config", str(config), "--log-path", path, "--format", "json", *extra
    )
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_the_stuck_node_and_rank_are_named_from_the_logs(hosts) -> None:  # type: ignore[no-untyped-def]
    # GIVEN SGLang across two nodes (--tp 4 --nnodes 2), each stating its node rank; every rank reached weight_load
    # but node b's TP3, whose log stops in dist_init; and two more logs at another path that state no node rank
    config, folder = hosts(
        {
            "a": {
                "server.log": node_log({0: True, 1: True}, node_rank=0),
                "plain.log": node_log({0: True, 1: True}, node_rank=None),
            },
            "b": {
                "server.log": node_log({2: True, 3: False}, node_rank=1),
                "plain.log": node_log({0: True, 1: False}, node_rank=None),
            },
        }
    )
    # WHEN both nodes' server.log are judged as one run
    code, data = analyze(config, "a,b", f"{folder}/server.log", "--post-mortem")
    # THEN the ranks are the servers' own (global) names, TP3 is the culprit, and the report says it is on node b
    assert data["ranks"] == ["TP0", "TP1", "TP2", "TP3"]
    assert data["verdict"] == "stalled"
    assert data["culprit_ranks"] == ["TP3"]
    assert data["nodes"]["global_ranks"] is True
    assert [(n["node"], [log["path"] for log in n["logs"]]) for n in data["nodes"]["nodes"]] == [
        ("a", [f"{folder}/server.log"]),
        ("b", [f"{folder}/server.log"]),
    ]
    assert code == 4
    # WHEN the logs that state no node rank are judged (a glob)
    code, data = analyze(config, "a,b", f"{folder}/plain*", "--post-mortem")
    # THEN each rank is named by its node, and node b's rank TP1 is the culprit
    assert sorted(data["ranks"]) == ["a:TP0", "a:TP1", "b:TP0", "b:TP1"]
    assert data["culprit_ranks"] == ["b:TP1"]
    assert data["nodes"]["naming"] == "ranks named node:rank (no node rank stated in the logs of a, b)"
    assert code == 4


def test_nodes_without_a_log_are_named_with_why(hosts) -> None:  # type: ignore[no-untyped-def]
    # GIVEN one node with a log, one without the file, a host that refuses and one that never answers
    config, folder = hosts({"a": {"server.log": node_log({0: True, 1: True}, node_rank=None)}, "b": {}})
    # WHEN their logs are collected with a per-node timeout of 4 s
    code, data = analyze(config, "a,b,refused,silent", f"{folder}/server.log", "--post-mortem", "--node-timeout", "4")
    # THEN a's log is judged (one node: its ranks as the server names them) and each other node says why it gave none
    assert data["ranks"] == ["TP0", "TP1"]
    errors = {n["node"]: n["error"] for n in data["nodes"]["nodes"]}
    assert errors["a"] is None
    assert errors["b"] == f"no log: no file matches {folder}/server.log"
    assert errors["refused"].startswith("unreachable: ssh: connect to host 127.0.0.250 port ")
    assert errors["silent"] == "timeout: no answer within 4s"
    # and each node's clock was measured (the same machine: within what the measure can tell)
    clock = next(n for n in data["nodes"]["nodes"] if n["node"] == "a")
    assert abs(clock["clock_offset_s"]) <= clock["clock_uncertainty_s"] + 0.05
    # and the exit code is the judgement's: a start-up that stopped in weight_load, stalled
    assert code == 4


def test_no_node_gives_a_log_is_exit_3(hosts) -> None:  # type: ignore[no-untyped-def]
    # GIVEN only hosts that refuse WHEN their logs are asked for THEN nothing could be read: exit 3, each node's why
    config, _ = hosts({})
    result = run_cli("analyze", "--hosts", "refused", "--ssh-config", str(config), "--log-path", "/var/log/x.log")
    assert result.exit_code == 3
    assert "refused: unreachable: ssh: connect to host 127.0.0.250" in result.stderr
    assert "logphase: error: no node gave a log" in result.stderr


def shifted(text: str, seconds: int) -> str:
    """A log as a node whose clock is `seconds` ahead writes it: each `[YYYY-MM-DD HH:MM:SS` stamp moved."""
    from datetime import datetime, timedelta

    def move(found: re.Match[str]) -> str:
        moved = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S") + timedelta(seconds=seconds)
        return f"[{moved:%Y-%m-%d %H:%M:%S}"

    return re.sub(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", move, text)


def test_a_node_clock_ahead_is_measured_and_its_times_moved(hosts) -> None:  # type: ignore[no-untyped-def]
    # GIVEN node b's clock 120 s ahead of this machine's (and of node a's), its log stamped by it: its TP3 began
    # dist_init at 03:12:11 on its own clock, when a's ranks began theirs at 03:10:11 on theirs
    config, folder = hosts(
        {
            "a": {"server.log": node_log({0: True, 1: True}, node_rank=0)},
            "b": {"server.log": shifted(node_log({2: True, 3: False}, node_rank=1), 120)},
        },
        ahead={"b": 120.0},
    )
    # WHEN both nodes' logs are judged
    code, data = analyze(config, "a,b", f"{folder}/server.log", "--post-mortem")
    # THEN b's clock offset is measured (120 s, within the measure's uncertainty), a's is none
    nodes = {n["node"]: n for n in data["nodes"]["nodes"]}
    assert abs(nodes["b"]["clock_offset_s"] - 120.0) <= nodes["b"]["clock_uncertainty_s"] + 0.05
    assert abs(nodes["a"]["clock_offset_s"]) <= nodes["a"]["clock_uncertainty_s"] + 0.05
    # and b's times are read on this machine's clock: TP3's last progress (dist_init begun, 03:12:11 on b's clock)
    # and TP2's (weight_load begun, 03:12:16 there) both 120 s earlier, beside a's
    states = {row["rank"]: row for row in data["rank_states"]}
    assert states["TP3"]["last_progress"].startswith("2025-12-18 03:10:1")
    assert states["TP2"]["last_progress"].startswith("2025-12-18 03:10:1")
    assert states["TP0"]["last_progress"] == "2025-12-18 03:10:16"
    assert data["culprit_ranks"] == ["TP3"]
    assert code == 4
    # and the report says so in words, with the culprit's node
    table = run_cli("analyze", "--hosts", "a,b", "--ssh-config", str(config), "--log-path", f"{folder}/server.log")
    assert re.search(
        r"b: its clock is 12\d\.\d{3} s ahead of this machine's \(±\d\.\d{3} s, measured when its logs were read\): "
        r"its times are moved onto this machine's",
        " ".join(table.stdout.split()),
    )
    assert "Nodes: TP3 is on node b" in table.stdout
