"""Leading columns no listed envelope names (envelope.LEARNED), learned per source: a log pasted with one reads as
the log without it; a log whose own lines merely start like one keeps them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

# A torchrun job that a watchdog ends (torch 2.6 formats): each line the packs read.
TORCH = [
    "[rank1]:[E1218 20:27:21.426871257 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=216, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for "
    "600021 milliseconds before timing out.",
    "[rank1]:[E1218 20:27:21.427001012 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception "
    "(either an error or timeout) detected by watchdog at work: 216, last enqueued NCCL work: 216, last completed "
    "NCCL work: 215.",
    "W1218 20:27:24.182000 4021 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4086 closing "
    "signal SIGTERM",
    "W1218 20:27:24.183000 4021 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4088 closing "
    "signal SIGTERM",
    "E1218 20:27:25.101000 4021 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
    "local_rank: 1 (pid: 4087) of binary: /usr/bin/python3",
]

COLUMNS = {
    # a log viewer's time of day (Grafana, a web console)
    "time-of-day": lambda n, line: f"20:27:{21 + n:02d}.{100 + n:03d} {line}",
    # a report or ticket that indents the log behind a rule
    "table rule": lambda n, line: f"            | {line}",
    # k9s's log view
    "box rule": lambda n, line: f"│ {line}",
    # a collector's minute stamp
    "date and minute": lambda n, line: f" 2025-12-18 20:27 {line}",
    # a launcher's role label (torchx, NeMo-Run)
    "role label": lambda n, line: f"[trainer0|{n % 2}]:{line}",
    # a replica label (torchx on Ray, NeMo-Run)
    "replica label": lambda n, line: f"job_2fa1/0 {line}",
    # a web table's row copied as tab-separated cells, the first two empty
    "empty tab cells": lambda n, line: f"\t\t{line}",
    # markdown's indented code block (CommonMark 4.4), a paste quoted without fences
    "indented code block": lambda n, line: f"    {line}",
    # a markdown list item's lines (CommonMark 5.2: indented by the marker's width), under `- ` and under `1. `
    "list item": lambda n, line: f"  {line}",
    "numbered list item": lambda n, line: f"   {line}",
    # a markdown table's empty cells before the text
    "empty table cells": lambda n, line: f"|  | {line}",
    # Buildkite's log view: an empty line-number cell, then its rule
    "empty cell and rule": lambda n, line: f"  | {line}",
    # pdsh's `hostname: ` (pdsh(1) `-N`), two nodes
    "pdsh host": lambda n, line: f"gpu{1504 + n % 2}: {line}",
}


def _analyze(tmp_path: Path, name: str, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


def _answer(report: dict[str, Any]) -> tuple[object, ...]:
    root = report["root_cause"]
    return report["verdict"], report["phase"], report["culprit_ranks"], root["line"] if root else None


@pytest.mark.parametrize("column", sorted(COLUMNS))
def test_a_log_pasted_with_a_leading_column_reads_as_the_log(tmp_path: Path, column: str) -> None:
    # GIVEN the torchrun log, and the same log with a leading column on every line
    plain = _analyze(tmp_path, "plain", TORCH)
    wrapped = _analyze(tmp_path, "wrapped", [COLUMNS[column](n, line) for n, line in enumerate(TORCH)])
    # WHEN both are analysed THEN the same answer, and a note says which column was taken off
    assert _answer(wrapped) == _answer(plain)
    assert plain["verdict"] == "timeout"
    assert any("lines unwrapped from:" in note for note in wrapped["notes"])


def test_a_log_whose_own_stamp_starts_like_a_column_keeps_it(tmp_path: Path) -> None:
    # GIVEN LMDeploy's own `%(asctime)s - lmdeploy - LEVEL - file:N - msg` lines (a date and time first)
    lines = [
        "2024-12-02 10:00:01,512 - lmdeploy - INFO - async_engine.py:266 - input backend=turbomind, backend_config="
        "TurbomindEngineConfig(dtype='auto', model_format=None, tp=2)",
        "2024-12-02 10:00:02,115 - lmdeploy - INFO - async_engine.py:268 - input chat_template_config=None",
        "2024-12-02 10:00:03,001 - lmdeploy - INFO - turbomind.py:301 - turbomind model config:",
    ]
    # WHEN analysed THEN no column is taken off: the packs read the lines as they are
    report = _analyze(tmp_path, "lmdeploy", lines)
    assert not any("lines unwrapped from:" in note for note in report["notes"])
    assert report["system"] == "lmdeploy"


@pytest.mark.parametrize("column", ["\t\t", "|  | ", "  | "])
def test_a_traceback_alone_pasted_with_empty_cells_reads_as_the_traceback(tmp_path: Path, column: str) -> None:
    # GIVEN a traceback alone (no line of it a pack's prefix or rule), and the same behind empty leading cells
    traceback = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/sglang/python/sglang/launch_server.py", line 19, in <module>',
        "    raise e",
        "RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call last):",
    ]
    plain = _analyze(tmp_path, "plain", traceback)
    wrapped = _analyze(tmp_path, "wrapped", [f"{column}{line}" for line in traceback])
    # WHEN both are analysed THEN the same answer: the cells hold nothing, so they come off
    assert _answer(wrapped) == _answer(plain)
    assert plain["root_cause"]["text"].startswith("RuntimeError: Initialization failed.")


def test_a_line_alone_pasted_in_a_markdown_list_reads_as_the_line(tmp_path: Path) -> None:
    # GIVEN SGLang's shard bar at its end (`Loading safetensors checkpoint shards: 100% Completed | N/N`, printed
    # unprefixed), the one line of a paste inside a list item: two spaces before it (realworld 1053's layout)
    line = "Loading safetensors checkpoint shards: 100% Completed | 163/163"
    # WHEN analysed
    report = _analyze(tmp_path, "listed", [f"  {line}"])
    # THEN the line is read: the log ends in weight_load (nothing after the bar), quoted at line 1
    assert (report["phase"], report["verdict"]) == ("weight_load", "stalled"), report["reason"]
    assert report["root_cause"]["line"] == 1
    assert any("lines unwrapped from:" in note for note in report["notes"])


def test_a_launchers_argument_dump_keeps_its_own_indentation(tmp_path: Path) -> None:
    # GIVEN TGI's launcher printing its arguments (`Args {` then one field a line, four spaces in) between records
    lines = [
        "2025-05-01T01:29:56.034102Z  INFO text_generation_launcher: Args {",
        '    model_id: "mistralai/Mistral-7B-Instruct-v0.3",',
        "    revision: None,",
        "    sharded: None,",
        "    num_shard: Some(",
        "        2,",
        "    ),",
        "}",
        "2025-05-01T01:29:56.034200Z  INFO download: text_generation_launcher: Starting check and download process",
    ]
    # WHEN analysed THEN no column is taken off: its record lines start at the margin
    report = _analyze(tmp_path, "tgi", lines)
    assert not any("lines unwrapped from:" in note for note in report["notes"])
    assert report["system"] == "tgi"


# --- a writer's label never swallows a known message's own leading words ---------------------------------------------


def _stamped(lines: list[str]) -> str:
    """Lines behind `docker logs -t` / `kubectl logs --timestamps` stamps (RFC 3339 with nanoseconds, a space)."""
    return "".join(f"2024-03-04T05:06:{7 + n:02d}.{123456789 + n}Z {line}\n" for n, line in enumerate(lines))


def test_lightning_init_lines_behind_docker_stamps_keep_their_words(tmp_path: Path) -> None:
    # GIVEN a 4-rank Lightning job's set-up behind docker's stamps (lightning_fabric `seed_everything` through
    # `rank_prefixed_message`; `_init_dist_connection`'s `Initializing distributed: GLOBAL_RANK: r, MEMBER: r+1/n`):
    # its two-word `Initializing distributed: ` reads as journald's `host ident: ` on every line but the seed lines
    lines = []
    for rank in range(2):
        lines += [
            f"[rank: {rank}] Seed set to 7",
            f"Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/4",
        ]
    log = tmp_path / "lightning.log"
    log.write_text(_stamped(lines))
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the stamps alone are taken off: the init line is read whole, the job stalled in dist_init
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init")
    assert report["root_cause"]["text"].endswith("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4")
    assert not any("journald" in note for note in report["notes"])


def test_a_vllm_offline_bar_behind_kubectl_stamps_keeps_its_words(tmp_path: Path) -> None:
    # GIVEN vLLM's offline run behind `kubectl logs --timestamps`: its engine line, then LLM.generate's tqdm bar
    # (`Processed prompts: ` + tqdm's `100%|…| n/n [elapsed<remaining, rate]`), whose two words read as `host ident: `
    lines = [
        "INFO 12-20 10:25:22 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) with config: model='m'",
        "Processed prompts: 100%|██████████| 8/8 [00:02<00:00,  3.51it/s, est. speed input: 40.1 toks/s, "
        "output: 120.3 toks/s]",
    ]
    log = tmp_path / "offline.log"
    log.write_text(_stamped(lines))
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the bar is read whole as the plain log's is: the offline job finished its prompts
    plain = tmp_path / "plain.log"
    plain.write_text("".join(f"{line}\n" for line in lines))
    _, bare = run_json("analyze", str(plain), "--post-mortem")
    assert report["verdict"] == bare["verdict"] == "finished"
    assert report["root_cause"] == bare["root_cause"]


def test_a_journal_whose_labels_are_hosts_and_units_is_still_a_journal(tmp_path: Path) -> None:
    # GIVEN a `journalctl -o short-iso` export of a vLLM unit (`TS host ident[pid]: message`)
    lines = [
        "INFO 12-20 10:25:22 llm_engine.py:234] Initializing an LLM engine (v0.6.6.post1) with config: model='m'",
        "INFO 12-20 10:25:30 model_runner.py:1094] Starting to load model m...",
    ]
    log = tmp_path / "journal.log"
    unit = "gpu-node-3 python3[4411]: "
    log.write_text("".join(f"2024-12-20T10:25:{22 + n}+0000 {unit}{line}\n" for n, line in enumerate(lines)))
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN the journal's column is taken off and the lines read
    assert any("journald" in note for note in report["notes"])
    assert report["phase"] == "weight_load"
