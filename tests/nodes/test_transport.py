"""The transports without their engines (pure parts): hosts, the commands each engine runs, srun's labelled
output split per node, each engine's failure in words, a node's answer read back, and the merge by node."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from logphase.errors import UsageError
from logphase.judging.stalls import summarize
from logphase.nodes.k8s import KubernetesTransport, running_pods
from logphase.nodes.k8s import explain as explain_kubectl
from logphase.nodes.ray_cluster import RayNode, alive_nodes, node_run, node_task, ray_failure
from logphase.nodes.slurm import SlurmTransport, split_step
from logphase.nodes.ssh import SshTransport, hosts_from
from logphase.nodes.ssh import explain as explain_ssh
from logphase.nodes.stacks import remote_stacks_command, snapshots_of
from logphase.nodes.transport import NodeRun
from tests.conftest import run_cli
from tests.stacks.test_merge import CAPTURE, LOADING


def answer(host: str, ranks: dict[str, tuple[str, ...]]) -> bytes:
    """A node's `logphase stacks --format json`, the contract keys and each process' main thread."""
    processes = [
        {
            "pid": 10 + index,
            "rank": rank,
            "role": "scheduler",
            "host": host,
            "threads": [{"id": "1", "name": "MainThread", "main": True, "frames": list(frames)}],
        }
        for index, (rank, frames) in enumerate(ranks.items())
    ]
    return json.dumps({"schema": "logphase.stacks/1", "samples": 1, "processes": processes}, indent=1).encode()


def test_hosts_come_from_the_list_and_the_hostfile_in_order_once(tmp_path: Path) -> None:
    # GIVEN a list and an MPI-style hostfile with comments, slots and a repeat
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the job's nodes\nnode2 slots=8\n\nnode3  # spare\nnode1\n")
    # WHEN read THEN each host once, the list's first
    assert hosts_from("node1,node2", str(hostfile)) == ["node1", "node2", "node3"]


@pytest.mark.parametrize(("hosts", "message"), [("", "no host given"), ("-oProxyCommand=x", "is not a host name")])
def test_bad_hosts_are_usage_errors(hosts: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        hosts_from(hosts, None)


def test_ssh_runs_the_command_quoted_for_the_remote_shell() -> None:
    # GIVEN a regex with a shell metacharacter WHEN the ssh command is built THEN it is one quoted word there
    command = remote_stacks_command(["logphase"], match="sglang::|VLLM::", timeout_s=5)
    argv = SshTransport(hosts=("n1",), config="/etc/cfg").argv("n1", command)
    assert argv == [
        "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-F", "/etc/cfg", "n1", "--",
        "logphase stacks --format json --timeout 5 --all --match 'sglang::|VLLM::'",
    ]  # fmt: skip


def test_slurm_and_kubectl_commands() -> None:
    command = remote_stacks_command(["logphase"], pids=(1,), samples=3, interval_s=2)
    assert SlurmTransport(job="42").argv(["a", "b"], command) == [
        "srun", "--overlap", "--jobid=42", "--nodes=2", "--ntasks-per-node=1", "--label", "--input=none", "--",
        "logphase", "stacks", "--format", "json", "--timeout", "10", "--pid=1", "--samples", "3", "--interval", "2",
    ]  # fmt: skip
    k8s = KubernetesTransport(selector="app=sglang", namespace="serving", container="server")
    assert k8s.argv("sglang-0", ["logphase", "stacks"]) == [
        "kubectl", "exec", "sglang-0", "-n", "serving", "-c", "server", "--", "logphase", "stacks",
    ]  # fmt: skip


def test_an_srun_step_is_split_per_node_by_its_labels() -> None:
    # GIVEN one step over three nodes: tasks 0 and 1 answered (their lines interleaved, task 1 exited 4 as a
    # stuck answer does), task 2 printed only logphase's error and exited 3
    one, two = answer("n1", {"TP0": CAPTURE}).decode(), answer("n2", {"TP1": LOADING}).decode()
    ones, twos = one.splitlines(), two.splitlines()
    interleaved = [line for pair in zip(ones, twos, strict=False) for line in (f" 0: {pair[0]}", f" 1: {pair[1]}")]
    rest = [f" 0: {line}" for line in ones[len(twos) :]] + [f" 1: {line}" for line in twos[len(ones) :]]
    stdout = "\n".join([*interleaved, *rest, ""]).encode()
    stderr = (
        " 2: logphase: error: py-spy is not installed (not on PATH)\n"
        "srun: error: n2: task 1: Exited with exit code 4\n"
        "srun: error: n3: task 2: Exited with exit code 3\n"
    )
    step = NodeRun(node="job 42", stdout=stdout, stderr=stderr, returncode=4, started=1.0, ended=2.0)
    # WHEN split THEN each node has its own output, exit status and failure
    runs = split_step(step, ["n1", "n2", "n3"])
    assert [(r.node, r.returncode, r.failure) for r in runs] == [
        ("n1", None, None),
        ("n2", 4, None),
        ("n3", 3, "no py-spy: py-spy is not installed (not on PATH)"),
    ]
    assert [json.loads(r.stdout) for r in runs[:2]] == [json.loads(one), json.loads(two)]


def test_a_step_cut_at_the_timeout_names_the_nodes_that_did_not_finish() -> None:
    step = NodeRun(node="job 42", stdout=b"0: {}\n", failure="timeout: no answer within 30s")
    assert [r.failure for r in split_step(step, ["n1", "n2"])] == [None, "timeout: no answer within 30s"]


@pytest.mark.parametrize(
    ("code", "stderr", "failure"),
    [
        (255, "root@n1: Permission denied (publickey,password).\n",
         "auth: root@n1: Permission denied (publickey,password)."),
        (255, "ssh: Could not resolve hostname n9: Name or service not known\n",
         "unreachable: ssh: Could not resolve hostname n9: Name or service not known"),
        (127, "bash: line 1: logphase: command not found\n",
         "no logphase: the command is not installed on the node (see --remote)"),
        (2, "logphase: error: no Python process of this user matches 'sglang::'\n  hint: check with `ps`\n",
         "no Python process of this user matches 'sglang::'"),
        (3, "logphase: error: permission denied reading 4 processes with py-spy\n",
         "ptrace denied: permission denied reading 4 processes with py-spy"),
    ],
)  # fmt: skip
def test_ssh_failures_in_words(code: int, stderr: str, failure: str) -> None:
    assert explain_ssh(NodeRun(node="n1", stderr=stderr, returncode=code)).failure == failure


def test_kubectl_failures_in_words() -> None:
    run = NodeRun(node="p", stderr='Error from server (NotFound): pods "p" not found\n', returncode=1)
    assert explain_kubectl(run).failure == 'no such pod: Error from server (NotFound): pods "p" not found'


def test_only_running_pods_are_asked() -> None:
    listed = {
        "items": [{"metadata": {"name": n}, "status": {"phase": s}} for n, s in [("a", "Running"), ("b", "Pending")]]
    }
    assert running_pods(listed) == ["a"]


def test_answers_become_snapshots_of_their_node_and_silence_an_entry_that_says_why(signatures) -> None:  # type: ignore[no-untyped-def]
    # GIVEN two nodes whose own hostname is the same (loopback), one behind, and a node that answered garbage
    runs = [
        NodeRun(node="a", stdout=answer("box", {"TP0": CAPTURE, "TP1": CAPTURE}), returncode=4, ended=1.0),
        NodeRun(node="b", stdout=answer("box", {"TP0": CAPTURE, "TP1": LOADING}), returncode=4, ended=1.0),
        NodeRun(node="c", stdout=b"Welcome to node c!\n", returncode=0, ended=1.0),
    ]
    # WHEN read and merged by node
    snapshots = snapshots_of(runs, "ssh")
    report = summarize(snapshots, signatures, by_node=True)
    # THEN the ranks are node:rank, the one behind is named, and c is one entry that says why
    assert [s.host for s in snapshots] == ["a", "a", "b", "b", "c"]
    assert report.culprit_ranks == ("b:TP1",)
    assert report.groups[0].labels == ("a:TP0", "a:TP1", "b:TP0")
    assert snapshots[-1].error == (
        "no answer: an answer without logphase stacks JSON ('Welcome to node c!'); is the node's logphase current?"
    )
    assert report.summary.endswith("— b:TP1 is behind — 1 node did not answer: c (see `not read`)")


def test_all_waiting_and_a_node_silent_points_at_the_node(signatures) -> None:  # type: ignore[no-untyped-def]
    runs = [
        NodeRun(node="a", stdout=answer("a", {"TP0": CAPTURE, "TP1": CAPTURE}), returncode=4, ended=1.0),
        NodeRun(node="b", failure="timeout: no answer within 30s"),
    ]
    report = summarize(snapshots_of(runs, "ssh"), signatures, by_node=True)
    assert report.stuck and report.culprit_ranks == ()
    assert report.summary.endswith("— 1 node did not answer: b, look there first")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--hosts", "a", "--slurm", "1"), "--hosts and --slurm name two ways to the nodes"),
        (("--pid", "1", "-l", "app=x"), "-l, -n and --container go with --k8s"),
        (("--k8s",), "--k8s needs the pods' label selector"),
        (("--hosts", "a", "--from", "x.json"), "--from reads files here; it does not go with many nodes"),
        (("--slurm", "abc"), "'abc' is not a Slurm job id"),
        (("--ray", "--k8s", "-l", "app=x"), "--ray and --k8s name two ways to the nodes"),
        (("--pid", "1", "--ssh-config", "c"), "--ssh-config goes with --hosts or --hostfile"),
    ],
)
def test_many_node_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = run_cli("stacks", *args)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"logphase: error: {message}"


def test_ray_nodes_are_the_alive_ones_named_as_ray_names_them_in_address_order() -> None:
    # GIVEN ray.nodes(): a dead node, two alive by IP (.10 after .2), two alive of one name (one host, two raylets)
    def entry(node_id: str, name: str, alive: bool = True) -> dict[str, object]:
        return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": name, "NodeName": name}

    table = [
        entry("d" * 56, "10.0.0.1", alive=False),
        entry("a" * 56, "10.0.0.10"),
        entry("b" * 56, "10.0.0.2"),
        entry("c1" * 28, "gpu-box"),
        entry("c2" * 28, "gpu-box"),
    ]
    # WHEN the nodes to ask are picked THEN the alive ones, IPs in numeric order, a repeated name with its id
    assert alive_nodes(table) == [
        RayNode("10.0.0.2", "b" * 56),
        RayNode("10.0.0.10", "a" * 56),
        RayNode("gpu-box/c1c1c1c1", "c1" * 28),
        RayNode("gpu-box/c2c2c2c2", "c2" * 28),
    ]


@pytest.mark.parametrize(
    ("answer", "failure"),
    [
        ({"errno": 2, "error": "cannot run /opt/lp: No such file or directory"},
         "no logphase: the command is not installed on the node (see --remote)"),
        ({"errno": 13, "error": "cannot run /opt/lp: Permission denied"}, "cannot run /opt/lp: Permission denied"),
        ({"timeout": True, "stderr": ""}, "timeout: no answer within 4s"),
        ({"returncode": 2, "stdout": b"", "stderr": "logphase: error: no Python process of this user matches 'x'\n"},
         "no Python process of this user matches 'x'"),
        ({"returncode": 4, "stdout": b'{"schema": "logphase.stacks/1"}', "stderr": ""}, None),
    ],
)  # fmt: skip
def test_ray_task_answers_in_words(answer: dict[str, object], failure: str | None) -> None:
    assert node_run("n1", answer, None, started=0.0, ended=1.0, timeout_s=4).failure == failure


def test_rays_own_failures_in_words() -> None:
    class NodeDiedError(Exception):  # named as Ray names it
        pass

    said = NodeDiedError("Task failed because its node 10.0.0.3 died.\nmore lines")
    assert ray_failure(said) == "node died: Task failed because its node 10.0.0.3 died."
    assert ray_failure(RuntimeError("")) == "ray: RuntimeError"
    run = node_run("n1", {}, ray_failure(said), started=0.0, ended=1.0, timeout_s=4)
    assert run.failure == "node died: Task failed because its node 10.0.0.3 died."


def test_the_node_task_returns_the_output_or_kills_the_command_at_its_timeout(tmp_path: Path) -> None:
    run_on_node = node_task()
    # GIVEN a command that answers WHEN run THEN its status and output
    assert run_on_node(["sh", "-c", "echo out; echo err >&2; exit 4"], 5.0, 100) == {
        "returncode": 4,
        "stdout": b"out\n",
        "stderr": "err\n",
    }
    # GIVEN a command whose child hangs WHEN run under 0.5 s THEN a timeout, and the child is gone with it
    pid_file = tmp_path / "pid"
    assert run_on_node(["sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait"], 0.5, 100) == {
        "timeout": True,
        "stderr": "",
    }
    stat = Path(f"/proc/{pid_file.read_text().strip()}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    # GIVEN a command that is not there WHEN run THEN why, with its errno
    assert run_on_node(["/nonexistent/logphase"], 5.0, 100) == {
        "errno": 2,
        "error": "cannot run /nonexistent/logphase: No such file or directory",
    }


def test_ray_not_installed_is_said_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a Python where `import ray` fails WHEN --ray is asked for THEN a clear error and a hint: exit 3
    monkeypatch.setitem(sys.modules, "ray", None)
    result = run_cli("stacks", "--ray", "--match", "sglang::")
    assert result.exit_code == 3
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith(f"logphase: error: --ray needs Ray's Python package next to logphase ({sys.executable}): ")
    assert hint == (
        "  hint: pip install ray (the cluster's version) into logphase's Python, or install logphase into Ray's"
    )


def test_a_ray_node_session_folder_is_read_from_its_object_store_socket() -> None:
    # GIVEN ray.nodes() entries: one with its plasma store's socket in its session, one without
    entries = [
        {
            "NodeID": "a" * 56,
            "Alive": True,
            "NodeName": "10.0.0.2",
            "ObjectStoreSocketName": "/tmp/ray/session_2026-01-01_00-00-00_000000_1/sockets/plasma_store",
        },
        {"NodeID": "b" * 56, "Alive": True, "NodeName": "10.0.0.3"},
    ]
    # WHEN the nodes are picked THEN each has its session folder (Ray's default link where none is said), and the
    # logs' command names each node's own
    first, second = alive_nodes(entries)
    assert first.session == "/tmp/ray/session_2026-01-01_00-00-00_000000_1"
    assert second.session == "/tmp/ray/session_latest"
    assert first.argv(["sh", "-c", "x", "*:{ray-session}/logs/worker-*.out"]) == [
        "sh",
        "-c",
        "x",
        "*:/tmp/ray/session_2026-01-01_00-00-00_000000_1/logs/worker-*.out",
    ]
