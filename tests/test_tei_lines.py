"""text-embeddings-inference (TEI), TGI's sibling, logs its router's start-up through the same tracing full format
with its own targets (`text_embeddings_router`, `text_embeddings_core::download`): the messages of its source
(router/src/main.rs, router/src/lib.rs, core/src/download.rs, router/src/http/server.rs) place its phases."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text

ROUTER = "INFO text_embeddings_router: router/src/lib.rs"
DOWNLOAD = "INFO download_artifacts: text_embeddings_core::download: core/src/download.rs"
START = [
    '2025-11-16T11:48:19.053494Z  INFO text_embeddings_router: router/src/main.rs:203: Args { model_id: "m" }',
    f"2025-11-16T11:48:19.100000Z  {DOWNLOAD}:42: Starting download",
    f"2025-11-16T11:48:19.200000Z  {DOWNLOAD}:18: Downloading `config.json`",
    f"2025-11-16T11:48:20.300000Z  {DOWNLOAD}:72: Model artifacts downloaded in 1.2003s",
    f"2025-11-16T11:48:20.400000Z  {ROUTER}:216: Maximum number of tokens per request: 8192",
    f"2025-11-16T11:48:20.500000Z  {ROUTER}:264: Starting model backend",
]
WARMUP = f"2025-11-16T11:48:31.000000Z  {ROUTER}:282: Warming up model"
SERVED = [
    "2025-11-16T11:52:00.000000Z  INFO text_embeddings_router::http::server: router/src/http/server.rs:1852: "
    "Starting HTTP server: 0.0.0.0:80",
    "2025-11-16T11:52:00.000100Z  INFO text_embeddings_router::http::server: router/src/http/server.rs:1853: Ready",
]


def test_a_router_that_printed_ready_is_ready(tmp_path: Path) -> None:
    # GIVEN TEI's start-up from its arguments to `Ready`, as its router prints it
    # WHEN analysed
    report = judge_text(tmp_path, "\n".join([*START, WARMUP, *SERVED]) + "\n")
    # THEN the server is ready, read by the TGI pack
    assert (report["system"], report["verdict"], report["phase"]) == ("tgi", "ready", "ready"), report["reason"]


def test_a_log_that_ends_after_the_warmup_began_stalled_in_warmup(tmp_path: Path) -> None:
    # GIVEN TEI's start-up that ends at `Warming up model` (a CPU warmup of 16384 tokens takes very long)
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join([*START, WARMUP]) + "\n")
    # THEN it stalled in warmup, the warmup line its last progress
    assert (report["verdict"], report["phase"]) == ("stalled", "warmup"), report["reason"]


def test_a_log_that_ends_while_the_backend_starts_stalled_in_weight_load(tmp_path: Path) -> None:
    # GIVEN TEI's start-up that ends at `Starting model backend` (the backend downloads and loads the weights)
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(START) + "\n")
    # THEN it stalled in weight_load
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load"), report["reason"]


def test_the_arguments_line_alone_is_launch(tmp_path: Path) -> None:
    # GIVEN only TEI's first line, its arguments
    # WHEN analysed after the fact
    report = judge_text(tmp_path, START[0] + "\n")
    # THEN the log ended in launch without an error: stalled there
    assert (report["system"], report["verdict"], report["phase"]) == ("tgi", "stalled", "launch"), report["reason"]
