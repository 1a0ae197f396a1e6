"""`runs add|list|show` as an operator uses them (issue 30): a label beside the verdict, never instead of it; the
list newest first, filtered, with logs stored by their absolute paths; `runs show` in the analysis report's words."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from logphase.cli import main
from tests.baselines.test_migrations import COMMITTED
from tests.conftest import FIXTURES
from tests.report.test_table_width import table_lines

SGLANG = FIXTURES / "logs" / "sglang"
# Labelled stalled (expected.json): the draft CUDA-graph capture froze after the target's graphs (247 lines)
HUNG = SGLANG / "eagle3-tp8-hung-cuda-graph-247.log"
READY = SGLANG / "tp8-ready-serving.log"  # ready, Qwen2.5-72B-Instruct TP8
OOM = SGLANG / "not-enough-memory-kv-cache.log"  # crashed, Qwen2.5-32B-Instruct
VLLM = FIXTURES / "logs" / "vllm" / "offline-generate-finished.log"  # finished, vLLM


def cli(*args: str, columns: int = 200) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"}, catch_exceptions=False)


def listed(db: Path, *options: str) -> list[dict[str, object]]:
    result = cli("runs", "list", "--db", str(db), "--format", "json", *options)
    assert result.exit_code == 0, result.output
    runs: list[dict[str, object]] = json.loads(result.stdout)["runs"]
    return runs


def facts(db: Path, run_id: int) -> dict[str, str]:
    """`runs show`'s facts table: name → value."""
    shown = cli("runs", "show", str(run_id), "--db", str(db)).stdout.split("\n\n")[0]
    return {name: value.strip() for name, value in (line.split("  ", 1) for line in shown.splitlines())}


def test_a_label_is_shown_beside_the_verdict_and_never_replaces_it(tmp_path: Path) -> None:
    # GIVEN the hung EAGLE3 log recorded with the label hung (its verdict is stalled)
    db = tmp_path / "runs.db"
    added = cli("runs", "add", str(HUNG), "--label", "hung", "--db", str(db))
    # THEN the line that says so names both
    assert added.stderr.splitlines() == ["recorded run 1: stalled (labelled hung), Llama-3.3-70B-Instruct TP8 EAGLE3"]
    # AND the list has a verdict column and a label column
    lines = table_lines(cli("runs", "list", "--db", str(db)).stdout)
    assert lines[0].split() == ["id", "recorded", "verdict", "label", "setup", "stopped", "ready", "in", "log"]
    assert lines[2].split()[3:5] == ["stalled", "hung"]
    # AND runs show says each on its own line
    shown = facts(db, 1)
    assert (shown["verdict"], shown["label"]) == ("stalled", "hung")
    # AND the JSON keeps both, and the outcome (the label where there is one)
    run = listed(db)[0]
    assert (run["verdict"], run["label"], run["outcome"]) == ("stalled", "hung", "hung")
    # AND the one-line format puts the verdict in the verdict's place and the label in the reason
    line = cli("runs", "list", "--db", str(db), "--format", "line").stdout.split(" | ")
    assert (line[0], line[3].startswith("run 1 (labelled hung): Capturing batches")) == ("stalled", True)


def test_a_store_made_by_the_first_schema_opens_with_its_rows_and_shows_label_and_verdict(tmp_path: Path) -> None:
    # GIVEN a store file made by schema 1's own SQL (as logphase 1.x made it), with a labelled run whose log
    # path was stored as it was typed
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as connection:
        connection.executescript((COMMITTED / "step-1.sql").read_text())
        connection.execute("PRAGMA application_id = 1819306099")
        connection.execute("PRAGMA user_version = 1")
        connection.execute(
            "INSERT INTO runs (content_hash, head_hash, paths, recorded_at, fingerprint_key, system, model_path, "
            "verdict, label, lines, stop_phase, stop_ended, stop_draft_after, stop_line, last_text) VALUES "
            "('c1', 'h1', '[\"logs/old.log\"]', '2026-01-05 08:00:00', 'k', 'sglang', 'Qwen/Qwen3-8B', "
            "'stalled', 'hung', 99, 'cuda_graph', 1, 1, 99, 'Capturing batches')"
        )
    # WHEN this logphase lists and shows it
    runs = listed(db)
    shown = facts(db, 1)
    # THEN the run is there as it was stored: its verdict, its label, its path as typed then
    assert [(r["id"], r["verdict"], r["label"], r["paths"]) for r in runs] == [(1, "stalled", "hung", ["logs/old.log"])]
    assert (shown["verdict"], shown["label"], shown["log"]) == ("stalled", "hung", "logs/old.log")
    # AND where it stopped is said in the phase names of the analysis report, not as `cuda_graph:end+draft_init`
    assert shown["stopped"] == "after cuda_graph, then in draft_init, at line 99"


def test_runs_show_says_where_a_run_stopped_in_the_words_of_the_analysis(tmp_path: Path) -> None:
    # GIVEN the hung EAGLE3 log (the target's graphs done, the draft model's init begun, then frozen at line 247)
    # and an OOM log that crashed in kv_cache at line 43 of 45
    db = tmp_path / "runs.db"
    cli("runs", "add", str(HUNG), str(OOM), "--db", str(db))
    # WHEN each is shown THEN `stopped` uses the phase names analyze's phase table uses
    assert facts(db, 1)["stopped"] == "after cuda_graph, then in draft_init, at line 247"
    oom = facts(db, 2)
    assert oom["stopped"].startswith("in kv_cache, at line ")
    assert ":" not in oom["stopped"] and "+" not in facts(db, 1)["stopped"]


def test_runs_list_is_newest_first_and_takes_filters(tmp_path: Path) -> None:
    # GIVEN four runs recorded one after the other: ready (SGLang Qwen2.5-72B), hung (labelled, SGLang Llama),
    # crashed (SGLang Qwen2.5-32B), finished (vLLM)
    db = tmp_path / "runs.db"
    cli("runs", "add", str(READY), "--db", str(db))
    cli("runs", "add", str(HUNG), "--label", "hung", "--db", str(db))
    cli("runs", "add", str(OOM), "--db", str(db))
    cli("runs", "add", str(VLLM), "--db", str(db))

    def ids(*options: str) -> list[object]:
        return [run["id"] for run in listed(db, *options)]

    # THEN the list is newest first
    assert ids() == [4, 3, 2, 1]
    # AND each filter keeps the runs it names: an outcome is the verdict or the label, in any case
    assert ids("--outcome", "hung") == [2]
    assert ids("--outcome", "STALLED") == [2]
    assert ids("--outcome", "crashed") == [3]
    assert ids("--label", "hung") == [2]
    assert ids("--label", "stalled") == []
    assert ids("--system", "vllm") == [4]
    assert ids("--system", "sglang") == [3, 2, 1]
    assert ids("--model", "qwen2.5") == [3, 1]
    assert ids("--model", "qwen2.5", "--limit", "1") == [3]
    assert ids("--limit", "2") == [4, 3]
    # AND a filter that matches nothing says so, apart from an empty store
    nothing = cli("runs", "list", "--db", str(db), "--label", "nope")
    assert (nothing.exit_code, nothing.stdout, nothing.stderr) == (0, "", f"no recorded run matches ({db})\n")


@pytest.mark.parametrize("limit", ["0", "-1", "x"])
def test_runs_list_refuses_a_limit_that_is_no_count(tmp_path: Path, limit: str) -> None:
    result = cli("runs", "list", "--db", str(tmp_path / "runs.db"), "--limit", limit)
    assert result.exit_code == 2
    assert "--limit" in result.stderr


def test_logs_are_recorded_by_their_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a log in a folder, recorded from inside it by a relative path, and through a link to it
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(HUNG, folder / "hung.log")
    (folder / "link.log").symlink_to(folder / "hung.log")
    db = tmp_path / "runs.db"
    monkeypatch.chdir(folder)
    cli("runs", "add", "hung.log", "--db", str(db))
    cli("runs", "add", "./link.log", str(READY), "--db", str(db))
    # THEN the store holds where it is, from any folder; the link is the log it points to (the same run)
    monkeypatch.chdir(tmp_path)
    assert [run["paths"] for run in listed(db)] == [[str(READY.resolve())], [str((folder / "hung.log").resolve())]]
    assert os.path.isabs(facts(db, 1)["log"])


def test_runs_tables_fit_80_columns(tmp_path: Path) -> None:
    # GIVEN runs with long paths and long setups
    db = tmp_path / "runs.db"
    cli("runs", "add", str(READY), str(HUNG), str(OOM), str(VLLM), "--db", str(db))
    # WHEN listed on an 80-column terminal THEN no table line is wider
    lines = table_lines(cli("runs", "list", "--db", str(db), columns=80).stdout)
    assert len(lines) == 6
    assert [line for line in lines if len(line) > 80] == []
    # AND runs show, its facts (a long last line, an absolute path) cut with an ellipsis, its phases whole
    shown = cli("runs", "show", "2", "--db", str(db), columns=80).stdout.splitlines()
    assert [line for line in shown if len(line) > 80] == []
    assert any(line.startswith("last line") and line.endswith("…") for line in shown)
    wide = cli("runs", "show", "2", "--db", str(db), columns=300).stdout.splitlines()
    assert f"log                    {HUNG.resolve()}" in wide
