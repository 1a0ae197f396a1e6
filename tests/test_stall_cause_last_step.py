"""An open log's cause is its last progress line, over every rank and rule (fixtures/realworld/README.md,
`root_cause_line`): a step begun or done, a bar's tick, an item of a list printed as it goes; notes passed over."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_json

# vLLM's API server start (api_server.py `Starting vLLM server on …`, launcher.py `Available routes are:` then one
# `Route: <path>, Methods: <methods>` line per route as it walks the app's routes)
VLLM_START = "(APIServer pid=1) INFO 04-29 12:01:39 [api_server.py:602] Starting vLLM server on http://0.0.0.0:8355"
VLLM_ROUTES = "(APIServer pid=1) INFO 04-29 12:01:39 [launcher.py:37] Available routes are:"
VLLM_ROUTE = "(APIServer pid=1) INFO 04-29 12:01:39 [launcher.py:46] Route: {path}, Methods: {methods}"
ROUTES = [("/openapi.json", "HEAD, GET"), ("/docs", "HEAD, GET"), ("/health", "GET"), ("/v1/models", "GET")]

# NCCL's communicator init (init.cc: `ncclCommInitRank comm … - Init COMPLETE`), then tuner plugin notes
NCCL_COMPLETE = (
    "node-0:{pid}:{pid} [{dev}] NCCL INFO ncclCommInitRank comm 0x347e3f40 rank {dev} nranks 16 cudaDev {dev} "
    "nvmlDev {dev} busId 2a000 commId 0x4ed80120efcb9b9f - Init COMPLETE"
)
NCCL_TUNER = (
    "node-0:{pid}:{pid} [{dev}] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so. Using internal tuner plugin."
)

# SGLang's capture bar (cuda_graph_runner.py: tqdm `Capturing batches (bs=… avail_mem=… GB)`), drawn by TP0 alone
CAPTURE_BEGIN = (
    "[2025-05-19 01:11:35 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=4.40 GB"
)
TICK = "Capturing batches (avail_mem={mem} GB):  {pct}%|{bar}   | {done}/23 [00:0{done}<00:19,  1.04s/it]"


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def _cause(log: Path) -> tuple[str, int, str]:
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report["verdict"], report["root_cause"]["line"], report["root_cause"]["text"]


@pytest.mark.parametrize("listed", [2, 3, 4])
def test_the_last_item_of_a_list_printed_as_it_goes_is_the_cause(tmp_path: Path, listed: int) -> None:
    # GIVEN a vLLM API server that listed its first `listed` routes, then the log ends
    routes = [VLLM_ROUTE.format(path=path, methods=methods) for path, methods in ROUTES[:listed]]
    log = _write(tmp_path, [VLLM_START, VLLM_ROUTES, *routes])
    # WHEN analysed post-mortem
    verdict, line, text = _cause(log)
    # THEN it stalled at its last Route line: each route is an item printed as it goes (line 2 + listed)
    assert (verdict, line) == ("stalled", 2 + listed)
    assert text.endswith(f"Route: {ROUTES[listed - 1][0]}, Methods: {ROUTES[listed - 1][1]}")


def test_a_plugin_note_after_the_last_step_is_passed_over(tmp_path: Path) -> None:
    # GIVEN two ranks' NCCL init completing, each followed by another rank's tuner plugin note
    log = _write(
        tmp_path,
        [
            NCCL_COMPLETE.format(pid=273, dev=3),
            NCCL_TUNER.format(pid=276, dev=6),
            NCCL_COMPLETE.format(pid=271, dev=1),
            NCCL_TUNER.format(pid=277, dev=7),
            NCCL_TUNER.format(pid=274, dev=4),
        ],
    )
    # WHEN analysed post-mortem
    verdict, line, text = _cause(log)
    # THEN the cause is rank 1's Init COMPLETE (line 3): the plugin notes report no step
    assert (verdict, line) == ("stalled", 3)
    assert text.endswith("Init COMPLETE")


def test_a_bar_tick_cut_by_the_paste_is_the_cause_while_its_first_words_are_whole(tmp_path: Path) -> None:
    # GIVEN SGLang's capture bar ticking to 4/23, the log cut inside the next tick's bar
    ticks = [TICK.format(mem="4.22", pct=pct, bar=bar, done=done) for pct, bar, done in ((13, "▌", 3), (17, "▋", 4))]
    cut = "Capturing batches (avail_mem=4.11 GB):  22%|▊   |"
    log = tmp_path / "server.log"
    log.write_text("\n".join([CAPTURE_BEGIN, *ticks, cut]))  # no newline: the paste ends inside the line
    # WHEN analysed post-mortem
    verdict, line, text = _cause(log)
    # THEN the cause is the cut tick (line 4): what is left still says the bar's step
    assert (verdict, line, text) == ("stalled", 4, cut)


def test_a_failure_keeps_its_own_cause_after_later_steps(tmp_path: Path) -> None:
    # GIVEN a vLLM server that listed routes after a worker's exception line
    error = "(APIServer pid=1) ERROR 04-29 12:01:38 [core.py:700] RuntimeError: CUDA error: out of memory"
    routes = [VLLM_ROUTE.format(path=path, methods=methods) for path, methods in ROUTES]
    log = _write(tmp_path, [VLLM_START, error, VLLM_ROUTES, *routes])
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN it crashed and the cause is the exception line (line 2), not the last route
    assert report["verdict"] == "crashed"
    assert report["root_cause"]["line"] == 2
