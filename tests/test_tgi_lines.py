"""TGI's lines as users paste them: loguru's `backtrace=True` tracebacks (the shard server) mark the frame
that caught the exception `> File "…"`, a frame like the others; the launcher's colour codes lose their
ESC byte in a terminal copy (`[2m…[0m`); the router's `--json-output` lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_json

PY = "/opt/conda/lib/python3.11/site-packages/text_generation_server"
HEAD = [
    '2025-01-14T16:40:51.220700Z  INFO text_generation_launcher: Args { model_id: "m", num_shard: Some(2) }',
    "2025-01-14T16:40:51.300000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
    "2025-01-14T16:41:20.100000Z ERROR text_generation_launcher: Error when initializing model",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.11/asyncio/runners.py", line 190, in run',
    "    return runner.run(main)",
]
TAIL = [
    f'  File "{PY}/models/__init__.py", line 870, in get_model',
    "    return FlashCausalLM(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB.",
]


@pytest.mark.parametrize("marker", ["> ", "  "])
def test_a_caught_frame_marker_keeps_the_traceback_one_group(tmp_path: Path, marker: str) -> None:
    # GIVEN a shard traceback through asyncio's runner (a serving frame) into the model load, with or
    # without loguru's `> File` mark on the frame that caught it
    caught = [f'{marker}File "{PY}/server.py", line 268, in serve_inner', "    model = get_model_with_lora_adapters("]
    log = tmp_path / "tgi.log"
    log.write_text("\n".join([*HEAD, *caught, *TAIL]) + "\n")
    # WHEN analysed
    exit_code, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the failure is placed by the innermost anchored frame (the model load), never by the runner
    assert (report["verdict"], report["phase"]) == ("crashed", "weight_load"), report["reason"]
    assert report["root_cause"]["text"].startswith("torch.OutOfMemoryError")
    assert exit_code == 4


READY = [
    '[2m2024-11-05T09:12:04.434453Z[0m [32m INFO[0m [2mtext_generation_launcher[0m[2m:[0m Args { model_id: "m" }',
    "[2m2024-11-05T09:12:08.101000Z[0m [32m INFO[0m [1mshard-manager[0m: [2mtext_generation_launcher[0m[2m:[0m "
    "Starting shard [2m[3mrank[0m[2m=[0m0[0m",
    "[2m2024-11-05T09:12:34.400000Z[0m [32m INFO[0m [1mshard-manager[0m: [2mtext_generation_launcher[0m[2m:[0m "
    "Shard ready in 26.337128812s [2m[3mrank[0m[2m=[0m0[0m",
    "[2m2024-11-05T09:12:34.500000Z[0m [32m INFO[0m [2mtext_generation_launcher[0m[2m:[0m Starting Webserver",
    "[2m2024-11-05T09:12:36.900000Z[0m [32m INFO[0m [2mtext_generation_router::server[0m[2m:[0m "
    "[2mrouter/src/server.rs[0m[2m:[0m[2m2393:[0m Connected",
]


@pytest.mark.parametrize("esc", ["", "#033", "\x1b"])
def test_colour_codes_without_their_escape_byte_are_removed(tmp_path: Path, esc: str) -> None:
    # GIVEN a TGI launcher log pasted from a terminal: its colour codes without the ESC byte, written out
    # as `#033` (syslog), or whole
    log = tmp_path / "tgi.log"
    log.write_text("\n".join(line.replace("[", esc + "[") for line in READY) + "\n")
    # WHEN analysed THEN every line reads as the uncoloured one: the shard's rank, the router's ready line
    exit_code, report = run_json("analyze", str(log), "--post-mortem")
    assert (report["system"], report["verdict"], report["ranks"]) == ("tgi", "ready", ["rank 0"]), report["reason"]
    assert exit_code == 0


def _json_line(time: str, level: str, message: str, target: str, filename: str, line: int) -> str:
    """The router's `--json-output` line (router/src/logging.rs: tracing-subscriber's JSON, event flattened)."""
    record: dict[str, object] = {"timestamp": time, "level": level, "message": message, "target": target}
    record |= {
        "filename": filename,
        "line_number": line,
        "span": {"name": "send_error"},
        "spans": [{"name": "generate"}],
    }
    return json.dumps(record, separators=(",", ":"))


def test_the_routers_json_output_is_read_by_tgis_rules(tmp_path: Path) -> None:
    # GIVEN the router's JSON lines: `Connected`, then a batch's generation failed as send_error logs it
    lines = [
        _json_line(
            "2025-08-29T14:38:02.100000Z",
            "INFO",
            "Connected",
            "text_generation_router::server",
            "router/src/server.rs",
            2302,
        ),
        _json_line(
            "2025-08-29T14:40:17.288163Z",
            "ERROR",
            "Request failed during generation: Server error: CUDA error: an illegal memory access was encountered",
            "text_generation_router_v3::backend",
            "backends/v3/src/backend.rs",
            546,
        ),
    ]
    log = tmp_path / "tgi.json.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN TGI's: crashed while serving, the failed generation the cause, timed by its stamp
    assert (report["verdict"], report["phase"], report["system"]) == ("crashed", "serving", "tgi")
    assert report["root_cause"]["line"] == 2
    assert report["root_cause"]["time"].startswith("2025-08-29 14:40:17")


# flash_causal_lm.py warmup: the CUDA-graph warmup over the sizes, its OutOfMemoryError logged with
# `logger.exception("Decode cuda graph warmup failed")`, which the launcher re-logs with the shard's traceback
SHARD_UP = [
    '2024-04-02T17:30:51.220700Z  INFO text_generation_launcher: Args { model_id: "m", num_shard: Some(1) }',
    "2024-04-02T17:30:51.300000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
    "2024-04-02T17:31:18.100000Z  INFO shard-manager: text_generation_launcher: Shard ready in 26.8s rank=0",
    "2024-04-02T17:31:18.200000Z  INFO text_generation_launcher: Starting Webserver",
    "2024-04-02T17:31:18.900000Z  INFO text_generation_router: router/src/main.rs:322: Warming up model",
]
GRAPHS = [
    "2024-04-02T17:31:20.000000Z  INFO text_generation_launcher: Cuda Graphs are enabled for sizes [1, 2, 4, 8, 16]",
    "2024-04-02T17:31:23.524470Z ERROR text_generation_launcher: Decode cuda graph warmup failed",
    "Traceback (most recent call last):",
    '  File "/opt/conda/bin/text-generation-server", line 8, in <module>',
    "    sys.exit(app())",
    '  File "/opt/conda/lib/python3.10/site-packages/typer/main.py", line 311, in __call__',
]
OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. rank=0"


@pytest.mark.parametrize(
    ("head", "phase", "line"), [([], "cuda_graph", 2), (SHARD_UP, "warmup", 7)], ids=["excerpt", "whole-start"]
)
def test_a_failed_cuda_graph_warmup_over_a_cut_traceback_is_the_cause(
    tmp_path: Path, head: list[str], phase: str, line: int
) -> None:
    # GIVEN the shard's graph warmup failing, its traceback cut in its outer frames (no exception line): an excerpt
    # from the graphs on, or the whole start (TGI captures its graphs inside the router's warmup RPC)
    log = tmp_path / "tgi.log"
    log.write_text("\n".join([*head, *GRAPHS]) + "\n")
    # WHEN analysed post-mortem
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN a crash whose cause is the warmup's failure line, not the bare Traceback header under it; in the step
    # the log shows furthest (the graphs; the router's warmup where its line is in the log)
    assert (report["verdict"], report["phase"], report["root_cause"]["line"]) == ("crashed", phase, line)
    assert report["root_cause"]["text"].endswith("Decode cuda graph warmup failed")


def test_a_server_that_goes_on_after_a_failed_cuda_graph_warmup_is_ready(tmp_path: Path) -> None:
    # GIVEN the same failure, its traceback ending in the OutOfMemoryError the warmup caught, then the shard going on
    # without graphs: the router sets its batch budget from the warmup and connects
    after = [
        OOM,
        "2024-04-02T17:31:30.100000Z  INFO text_generation_router: router/src/main.rs:343: Setting max batch total "
        "tokens to 181232",
        "2024-04-02T17:31:32.900000Z  INFO text_generation_router: router/src/main.rs:344: Connected",
    ]
    log = tmp_path / "tgi.log"
    log.write_text("\n".join([*SHARD_UP, *GRAPHS, *after]) + "\n")
    # WHEN analysed post-mortem
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN ready: the warmup's failure is one the server survived
    assert report["verdict"] == "ready", report["reason"]
