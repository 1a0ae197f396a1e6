"""Kinds of input the fresh-u batch's read logs were misjudged on, each written from the format the system prints in
its released source: a warmup that fails after traffic reached SGLang's scheduler (http_server `_wait_and_warmup`,
0.3.4-0.5.9) never served; huggingface_hub's safetensors header bar is a launch step."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_a_warmup_that_fails_after_traffic_reached_the_scheduler_crashed_in_warmup(tmp_path: Path) -> None:
    # GIVEN requests through another route prefilled and decoding while the warmup request was out, then the
    # warmup's failure (http_server `_wait_and_warmup`: a proxy answered its /generate with a 502) and the server killed
    text = (
        "[2026-01-10 13:23:26 TP0] Prefill batch, #new-seq: 1, #new-token: 2163, #cached-token: 41, token usage: 0.01,"
        " #running-req: 6, #queue-req: 0, \n"
        "[2026-01-10 13:23:26 TP0] Decode batch, #running-req: 7, #token: 9510, token usage: 0.02, cuda graph: True,"
        " gen throughput (token/s): 412.50, #queue-req: 0, \n"
        "[2026-01-10 13:23:27] Initialization failed. warmup error: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/entrypoints/http_server.py", line 1434, in'
        " _execute_server_warmup\n"
        '    assert res.status_code == 200, f"{res=}, {res.text=}"\n'
        "AssertionError: res=<Response [502]>, res.text=''\n"
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN it crashed in warmup, the furthest it got: the server was never ready, so never serving
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "warmup", "warmup")
    assert root_text(report) == "AssertionError: res=<Response [502]>, res.text=''"


API = "(APIServer pid=6539) INFO 04-18 20:2{s} [{file}] {message}\n"


def test_huggingface_hubs_safetensors_header_bar_is_a_launch_step_and_the_last_one(tmp_path: Path) -> None:
    # GIVEN a vLLM API server's start: its arguments, a config download, the resolved architecture, then
    # huggingface_hub's `Parse safetensors files` bar (get_safetensors_metadata: each shard's header, read before any
    # engine starts), the paste cut inside the bar
    text = (
        API.format(s="2:57", file="utils.py:233", message="non-default args: {'model': 'openai/gpt-oss-20b'}")
        + "config.json: 1.81kB [00:00, 5.73MB/s]\n"
        + API.format(s="3:04", file="model.py:549", message="Resolved architecture: GptOssForCausalLM")
        + "Parse safetensors files: 100%|█████████████████████████"
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN still in launch (no weight is loaded), open, and the bar is its last step
    assert (report["furthest_phase"], report["verdict"]) in (("launch", "stalled"), ("launch", "progressing"))
    assert root_text(report) == "Parse safetensors files: 100%|█████████████████████████"
