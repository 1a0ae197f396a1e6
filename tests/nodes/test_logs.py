"""The pure parts of collecting logs from many nodes (logphase/nodes/logs.py): the script's frames read back, a
node's clock offset, Slurm's file name patterns, the node rank a log states and how ranks are named, shared files."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from logphase import pipeline
from logphase.nodes.logs import (
    ClockOffset,
    Collection,
    NodeFile,
    NodeLogs,
    clock_offset,
    expand,
    log_command,
    named,
    node_logs,
    rank_naming,
    read_answer,
    read_job,
    shared_files,
    sources_of,
    stated_node_rank,
)
from logphase.nodes.transport import NodeRun
from logphase.packs import load_packs
from logphase.report.formats.html import HtmlFormat
from logphase.report.formats.markdown import MarkdownFormat
from logphase.report.formats.table import TableFormat
from logphase.report.model import Report

N = "logphase-0123456789abcdef"


def test_the_frames_are_read_back() -> None:
    # GIVEN a script's output: the clock, a file whose last line has no newline, a file cut in its middle, one
    # that matched nothing and one not readable
    out = (
        f"{N} clock 1700000000.250000000\n"
        f"{N} file 11 1699999990 /var/log/a.log\nline 1\nend\n{N} end\n"
        f"{N} file 40 - /var/log/b.log\nhead line\nhalf a li\n{N} cut 17\nne cut\ntail line\n\n{N} end\n"
        f"{N} missing /var/log/none*\n"
        f"{N} unreadable /var/log/secret.log\n"
    ).encode()
    # WHEN they are read
    answer = read_answer(out, N)
    # THEN the clock, each file's bytes (the cut file's head and tail joined, the tail's cut first line dropped),
    # its size and mtime, and what else the node said
    assert answer.clock == 1700000000.25
    assert answer.files == (
        ("/var/log/a.log", 11, b"line 1\nend", 0, 1699999990.0),
        ("/var/log/b.log", 40, b"head line\nhalf a li\ntail line\n", 17 + len(b"ne cut\n"), None),
    )
    assert answer.notes == ("no file matches /var/log/none*", "/var/log/secret.log: not readable (permission denied)")


def test_a_marker_inside_a_line_is_no_frame() -> None:
    # GIVEN a log line that holds the nonce mid-line WHEN read THEN it is the file's text
    out = f"{N} clock 1.5\n{N} file 9 - /l\nsay {N} end\n{N} end\n".encode()
    assert read_answer(out, N).files == (("/l", 9, f"say {N} end".encode(), 0, None),)


def test_the_script_frames_real_files(tmp_path: Path) -> None:
    # GIVEN two files on this machine, one over the node's budget of 100 bytes WHEN the script runs on them
    (tmp_path / "a.log").write_text("one\ntwo\n")
    (tmp_path / "b.log").write_text("".join(f"line {n:03d}\n" for n in range(40)))  # 360 bytes
    argv = log_command(N, [("*", f"{tmp_path}/*.log"), ("other-node", f"{tmp_path}/a.log")], budget=100)
    out = subprocess.run(argv, capture_output=True, check=True).stdout
    answer = read_answer(out, N)
    # THEN a.log whole; b.log's first 18 bytes (1/5 of the 92 left: two whole lines) and its last 74 (their first
    # line, cut, dropped); the pattern scoped to another node not read
    assert [(path, size, cut) for path, size, _, cut, _ in answer.files] == [
        (f"{tmp_path}/a.log", 8, 0),
        (f"{tmp_path}/b.log", 360, 360 - 92 + 2),
    ]
    assert answer.files[1][2] == b"line 000\nline 001\n" + b"".join(f"line {n:03d}\n".encode() for n in range(32, 40))
    assert answer.clock is not None


def run_at(started_wall: float, first_output_after: float | None, ended_after: float, stdout: bytes = b"") -> NodeRun:
    return NodeRun(
        node="n",
        stdout=stdout,
        started=10.0,
        ended=10.0 + ended_after,
        wall_started=started_wall,
        first_output=None if first_output_after is None else 10.0 + first_output_after,
    )


def test_a_clock_offset_is_the_remote_reading_against_the_middle_of_the_two_reads_here() -> None:
    # GIVEN a run started here at 1000.0, its first output here at 1000.4, the node's clock read as 1062.2
    offset = clock_offset(run_at(1000.0, 0.4, 3.0), 1062.2)
    # THEN the node is 62.0 s ahead, give or take 0.2 s
    assert offset is not None
    assert offset.offset_s == pytest.approx(62.0)
    assert offset.uncertainty_s == pytest.approx(0.2)
    assert offset.beyond_doubt
    # AND without a first output, the run's end bounds it; without a reading, no offset
    late = clock_offset(run_at(1000.0, None, 3.0), 1001.4)
    assert late is not None
    assert late.offset_s == pytest.approx(-0.1)
    assert late.uncertainty_s == pytest.approx(1.5)
    assert not late.beyond_doubt
    assert clock_offset(run_at(1000.0, 0.4, 3.0), None) is None


@pytest.mark.parametrize(
    ("pattern", "node", "index", "expected"),
    [
        ("/home/u/slurm-%j.out", "gpu-1", 1, "/home/u/slurm-4242.out"),
        ("/logs/%x-%N-%n.log", "gpu-1", 1, "/logs/serve-gpu-1-1.log"),
        ("/logs/%u/%5j.%t.out", None, None, "/logs/alice/04242.*.out"),
        ("/logs/%A_%a.out", None, None, "/logs/4242_4294967294.out"),
        ("/logs/100%%-%s.out", None, None, "/logs/100%-*.out"),
    ],
)
def test_slurm_file_names_expand_as_slurm_does(
    pattern: str, node: str | None, index: int | None, expected: str
) -> None:
    # GIVEN job 4242 named serve of user alice (sbatch(1) "filename pattern") WHEN a pattern is expanded for a node
    job = read_job("4242", "JobId=4242 JobName=serve UserId=alice(1000) GroupId=alice(1000) NodeList=gpu-[0-1]")
    assert expand(pattern, job, node, index) == expected


def test_slurm_job_fields_are_read() -> None:
    text = (
        "JobId=7 JobName=sglang UserId=root(0) JobState=RUNNING NodeList=n1 BatchHost=n1 "
        "StdErr=/tmp/slurm-7.out StdIn=/dev/null StdOut=/tmp/slurm-7.out Power="
    )
    job = read_job("7", text)
    assert (job.get("StdOut"), job.get("StdErr"), job.get("BatchHost")) == ("/tmp/slurm-7.out",) * 2 + ("n1",)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        # SGLang's ServerArgs repr (fixtures/logs/sglang/two-node-tp16-node1.part.log)
        ("[2025-12-18 03:10:03] server_args=ServerArgs(model_path='m', tp_size=16, nnodes=2, node_rank=1, x=None)", 1),
        # SGLang ≥ 0.5.19 prints a dict
        ("[2026-01-10 08:00:00] server_args={'model_path': 'm', 'nnodes': 4, 'node_rank': 3, 'port': 30000}", 3),
        # torchrun's agent (torch elastic/agent/server/api.py `Rendezvous complete for workers. Result:`)
        (
            "[default] Rendezvous complete for workers. Result:\n"
            "  restart_count=0\n  master_addr=10.0.0.1\n  master_port=29500\n  group_rank=2\n  group_world_size=4\n"
            "  local_ranks=[0, 1]\n",
            2,
        ),
        ("[2025-12-18 03:10:09 TP14] MLA optimization is turned on. node_rank=5 elsewhere", None),
        ("Detected 1 new nodes from group_rank=0; will restart worker group", None),
    ],
)
def test_the_node_rank_a_log_states(head: str, expected: int | None) -> None:
    assert stated_node_rank(head) == expected


def test_a_pack_names_the_printed_key_that_states_the_node_rank(tmp_path: Path) -> None:
    # GIVEN a user pack whose server prints `launch args: {…}` with its node rank as `machine_rank`
    pack = tmp_path / "fleet.toml"
    pack.write_text(
        '[pack]\nname = "fleet"\nschema = 1\nsystems = ["fleet"]\n\n[[server_args]]\nid = "fleet.args"\n'
        'regex = \'\\blaunch args: \\{\'\nmodel_path = ["model"]\nnode_rank = ["machine_rank"]\n'
        "examples = [\"launch args: {'model': 'm'}\"]\n"
    )
    formats = load_packs([pack], builtin=False).server_args
    head = "I 10:00:00 banner\nI 10:00:01 launch args: {'model': 'm', 'num_machines': 4, 'machine_rank': 2}\n"
    # WHEN the node rank of the head is read with that pack's formats, and with the shipped ones
    # THEN the pack's key gives it; the shipped formats know no such line
    assert stated_node_rank(head, formats) == 2
    assert stated_node_rank(head) is None
    # AND a node rank past any rank count is no node rank
    assert stated_node_rank(head.replace("'machine_rank': 2", "'machine_rank': 99999999999"), formats) is None


def test_ranks_are_global_only_where_every_node_states_a_different_node_rank() -> None:
    assert rank_naming({"a": 0, "b": 1}) == (
        True,
        "ranks as the servers number them across nodes (node ranks stated in the logs: a=0, b=1)",
    )
    assert rank_naming({"a": 0, "b": None}) == (False, "ranks named node:rank (no node rank stated in the logs of b)")
    assert rank_naming({"a": 0, "b": 0}) == (False, "ranks named node:rank (two nodes state the same node rank)")
    assert rank_naming({"a": None}) == (True, "one node's logs: ranks as its server names them")


def test_a_file_two_nodes_read_alike_is_judged_once(tmp_path: Path) -> None:
    # GIVEN nodes a and b that read /shared/x.log with the same bytes (a shared file system), and their own logs
    def saved(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    a = NodeLogs(
        "a", "ssh", (NodeFile("/shared/x.log", saved("a-x", "same\n"), 5), NodeFile("/l", saved("a-l", "a"), 1))
    )
    b = NodeLogs(
        "b", "ssh", (NodeFile("/shared/x.log", saved("b-x", "same\n"), 5), NodeFile("/l", saved("b-l", "b"), 1))
    )
    # WHEN shared files are told THEN b's copy of x.log is a's; each node's own /l stays
    out = shared_files([a, b])
    assert [f.same_as for f in out[0].files] == [None, None]
    assert [f.same_as for f in out[1].files] == ["a", None]
    assert [f.remote for f in out[1].judged] == ["/l"]
    lines = Collection("ssh", tuple(out), naming="ranks named node:rank").lines()
    assert "b:/shared/x.log: the very file a gave (a shared file system), judged once" in lines


def test_a_node_that_gave_nothing_says_why(tmp_path: Path) -> None:
    # GIVEN a node whose patterns matched nothing, one that timed out, one that printed nothing
    missing = NodeRun(node="m", stdout=f"{N} clock 5.0\n{N} missing /var/log/x.log\n".encode(), returncode=0)
    timed = NodeRun(node="t", failure="timeout: no answer within 4s")
    quiet = NodeRun(node="q", stderr="sh: 1: date: not found\n", returncode=127)
    said = [node_logs(run, N, "ssh", tmp_path).failure for run in (missing, timed, quiet)]
    assert said == [
        "no log: no file matches /var/log/x.log",
        "timeout: no answer within 4s",
        "nothing printed (exit status 127: sh: 1: date: not found)",
    ]


def collected(tmp_path: Path, logs: dict[str, str], offsets: dict[str, float]) -> Collection:
    """Nodes' logs as a collection hands them over: saved files, each node's measured clock (±0.05 s)."""
    nodes = []
    for name, text in logs.items():
        local = tmp_path / name
        local.write_text(text)
        clock = ClockOffset(offsets.get(name, 0.0), 0.05)
        nodes.append(NodeLogs(name, "ssh", (NodeFile("/var/log/server.log", local, len(text)),), clock))
    nodes.append(NodeLogs("c", "ssh", failure="timeout: no answer within 60s"))
    return named(Collection("ssh", tuple(nodes)))  # the rank naming decided from the logs' heads


def judged(collection: Collection) -> Report:
    packs = load_packs()
    options = pipeline.Options(as_of=datetime(2026, 1, 1), post_mortem=True, nodes=collection)
    sources, collection = sources_of(collection, packs)
    return pipeline.report(sources, packs, replace(options, nodes=collection))


def test_nodes_logs_are_judged_as_one_run_their_ranks_named_by_node(tmp_path: Path) -> None:
    # GIVEN two nodes' SGLang logs that state no node rank (node b's TP1 stops in dist_init while the others
    # reached weight_load), node b's clock 300 s ahead (its stamps too), and node c that gave none
    from tests.nodes.test_logs_ssh import node_log, shifted

    logs = {"a": node_log({0: True, 1: True}, None), "b": shifted(node_log({0: True, 1: False}, None), 300)}
    # WHEN the collection is judged through the pipeline
    report = judged(collected(tmp_path, logs, {"b": 300.0}))
    # THEN each rank is named by its node, b's TP1 is the culprit, b's times are moved onto this machine's clock
    assert sorted(report.ranks) == ["a:TP0", "a:TP1", "b:TP0", "b:TP1"]
    assert report.culprit_ranks == ("b:TP1",)
    rows = {row.rank: row for row in report.rank_rows}
    assert rows["b:TP1"].last_progress == datetime(2025, 12, 18, 3, 10, 11)
    assert rows["b:TP1"].last_progress_path == "b:/var/log/server.log"
    # and every format says which nodes gave logs, which did not and why, and the clock it moved
    lines = [
        "2 of 3 nodes gave logs through ssh; ranks named node:rank (no node rank stated in the logs of a, b)",
        "1 node gave no log: c",
        "c: timeout: no answer within 60s",
        "b: its clock is 300.000 s ahead of this machine's (±0.050 s, measured when its logs were read): its times "
        "are moved onto this machine's",
    ]
    table = TableFormat().analysis(report)
    assert [line.removeprefix("Nodes: ") for line in table.splitlines() if line.startswith("Nodes: ")] == lines
    markdown, html = MarkdownFormat().analysis(report), HtmlFormat().analysis(report)
    assert all(line in markdown for line in lines)
    assert all(line.replace("'", "&#x27;") in html for line in lines)
    assert report.to_json()["nodes"]["nodes"][2] == {
        "node": "c",
        "logs": [],
        "clock_offset_s": None,
        "clock_uncertainty_s": None,
        "error": "timeout: no answer within 60s",
        "notes": [],
    }


def test_global_ranks_name_the_culprit_node(tmp_path: Path) -> None:
    # GIVEN SGLang across two nodes that state their node ranks (TP2-3 on node b), b's TP3 stuck in dist_init
    from tests.nodes.test_logs_ssh import node_log

    logs = {"a": node_log({0: True, 1: True}, 0), "b": node_log({2: True, 3: False}, 1)}
    # WHEN judged THEN the ranks are the server's own, and the report names TP3's node
    report = judged(collected(tmp_path, logs, {}))
    assert report.ranks == ("TP0", "TP1", "TP2", "TP3")
    assert report.culprit_ranks == ("TP3",)
    assert "Nodes: TP3 is on node b" in TableFormat().analysis(report)


def test_torchrun_tee_local_ranks_are_named_by_node_though_the_nodes_state_their_rank(tmp_path: Path) -> None:
    # GIVEN two nodes' torchrun logs written with --tee (`[default0]:`: the node's local rank, torch
    # elastic/multiprocessing/tail_log.py), each stating its group_rank in the agent's rendezvous result
    def torchrun_log(group_rank: int) -> str:
        result = (
            "[default] Rendezvous complete for workers. Result:\n"
            "  restart_count=0\n  master_addr=10.0.0.1\n  master_port=29500\n"
            f"  group_rank={group_rank}\n  group_world_size=2\n  local_ranks=[0, 1]\n"
        )
        return result + "".join(f"[default{r}]:step {n}\n" for n in range(40) for r in (0, 1))

    logs = {"a": torchrun_log(0), "b": torchrun_log(1)}
    # WHEN their sources are opened THEN the naming falls back to node:rank, said so
    collection = collected(tmp_path, logs, {})
    assert collection.global_ranks is True  # from the heads alone
    sources, revised = sources_of(collection, load_packs())
    assert revised.global_ranks is False
    assert revised.naming == "ranks named node:rank (a log's rank labels are local ranks: torchrun --tee's [defaultN]:)"
    assert [s.rank_prefix for s in sources] == ["a:", "b:"]
