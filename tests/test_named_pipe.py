"""`analyze` on a named pipe with a writer: read once, as standard input, named by its path."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from tests.conftest import run_cli

# SGLang's start up to weight loading, as it logs it
STARTING = (
    "[2026-01-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2026-01-01 10:00:01 TP0] Init torch distributed ends. mem usage=0.10 GB\n"
    "[2026-01-01 10:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"
)


def test_analyze_reads_a_named_pipe_with_a_writer(tmp_path: Path) -> None:
    # GIVEN a named pipe a process writes a start into
    pipe = tmp_path / "server.fifo"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text(STARTING), daemon=True)
    writer.start()
    # WHEN it is analyzed
    result = run_cli("analyze", str(pipe), "--format", "json")
    writer.join(60)
    # THEN it is read as a finished stream (was: "cannot read: None", exit 3)
    report = json.loads(result.stdout)
    assert (report["inputs"], report["phase"], report["verdict"]) == (
        [{"path": str(pipe), "lines": 3, "bytes": len(STARTING)}],
        "weight_load",
        "stalled",
    )
    assert result.exit_code == 4
