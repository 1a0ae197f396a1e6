"""Steps the fresh-v batch's open logs end on that were read as no step (or a later line read as one), each written
from the format its program prints in the released source the pack's rule cites: NCCL's rings and trees, vLLM's graph
capture's end, DLRover's agent rendezvous."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

HOST = "gpu-a:561:561 [0] NCCL INFO "
PEER = "(RayWorkerWrapper pid=248, ip=10.1.160.68) "

# A communicator's init as NCCL 2.20 prints it with NCCL_DEBUG=INFO (init.cc, graph/rings.cc), up to its graph.
NCCL_INIT_HEAD = [
    HOST + "Using network IB",
    HOST + "comm 0x1476dca0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 23000 commId 0xa015ae7e0a50005d - Init START",
    PEER + "INFO 09-12 23:40:47 pynccl.py:63] vLLM is using nccl==2.20.5",
    HOST + "Setting affinity for GPU 0 to 0f,ffffffff",
    HOST + "comm 0x1476dca0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
]


@pytest.mark.parametrize(
    ("graph", "last"),
    [
        # rank 0 lays each ring (`Channel %02d/%02d :` then the ranks), then init.cc prints the trees once
        (
            ["Channel 00/02 :    0   1", "Channel 01/02 :    0   1", "Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1"],
            "Trees [0]",
        ),
        # the same, the paste cut inside the Trees line after its first words
        (["Channel 00/02 :    0   1", "Channel 01/02 :    0   1", "Trees [0] 1/-1/-1-"], "Trees [0] 1/-1/-1-"),
        # cut after the rings: the last ring laid is the last step
        (["Channel 00/02 :    0   1", "Channel 01/02 :    0   1"], "Channel 01/02 :    0   1"),
        # NCCL 2.4-2.6's up/down trees
        (["Channel 00/01 :    0   1", "Trees [0] 1/-1/-1->0->-1|-1->0->1/-1/-1"], "Trees [0] 1/-1/-1->0->-1|"),
    ],
)
def test_an_init_cut_after_its_rings_or_trees_stalls_on_them(tmp_path: Path, graph: list[str], last: str) -> None:
    # GIVEN a communicator's init that laid its rings and maybe built its trees, then printed nothing more
    text = "\n".join([*NCCL_INIT_HEAD, *(HOST + g for g in graph)]) + "\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the init is open in dist_init and its last step done is the graph line, not the peers' line before it
    assert report["phase"] == "dist_init"
    assert report["verdict"] == "stalled"
    assert last in root_text(report)


def test_a_tuning_table_after_the_rings_is_no_step(tmp_path: Path) -> None:
    # GIVEN an init whose last line is a tuning table's row, after a ring laid
    text = (
        "\n".join(
            [
                *NCCL_INIT_HEAD,
                HOST + "Channel 00/02 :    0   1",
                HOST + "threadThresholds 8/8/64 | 16/8/64 | 512 | 512",
            ]
        )
        + "\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the ring laid is the last step, the table (configuration) passed over
    assert report["phase"] == "dist_init"
    assert root_text(report).endswith("Channel 00/02 :    0   1")


def _engine_core(message: str) -> str:
    return f"(EngineCore_0 pid=309588) INFO 08-19 07:06:37 [gpu_model_runner.py:2721] {message}\n"


def test_a_capture_size_done_on_its_own_line_is_the_captures_last_step(tmp_path: Path) -> None:
    # GIVEN vLLM's V1 model runner capturing graph sizes one by one, each size's end printed on its own line with the
    # released end message's words (`… finished in %.0f secs, took %.2f GiB`), interleaved with a worker's peer line
    sizes = [(112, "0.048", "8.00"), (104, "0.057", "6.00"), (96, "0.063", "8.00")]
    text = "".join(
        _engine_core(f"Graph capturing for {size} input tokens")
        + _engine_core(f"                        finished in {secs} secs, took {mib} MiB")
        for size, secs, mib in sizes
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN capture is open and its last step is the last size's end, not the begin before it
    assert report["phase"] == "cuda_graph"
    assert report["verdict"] in {"stalled", "progressing"}
    assert root_text(report).endswith("finished in 0.063 secs, took 8.00 MiB")


def test_model_loading_took_is_not_read_as_a_capture(tmp_path: Path) -> None:
    # GIVEN the model runner's load lines only (`Model loading took %.4f GiB and %.6f seconds`)
    text = _engine_core("Starting to load model /models/qwen...") + _engine_core(
        "Model loading took 14.2474 GiB and 5.210000 seconds"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the log is in weight loading, never in capture
    assert report["phase"] == "weight_load"


DLROVER = "[2023-07-18 14:31:22,{ms}] [INFO] [training.py:{where}] {message}\n"


def test_dlrover_agents_rendezvous_is_a_launch_step(tmp_path: Path) -> None:
    # GIVEN DLRover's elastic agent (training.py) starting its workers, then joining its master's rendezvous as it
    # prints it (`The node node_name attempts …` and `The node{POD_NAME} has joined round …`, POD_NAME empty), the next
    # line cut inside its prefix
    text = "".join(
        [
            DLROVER.format(
                ms="177", where="336:_invoke_run", message="[default] starting workers for entrypoint: python"
            ),
            DLROVER.format(
                ms="177",
                where="123:next_rendezvous",
                message="The node node_name attempts to join the next round of the rendezvous 'elastic' "
                "with timeout 600.",
            ),
            DLROVER.format(
                ms="177",
                where="138:next_rendezvous",
                message="The node has joined round 0 of the elastic rendezvous as rank 0 in a world of size 1.",
            ),
            "[2023-07-18 14:31:22,178] [INFO] [master_client.py:595:kv_store",
        ]
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the agent is launching (no worker, no process group yet), its last step the rendezvous joined
    assert report["phase"] == "launch"
    assert report["verdict"] in {"stalled", "progressing"}
    assert root_text(report).endswith("as rank 0 in a world of size 1.")
