"""`logphase --help` and the analysis of a small log import none of the modules only other commands,
other formats or other logs need: each costs every run its start-up time (issue 13: a small log in
≤ 150 ms). A first run, which parses the packs, may import more; these runs find them in the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

SMALL_LOG = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
# tabulate imports importlib.metadata (~13 ms): the terminal table is laid out without it
TABLE_ONLY = ("tabulate", "importlib.metadata")
# only a log with stack dumps printed into it needs the dump parser and the stack model
DUMPS_ONLY = ("logphase.stacks.dumps", "logphase.stacks.model", "logphase.judging.stalls", "logphase.report.stacks")
# parsing a pack (a cold cache), a log on two clocks, a mistyped command or pack key, the run store
ELSEWHERE = ("tomllib", "statistics", "difflib", "logphase.report.runs", "json", "sqlite3")
# many nodes' logs (a temporary folder), a paste that went through HTML, `watch`'s live decision, a user
# pack's regexes (or a shipped regex only `regex` reads: a line it may match), a file of over PLAIN_LINES
ONE_FILE = ("tempfile", "html", "logphase.judging.live", "regex", "logphase.logs.fast")
DEFERRED = (*TABLE_ONLY, *DUMPS_ONLY, *ELSEWHERE, *ONE_FILE)

PROBE = """
import sys
from logphase.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_after(args: list[str], cache: Path) -> set[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("LOGPHASE_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return set(done.stderr.split())


def test_help_imports_none_of_the_deferred_modules(tmp_path: Path) -> None:
    # GIVEN a fresh interpreter
    # WHEN it shows the top-level help
    modules = _modules_after(["--help"], tmp_path)
    # THEN none of the deferred modules was imported (nor any command's)
    assert "logphase.cli" in modules
    assert sorted(modules & set(DEFERRED)) == []
    assert sorted(name for name in modules if name.startswith("logphase.cli.")) == []


@pytest.mark.slow
def test_a_small_log_is_analysed_without_the_deferred_modules(tmp_path: Path) -> None:
    # GIVEN the packs and scan plan in the cache (a run before filled it)
    args = ["analyze", "--post-mortem", str(SMALL_LOG)]
    _modules_after(args, tmp_path)
    # WHEN a small log without stack dumps is analysed into the terminal table
    modules = _modules_after(args, tmp_path)
    # THEN it was analysed (the pipeline ran) without any deferred module
    assert {"logphase.pipeline", "logphase.report.formats.table", "logphase.report.text_table"} <= modules
    assert sorted(modules & set(DEFERRED)) == []


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_log_with_a_stack_dump_imports_the_dump_parser(tmp_path: Path) -> None:
    # GIVEN a log with a faulthandler dump printed into it
    log = tmp_path / "dump.log"
    log.write_text(
        "[2026-04-21 09:16:16 TP0] Load weight begin.\n"
        "Fatal Python error: Segmentation fault\n\n"
        'Current thread 0x00007f0000000001 (most recent call first):\n  File "/x/model_runner.py", line 12 in load\n'
    )
    # WHEN it is analysed
    modules = _modules_after(["analyze", "--post-mortem", str(log)], tmp_path / "cache")
    # THEN the dump parser and the stack model were imported to read it
    assert {"logphase.stacks.dumps", "logphase.stacks.model", "logphase.judging.stalls"} <= modules
