"""Steps the fresh-v batch's open logs end on that were read as no step (or a later line read as one), each written
from the format its program prints in the released source the pack's rule cites: NCCL's rings and trees."""

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
        (["Channel 00/02 :    0   1", "Channel 01/02 :    0   1", "Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1"], "Trees [0]"),
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
    text = "\n".join(
        [
            *NCCL_INIT_HEAD,
            HOST + "Channel 00/02 :    0   1",
            HOST + "threadThresholds 8/8/64 | 16/8/64 | 512 | 512",
        ]
    ) + "\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the ring laid is the last step, the table (configuration) passed over
    assert report["phase"] == "dist_init"
    assert root_text(report).endswith("Channel 00/02 :    0   1")
