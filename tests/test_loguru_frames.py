"""loguru's `backtrace=True` tracebacks (TGI's shard server) mark the frame that caught the exception
`> File "…"`: a frame like the others, so the innermost anchored frame still places the failure."""

from __future__ import annotations

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
