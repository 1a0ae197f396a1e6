"""Kinds of input the fresh-u batch's read logs were misjudged on, each written from the format SGLang prints in its
released source (0.3.4-0.5.9: the scheduler's `Prefill batch` line, http_server's warmup): a prefill batch the warmup's
single first request cannot print is real traffic, served only where a line of the server's own shows a server (an
offline `Engine.generate` prints the same batches), and a warmup that fails after traffic reached it never served."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.logs.matcher import explain
from tests.conftest import judge_text, root_text, shipped_packs

# scheduler.py (0.3.x-0.5.3) / scheduler_metrics_mixin.py (0.5.6+) `log_prefill_stats`, TP0's line
OLD = "[2024-10-14 12:28:26 TP0] Prefill batch. #new-seq: {seqs}, #new-token: {new}, #cached-token: {cached}, cache hit rate: 0.00%, token usage: 0.01, #running-req: {running}, #queue-req: {queued}\n"  # noqa: E501
NEW = "[2026-05-15 12:50:14 TP0] Prefill batch, #new-seq: {seqs}, #new-token: {new}, #cached-token: {cached}, token usage: 0.01, #running-req: {running}, #queue-req: {queued}, input throughput (token/s): {tps}, cuda graph: False\n"  # noqa: E501
# the warmup's own lines: the HTTP server up, its poll of the model info route answered, the warmup request's prefill
UVICORN = "[2026-05-15 12:49:58] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
MODEL_INFO = '[2026-05-15 12:49:59] INFO:     127.0.0.1:41452 - "GET /get_model_info HTTP/1.1" 200 OK\n'
WARMUP_PREFILL = NEW.format(seqs=1, new=7, cached=0, running=0, queued=0, tps="0.00")


def _traffic(seqs: int, cached: int, running: int, queued: int, new: int = 2048) -> str:
    return NEW.format(seqs=seqs, new=new, cached=cached, running=running, queued=queued, tps="46.36")


def test_the_warmup_requests_prefill_alone_is_warmup(tmp_path: Path) -> None:
    # GIVEN the HTTP server up and its warmup request's prefill: one sequence of a few tokens, nothing cached, nothing
    # running or queued, no previous prefill to measure a throughput from
    report = judge_text(tmp_path, UVICORN + MODEL_INFO + WARMUP_PREFILL)
    # WHEN judged THEN the server is warming up, not serving
    assert report["furthest_phase"] == "warmup"
    assert report["verdict"] != "ready"


def _placed(line: str) -> str | None:
    """The phase the winning rule places `line` in (the highest priority among the shipped packs' matches)."""
    explained = explain(line.rstrip("\n"), shipped_packs())
    if not explained.matches:
        return None
    rule = max((rule for rule, _ in explained.matches), key=lambda rule: rule.priority)
    return None if rule.phase is None else rule.phase.value


TRAFFIC = st.one_of(
    st.tuples(st.integers(2, 64), st.just(0), st.just(0), st.just(0)),
    st.tuples(st.just(1), st.integers(1, 9000), st.just(0), st.just(0)),
    st.tuples(st.just(1), st.just(0), st.integers(1, 300), st.just(0)),
    st.tuples(st.just(1), st.just(0), st.just(0), st.integers(1, 300)),
)


@settings(deadline=None)  # the first example loads the shipped packs
@given(counters=TRAFFIC, new=st.integers(1, 8192), fmt=st.sampled_from([OLD, NEW]))
def test_a_prefill_batch_the_warmup_cannot_print_is_serving_in_every_release_format(
    counters: tuple[int, int, int, int], new: int, fmt: str
) -> None:
    # GIVEN a prefill batch with more sequences, a cache hit, or another request running or queued (the warmup is one
    # request into an empty cache: none of these), as 0.3.x (no trailing comma) or 0.5.x prints it
    seqs, cached, running, queued = counters
    line = fmt.format(seqs=seqs, new=new, cached=cached, running=running, queued=queued, tps="0.00")
    # WHEN read THEN it is real traffic: serving
    assert _placed(line) == "serving"


@settings(deadline=None)
@given(new=st.integers(1, 64), fmt=st.sampled_from([OLD, NEW]))
def test_the_warmups_own_prefill_shape_stays_warmup(new: int, fmt: str) -> None:
    # GIVEN the warmup request's prefill shape: one sequence, nothing cached, running or queued, 0.00 throughput
    line = fmt.format(seqs=1, new=new, cached=0, running=0, queued=0, tps="0.00")
    # WHEN read THEN it is the warmup's (before a ready line)
    assert _placed(line) == "warmup"


def test_a_prefill_batch_the_warmup_cannot_print_after_the_servers_lines_is_ready(tmp_path: Path) -> None:
    # GIVEN the server's HTTP start and warmup poll, then a 0.3.x prefill batch with a request queued behind it
    report = judge_text(tmp_path, UVICORN + MODEL_INFO + OLD.format(seqs=1, new=6, cached=0, running=0, queued=1))
    # WHEN judged THEN the server serves real traffic
    assert (report["verdict"], report["furthest_phase"]) == ("ready", "serving")


def test_a_previous_prefills_throughput_is_traffic_and_the_model_info_poll_shows_a_server(tmp_path: Path) -> None:
    # GIVEN the answered model info poll (a log cut above the HTTP start), then 0.5.x chunks of one long prompt, each
    # with the throughput of the chunk before it (the warmup's first prefill prints 0.00)
    report = judge_text(tmp_path, MODEL_INFO + _traffic(1, 0, 0, 0) + _traffic(1, 0, 0, 0))
    # WHEN judged THEN ready, serving
    assert (report["verdict"], report["furthest_phase"]) == ("ready", "serving")


def test_traffic_with_no_line_of_a_server_is_serving_but_not_ready(tmp_path: Path) -> None:
    # GIVEN only the scheduler's prefill batches (an offline Engine.generate prints them alike, with no HTTP server,
    # warmup or ready line), a script's own bar above them
    text = (
        "Processing batches: 2it [00:00,  4.69it/s]\n"
        + OLD.format(seqs=1, new=2062, cached=0, running=0, queued=0)
        + OLD.format(seqs=4, new=8192, cached=291, running=1, queued=38)
        + OLD.format(seqs=6, new=8192, cached=2753, running=4, queued=34)
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN the run is serving (its engine's work), and nothing says a server is ready
    assert report["furthest_phase"] == "serving"
    assert report["verdict"] in ("progressing", "stalled")


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
