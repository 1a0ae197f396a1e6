"""`logphase stacks` through click's CliRunner: --from dumps, formats, exit codes, errors and hints."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from tests.conftest import run_cli, run_json

from .conftest import REALWORLD, STACKS_FIXTURES

SGLANG_LOG = str(STACKS_FIXTURES / "sglang-watchdog-pyspy-tp4.log")
HEADLINE = (
    "TP0, TP1, TP2 wait in all_reduce (torch.distributed) inside capture_one_batch_size (cuda_graph_runner.py); "
    "TP3 is still in load_file (safetensors/torch.py) (weight_load) (waiting: idle when sampled) — TP3 is behind"
)


def test_from_a_log_with_pyspy_blocks_table() -> None:
    result = run_cli("stacks", "--from", SGLANG_LOG)
    assert result.exit_code == 4
    lines = result.stdout.splitlines()
    assert lines[0] == HEADLINE
    assert lines[1] == "odd ranks: TP3"
    assert lines[2] == "the groups diverge below __init__ (scheduler.py:300)"
    assert lines[3] == "4 of 5 processes read, 1 sample(s)"
    # each frame with the line its ranks are at, as the dumps give it
    assert "TP[0-3] (4)  run (multiprocessing/process.py:108)" in lines
    assert "├─ TP[0-2] (3)  init_cuda_graphs (model_runner.py:1200)" in lines
    assert "└─ TP3 (1)  load_model (model_runner.py:700)" in lines


def test_json_contract_and_read_back(tmp_path: Path) -> None:
    result = run_cli("stacks", "--from", SGLANG_LOG, "--format", "json")
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    assert data["schema"] == "logphase.stacks/1"
    assert {"samples", "interval_s", "processes", "groups", "culprit_ranks", "stall"} <= set(data)
    assert set(data["processes"][0]) >= {"pid", "ppid", "rank", "role", "title", "error", "moving"}
    assert set(data["groups"][0]) >= {"ranks", "pids", "state", "frames", "moving"}
    assert data["culprit_ranks"] == ["TP3"]
    assert data["stall"] == {
        "state": "weight_load",
        "ranks": ["TP3"],
        "frame": "load_file (safetensors/torch.py:313)",
        "summary": HEADLINE,
    }
    saved = tmp_path / "node0.json"
    saved.write_text(result.stdout)
    again = json.loads(run_cli("stacks", "--from", str(saved), "--format", "json").stdout)
    assert again["culprit_ranks"] == data["culprit_ranks"]
    assert again["groups"] == data["groups"]


def test_many_nodes_merge(tmp_path: Path) -> None:
    """Each node writes its JSON; --from node*.json merges them (ranks are global)."""

    def fake_node(name: str, ranks: range, behind: int | None) -> Path:
        processes = []
        for rank in ranks:
            frames = (
                ["load_weights (models/llama.py:500)", "load_model (model_runner.py:700)"]
                if rank == behind
                else ["all_reduce (torch/distributed/distributed_c10d.py:2501)", "capture (cuda_graph_runner.py:330)"]
            )
            processes.append(
                {
                    "pid": 100 + rank,
                    "ppid": 1,
                    "rank": f"TP{rank}",
                    "role": "scheduler",
                    "title": f"sglang::scheduler_TP{rank}",
                    "error": None,
                    "moving": None,
                    "host": name,
                    "threads": [
                        {
                            "id": str(100 + rank),
                            "name": "MainThread",
                            "main": True,
                            "active": False,
                            "frames": [*frames, "run_scheduler_process (scheduler.py:2500)"],
                        }
                    ],
                }
            )
        path = tmp_path / f"{name}.json"
        path.write_text(
            json.dumps(
                {
                    "schema": "logphase.stacks/1",
                    "samples": 1,
                    "interval_s": 0,
                    "processes": processes,
                    "groups": [],
                    "culprit_ranks": [],
                    "stall": None,
                }
            )
        )
        return path

    node0, node1 = fake_node("node0", range(0, 4), None), fake_node("node1", range(4, 8), 6)
    result = run_cli("stacks", "--from", str(node0), "--from", str(node1), "--format", "json")
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    assert data["culprit_ranks"] == ["TP6"]
    assert data["groups"][0]["ranks"] == ["TP0", "TP1", "TP2", "TP3", "TP4", "TP5", "TP7"]


def test_idle_json_exits_zero_with_markdown() -> None:
    result = run_cli("stacks", "--from", str(STACKS_FIXTURES / "pyspy-subprocesses-idle.json"), "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[:3] == [
        "## logphase stacks",
        "",
        "**all ranks idle in the event loop: the server is up; look at the health check, not the server**",
    ]


def test_realworld_dumps_through_the_cli() -> None:
    for name, code in [
        ("064_sglang-pp-watchdog-pyspy-dump.txt", 4),
        ("067_sglang-watchdog-exception-abort-faulthandler.txt", 4),
        ("070_sglang-faulthandler-tail-extension-modules.txt", 4),
    ]:
        assert run_cli("stacks", "--from", str(REALWORLD / name)).exit_code == code, name


def test_a_file_without_dumps_reads_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "plain.log"
    empty.write_text("[2025-01-01 10:00:00 TP0] Load weight begin. avail mem=21.63 GB\n")
    result = run_cli("stacks", "--from", str(empty))
    assert result.exit_code == 3
    assert result.stdout.splitlines()[0] == "no process could be read"
    assert "logphase: error: no process could be read" in result.stderr


def test_missing_file_is_an_input_error() -> None:
    # GIVEN a dump path that does not exist WHEN read THEN exit 3 with analyze's own wording and hint
    result = run_cli("stacks", "--from", "/nonexistent/dump.txt")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "logphase: error: /nonexistent/dump.txt: no such file",
        "  hint: check the path; use '-' to read standard input",
    ]


@pytest.mark.parametrize(
    ("name", "compress"),
    [
        ("dump.txt.gz", gzip.compress),
        ("dump.txt", gzip.compress),  # compressed without saying so: read by its magic bytes
        ("dump.txt.zst", lambda data: zstandard.ZstdCompressor().compress(data)),
    ],
)
def test_compressed_dumps_are_read_by_their_magic_bytes(tmp_path: Path, name: str, compress: Any) -> None:
    # GIVEN a text dump compressed as gzip or zstd, with or without a suffix that says so
    plain = run_json("stacks", "--from", SGLANG_LOG)[1]
    path = tmp_path / name
    path.write_bytes(compress(Path(SGLANG_LOG).read_bytes()))
    # WHEN read THEN the groups are those of the plain file
    assert [g["ranks"] for g in run_json("stacks", "--from", str(path))[1]["groups"]] == [
        g["ranks"] for g in plain["groups"]
    ]


def test_a_gzipped_dump_on_stdin_is_decompressed() -> None:
    # GIVEN a gzipped dump piped in
    result = run_cli("stacks", "--from", "-", "--format", "json", input=gzip.compress(Path(SGLANG_LOG).read_bytes()))
    # THEN it is read like the file
    assert [g["ranks"] for g in json.loads(result.stdout)["groups"]] == [
        g["ranks"] for g in run_json("stacks", "--from", SGLANG_LOG)[1]["groups"]
    ]


@pytest.mark.parametrize(
    "document",
    [
        "{}",
        '{"schema": "logphase.stacks/1", "processes": 5}',
        '{"schema": "logphase.stacks/1", "processes": [{"pid": "x", "threads": 3}]}',
        "[1, 2, 3]",
        '[{"frames": 7}]',
        '[{"frames": [42]}]',
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["empty-object", "processes-int", "threads-int", "ints", "frames-int", "frame-int", "deep"],
)
def test_json_of_the_wrong_shape_is_an_input_error(tmp_path: Path, document: str) -> None:
    # GIVEN JSON that py-spy and logphase never write
    path = tmp_path / "odd.json"
    path.write_text(document)
    # WHEN read THEN exit 3 with what it is and a hint, never a traceback
    result = run_cli("stacks", "--from", str(path))
    assert result.exit_code == 3, result.stderr
    assert result.stderr.startswith("logphase: error: ")
    assert result.stderr.splitlines()[1].startswith("  hint: ")


def test_usage_errors() -> None:
    assert run_cli("stacks").exit_code == 2
    assert run_cli("stacks", "--pid", "1", "--from", SGLANG_LOG).exit_code == 2
    assert run_cli("stacks", "--pid", "1", "--match", "x").exit_code == 2
    result = run_cli("stacks", "--pid", "1", "--native", "--nonblocking")
    assert result.exit_code == 2
    assert "--native cannot be combined with --nonblocking" in result.stderr


def test_py_spy_missing_exits_3_with_install_hint() -> None:
    result = run_cli("stacks", "--pid", str(os.getpid()), "--py-spy", "/nonexistent/py-spy")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "logphase: error: py-spy not found at /nonexistent/py-spy",
        "  hint: install it with `pip install py-spy` (or pass --py-spy PATH)",
    ]


def test_permission_denied_everywhere_gives_the_ptrace_hint(tmp_path: Path) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text(
        "#!/bin/sh\necho 'Error: Permission Denied: Try running again with elevated permissions' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        result = run_cli("stacks", "--pid", str(target.pid), "--py-spy", str(fake))
    finally:
        target.kill()
        target.wait()
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == "logphase: error: permission denied reading 1 process with py-spy"
    assert "kernel.yama.ptrace_scope" in result.stderr
    assert "--cap-add SYS_PTRACE" in result.stderr
    assert "securityContext.capabilities.add: [SYS_PTRACE]" in result.stderr


@pytest.mark.parametrize(("fmt", "prefix"), [("table", "note: "), ("markdown", "- ")])
def test_the_reports_notes_are_shown_in_every_format(tmp_path: Path, fmt: str, prefix: str) -> None:
    # GIVEN a faulthandler dump 300 frames deep (a thread's stack keeps its innermost 256, a note says so)
    dump = tmp_path / "deep.txt"
    frames = "".join(f'  File "/app/m{i % 5}.py", line {i + 1} in f{i % 7}\n' for i in range(300))
    dump.write_text(f"Thread 0x00007f0000000001 (most recent call first):\n{frames}")
    # WHEN its stacks are shown as a table or markdown
    result = run_cli("stacks", "--from", str(dump), "--format", fmt)
    # THEN the note that JSON carries is shown too
    assert any(line.startswith(prefix) and "stack cut at 256 frames" in line for line in result.stdout.splitlines())
