"""NCCL's WARNs and INFO lines read as NCCL's source prints them (issue 25, item E): which WARN is a benign fallback
and which a failure, the `file.cc:N -> K` error chain, and the INFO lines a communicator built later prints.
Each kind on two logs written from the formats (shared/reference/nccl_torch_vllm.md §1, NVIDIA/nccl src/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from logphase.logs.matcher import explain
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text
from tests.equivalence import reports


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "job.log")


def _two_rank_job(version: str, ras_warn: tuple[str, str]) -> str:
    """A clean two-rank torch job at NCCL_DEBUG=INFO (2.24+ prints `%s comm ... - Init START`), each rank's RAS
    client socket refused by the host as rasClientInitSocket's WARN and INFO say, then destroyed cleanly."""
    lines = []
    for rank, pid in ((0, 846), (1, 847)):
        lines += [
            f"vm:{pid}:{pid} [{rank}] NCCL INFO NCCL version {version}+cuda12.4",
            f"vm:{pid}:{pid} [{rank}] NCCL INFO ncclCommInitRankConfig comm 0x151c46c{rank} rank {rank} nranks 2 "
            f"cudaDev {rank} nvmlDev {rank} busId {60 + rank * 10} commId 0x7a9250e0b1827b17 - Init START",
            ras_warn[0].format(pid=pid, rank=rank),
            f"vm:{pid}:{pid} [{rank}] NCCL INFO RAS failed to establish a client listening socket at {ras_warn[1]}",
            f"vm:{pid}:{pid} [{rank}] NCCL INFO Connected all rings",
            f"vm:{pid}:{pid} [{rank}] NCCL INFO ncclCommInitRankConfig comm 0x151c46c{rank} rank {rank} nranks 2 "
            f"cudaDev {rank} nvmlDev {rank} busId {60 + rank * 10} commId 0x7a9250e0b1827b17 - Init COMPLETE",
        ]
    for rank, pid in ((0, 846), (1, 847)):
        lines.append(
            f"vm:{pid}:{pid} [{rank}] NCCL INFO comm 0x151c46c{rank} rank {rank} nranks 2 cudaDev {rank} "
            f"busId {60 + rank * 10} - Destroy COMPLETE"
        )
    return "\n".join(lines) + "\n"


# --- RAS's own setup WARNs: a fallback, never the cause ------------------------------------------------------


def test_a_ras_client_socket_bind_warn_of_nccl_2_24_does_not_fail_a_job_that_went_on(tmp_path: Path) -> None:
    # GIVEN a two-rank job whose RAS client port was taken (`Call to bind failed: Address already in use` from
    # ras/client_support.cc, followed by RAS's own INFO), every rank then initialised and destroyed its communicator
    text = _two_rank_job(
        "2.24.3",
        (
            "vm:{pid}:{pid} [{rank}] ras/client_support.cc:140 NCCL WARN Call to bind failed: Address already in use",
            "localhost:28028",
        ),
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN the job finished, and no cause is named
    assert report["verdict"] == "finished"
    assert report["root_cause"] is None


def test_a_ras_bind_warn_of_nccl_2_26_with_a_stamp_and_an_ipv6_refusal_is_no_failure_either(tmp_path: Path) -> None:
    # GIVEN the same job on NCCL 2.26+, whose WARN lines carry the default `[%F %T] ` stamp and whose 2.30.7 WARNs
    # name the function, refused another way (no IPv6 loopback)
    text = _two_rank_job(
        "2.28.9",
        (
            "[2025-05-01 10:00:00] vm:{pid}:{pid} [{rank}] ras/client_support.cc:179 (rasClientInitSocket) "
            "NCCL WARN Call to bind failed: Cannot assign requested address",
            "::1<28028>",
        ),
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN it finished all the same
    assert report["verdict"] == "finished"
    assert report["root_cause"] is None


def test_the_same_bind_words_from_the_bootstrap_socket_are_a_failure(tmp_path: Path) -> None:
    # GIVEN the bootstrap's listening socket (misc/socket.cc's ncclSocketListen: SYSCHECK bind) failing, and the chain
    text = (
        "vm:846:846 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "vm:846:846 [0] misc/socket.cc:137 NCCL WARN Call to bind failed: Address already in use\n"
        "vm:846:846 [0] NCCL INFO misc/socket.cc:437 -> 2\n"
        "vm:846:846 [0] NCCL INFO bootstrap.cc:297 -> 2\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN the run crashed, the WARN the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("Call to bind failed: Address already in use")


def test_the_ras_prefix_is_read_only_from_ras_files() -> None:
    # GIVEN one WARN from ras/ and one from misc/
    packs = load_packs(check_examples=False)
    ras = explain("n1:1:1 [0] ras/client_support.cc:180 NCCL WARN Call to listen failed: Bad file descriptor", packs)
    misc = explain("n1:1:1 [0] misc/socket.cc:140 NCCL WARN Call to listen failed: Bad file descriptor", packs)
    # THEN the RAS one is RAS's diagnostic, the other a root failure
    assert ras.matches[0][0].id == "nccl.ras.setup_failed"
    assert misc.matches[0][0].id == "nccl.error.call_failed"


# --- `Call to X failed` in every wording ------------------------------------------------------------------------


def test_a_verbs_call_failed_with_error_is_the_cause(tmp_path: Path) -> None:
    # GIVEN ibvwrap.cc's `Call to %s failed with error %s errno %d` during connection setup, then its chain
    text = (
        "node1:1234:1234 [0] NCCL INFO NCCL version 2.18.3+cuda12.1\n"
        "node1:1234:1234 [0] NCCL INFO comm 0x55d8c1b0 rank 0 nranks 8 cudaDev 0 busId 18000 - Init START\n"
        "node1:1234:1290 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7\n"
        "\n"
        "node1:1234:1290 [0] misc/ibvwrap.cc:68 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument "
        "errno 22\n"
        "node1:1234:1290 [0] NCCL INFO transport/net_ib.cc:1031 -> 2\n"
        "node1:1234:1290 [0] NCCL INFO transport/net.cc:680 -> 2\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN crashed, the verbs call the cause
    assert report["verdict"] == "crashed"
    assert "Call to ibv_modify_qp failed with error Invalid argument" in root_text(report)


def test_a_bare_verbs_failure_and_an_mlx5_failure_are_causes(tmp_path: Path) -> None:
    # GIVEN ibvwrap.cc's bare `Call to %s failed` (IBV_PTR_CHECK) on one log and mlx5dvwrap.cc's wording on another
    bare = _judge(
        tmp_path,
        "gpu7:900:900 [3] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "gpu7:900:950 [3] misc/ibvwrap.cc:51 NCCL WARN Call to ibv_open_device failed\n"
        "gpu7:900:950 [3] NCCL INFO transport/net_ib.cc:560 -> 2\n",
    )
    mlx5 = _judge(
        tmp_path,
        "gpu8:901:901 [1] NCCL INFO NCCL version 2.27.3+cuda12.8\n"
        "[2025-06-01 08:00:00] gpu8:901:960 [1] misc/mlx5dvwrap.cc:40 NCCL WARN NET/MLX5: Call to "
        "mlx5dv_reg_dmabuf_mr failed with error Invalid argument\n",
    )
    # THEN each crashed with that line the cause
    assert (bare["verdict"], mlx5["verdict"]) == ("crashed", "crashed")
    assert root_text(bare).endswith("Call to ibv_open_device failed")
    assert root_text(mlx5).endswith("Call to mlx5dv_reg_dmabuf_mr failed with error Invalid argument")


# --- ncclShmOpen's failure --------------------------------------------------------------------------------------


def test_the_warn_that_says_which_shm_step_failed_is_the_cause_over_the_segment_warn_after_it(tmp_path: Path) -> None:
    # GIVEN ncclShmOpen on NCCL 2.23+ (src/misc/shmutils.cc v2.23.4-1:87, 128): fallocate's WARN, then the failure
    # exit's `Error while creating shared memory segment … (size N), error: …`, then the chain
    text = (
        "gpu1:700:700 [2] NCCL INFO NCCL version 2.23.4+cuda12.6\n"
        "gpu1:700:760 [2] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-Ab3dEf to 9637892 "
        "bytes, error: No space left on device (28)\n"
        "gpu1:700:760 [2] misc/shmutils.cc:128 NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-Ab3dEf (size 9637888), error: No space left on device (28)\n"
        "gpu1:700:760 [2] NCCL INFO transport/shm.cc:114 -> 2\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN crashed, the first WARN (the step that failed) the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith(
        "failed to extend /dev/shm/nccl-Ab3dEf to 9637892 bytes, error: No space left on device (28)"
    )


def test_the_shm_segment_warn_alone_is_the_cause(tmp_path: Path) -> None:
    # GIVEN a paste that keeps NCCL 2.21's segment WARN (src/misc/shmutils.cc v2.21.5-1:113, no errno yet) and its
    # chain, the WARN before it cut
    text = (
        "gpu2:800:850 [1] misc/shmutils.cc:113 NCCL WARN Error while attaching to shared memory segment "
        "/dev/shm/nccl-Zx9YwV (size 4194304)\n"
        "gpu2:800:850 [1] NCCL INFO transport/shm.cc:152 -> 2\n"
        "gpu2:800:850 [1] NCCL INFO transport.cc:165 -> 2\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN crashed, the segment WARN the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith(
        "Error while attaching to shared memory segment /dev/shm/nccl-Zx9YwV (size 4194304)"
    )


def test_the_segment_text_that_torch_prints_after_last_error_is_read_as_the_warn_is() -> None:
    # GIVEN the WARN's text alone, as torch prints `ncclGetLastError()` (reference 2.3(i)), in both NCCL wordings
    packs = load_packs(check_examples=False)
    old = explain("Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637888)", packs)
    new = explain(
        "Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637888), error: No space left on "
        "device (28)",
        packs,
    )
    # THEN both are the segment rule's, with the segment, its size and (2.23+) the system's error
    rule, captures = new.matches[0]
    assert (old.matches[0][0].id, rule.id) == ("nccl.error.shm_segment", "nccl.error.shm_segment")
    assert (captures["shm_step"], captures["path"], captures["bytes"], captures["reason"]) == (
        "creating",
        "/dev/shm/nccl-LeXlEJ",
        "9637888",
        "No space left on device (28)",
    )


# --- the error chain ---------------------------------------------------------------------------------------------


def test_an_error_chain_after_its_warn_leaves_the_warn_the_cause(tmp_path: Path) -> None:
    # GIVEN a WARN, then the chain `file:line -> 1` up to the async init thread (an alloc failure on WSL)
    text = (
        "DESKTOP-1:1689:1689 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "DESKTOP-1:1689:2800 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'\n"
        "DESKTOP-1:1689:2800 [0] NCCL INFO include/alloc.h:199 -> 1\n"
        "DESKTOP-1:1689:2800 [0] NCCL INFO channel.cc:41 -> 1\n"
        "DESKTOP-1:1689:2800 [0] NCCL INFO group.cc:64 -> 1 [Async thread]\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN crashed; the chain is a consequence: the WARN is the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("Cuda failure 999 'unknown error'")


def test_a_chain_whose_warn_was_cut_from_the_paste_still_says_the_init_failed(tmp_path: Path) -> None:
    # GIVEN a paste that starts after the WARN: Init START, then only the chain (2.30.7's `file:line (func) -> K`)
    text = (
        "node1:1234:1234 [0] NCCL INFO ncclCommInitRankConfig comm 0x5f00 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
        "busId 18000 commId 0x1 - Init START\n"
        "node1:1234:1290 [0] NCCL INFO misc/socket.cc:80 (socketWait) -> 6\n"
        "node1:1234:1290 [0] NCCL INFO bootstrap.cc:701 (bootstrapAllGather) -> 6\n"
        "node1:1234:1290 [0] NCCL INFO group.cc:75 (ncclAsyncJobMain) -> 6 [Async thread]\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN crashed (not a stall in dist_init whose last progress is a chain line), the chain's first line the cause
    assert (report["verdict"], report["phase"]) == ("crashed", "dist_init")
    assert root_text(report).endswith("misc/socket.cc:80 (socketWait) -> 6")


# --- INFO lines of a communicator built later: in the step around them ------------------------------------------


def test_nccl_info_lines_during_an_sglang_capture_stay_in_the_capture(tmp_path: Path) -> None:
    # GIVEN two SGLang ranks that began capturing CUDA graphs, then NCCL INFO lines (a communicator the capture builds)
    ranks = ("TP0", "TP1")
    text = "".join(f"[2025-03-08 12:29:01 {r}] Init torch distributed begin.\n" for r in ranks)
    text += "".join(f"[2025-03-08 12:29:03 {r}] Init torch distributed ends. mem usage=0.13 GB\n" for r in ranks)
    text += "".join(f"[2025-03-08 12:29:04 {r}] Load weight begin. avail mem=21.63 GB\n" for r in ranks)
    text += "".join(
        f"[2025-03-08 12:29:40 {r}] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.10 GB, "
        "mem usage=15.53 GB.\n"
        for r in ranks
    )
    text += "".join(
        f"[2025-03-08 12:29:42 {r}] Capture cuda graph begin. This can take up to several minutes. avail mem=2.00 GB\n"
        for r in ranks
    )
    text += (
        "node1:1234:1300 [0] NCCL INFO Channel 00/24 : 0 1\n"
        "node1:1235:1301 [1] NCCL INFO Channel 00/24 : 0 1\n"
        "node1:1234:1300 [0] NCCL INFO Connected all rings\n"
        "node1:1235:1301 [1] NCCL INFO Connected all rings\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN the log ends in the capture (no rank back in dist_init, none in a draft's), its begin the last progress
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("stalled", "cuda_graph", "cuda_graph")
    assert "Capture cuda graph begin" in root_text(report)


def test_nccl_info_lines_during_a_vllm_capture_stay_in_the_capture(tmp_path: Path) -> None:
    # GIVEN a vLLM V0 engine (unranked lines) past its KV cache, capturing, then NCCL INFO lines
    text = (
        "INFO 12-20 10:25:00 llm_engine.py:234] Initializing an LLM engine (v0.6.4) with config: "
        "model='meta-llama/Llama-3.1-8B', tensor_parallel_size=2\n"
        "INFO 12-20 10:25:52 model_runner.py:1099] Loading model weights took 14.9888 GB\n"
        "INFO 12-20 10:25:58 distributed_gpu_executor.py:57] # GPU blocks: 27616, # CPU blocks: 4096\n"
        "INFO 12-20 10:26:01 model_runner.py:1415] Capturing cudagraphs for decoding. This may lead to unexpected "
        "consequences if the model is not static.\n"
        "node1:1234:1300 [0] NCCL INFO Channel 00/24 : 0 1\n"
        "node1:1234:1300 [0] NCCL INFO Connected all rings\n"
        "node1:1234:1300 [0] NCCL INFO Connected all trees\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN in the capture, not a draft worker's init (a dist_init line past the graphs), the capture line the cause
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("stalled", "cuda_graph", "cuda_graph")
    assert "Capturing cudagraphs for decoding" in root_text(report)


def test_nccl_info_lines_before_any_later_step_are_still_dist_init(tmp_path: Path) -> None:
    # GIVEN a job whose only lines are NCCL's setup (one rank waiting for its peers in bootstrap)
    text = (
        "ai:480850:480850 [0] NCCL INFO Bootstrap : Using eth0:162.30.2.40<0>\n"
        "ai:480850:480850 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
        "ai:480850:480850 [0] NCCL INFO cudaDriverVersion 12040\n"
        "ai:480850:480850 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n"
        "ai:480850:480850 [0] NCCL INFO Connected all rings\n"
    )
    # WHEN judged
    report = _judge(tmp_path, text)
    # THEN it stalled in dist_init, as before
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init")


def test_the_fast_path_places_nccl_lines_around_a_capture_as_the_plain_path_does(tmp_path: Path) -> None:
    # GIVEN a long log (past the head the plain path reads alone): SGLang ranks in dist_init among hundreds of NCCL
    # INFO lines, the weights and the capture begun, then hundreds more NCCL INFO lines while it captures
    ranks = ("TP0", "TP1")
    lines = [f"[2025-03-08 12:29:01 {r}] Init torch distributed begin." for r in ranks]
    lines += [f"node1:{1234 + i % 2}:{1300 + i % 2} [{i % 2}] NCCL INFO Connected all rings" for i in range(700)]
    lines += [f"[2025-03-08 12:29:03 {r}] Init torch distributed ends. mem usage=0.13 GB" for r in ranks]
    lines += [f"[2025-03-08 12:29:04 {r}] Load weight begin. avail mem=21.63 GB" for r in ranks]
    lines += [f"node1:{1234 + i % 2}:{1300 + i % 2} [{i % 2}] NCCL INFO Connected all rings" for i in range(300)]
    lines += [
        f"[2025-03-08 12:29:42 {r}] Capture cuda graph begin. This can take up to several minutes. avail mem=2.00 GB"
        for r in ranks
    ]
    lines += [f"node1:{1234 + i % 2}:{1300 + i % 2} [{i % 2}] NCCL INFO Connected all rings" for i in range(700)]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs(check_examples=False)
    # WHEN read by the fast path and by the plain path
    # THEN the reports are the same
    assert reports.fast([log], packs) == reports.plain([log], packs)
