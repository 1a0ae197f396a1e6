"""The runs renderers (`runs list`, `runs show`): exact table, markdown and JSON for two hand-made runs.

The expected text follows tabulate's formats: a column is as wide as its widest cell or its header plus
two; numbers align right, text left; markdown pads every cell to the column, the terminal tables end each
line at its last character."""

from __future__ import annotations

import json
from pathlib import Path

from logphase.report.runs import (
    render_run_json,
    render_run_markdown,
    render_run_table,
    render_runs_json,
    render_runs_markdown,
    render_runs_table,
)
from tests.baselines.sample_runs import HUNG, READY

HUNG_JSON = {
    "id": 2,
    "recorded_at": "2026-05-02 09:00:00",
    "outcome": "hung",
    "verdict": "stalled",
    "label": "hung",
    "fingerprint": {
        "system": "sglang",
        "version": "0.5.2",
        "model_path": "Qwen/Qwen3-32B",
        "tp_size": 2,
        "pp_size": None,
        "dp_size": None,
        "ep_size": None,
        "speculative_algorithm": None,
        "draft_model_path": None,
        "gpu_name": None,
        "gpu_count": None,
        "nccl_version": None,
    },
    "lines": 30,
    "stop_point": {"phase": "cuda_graph", "line": 30, "milestone": "cuda_graph:begin"},
    "last_text": "Capture cuda graph begin.",
    "ready_s": None,
    "started": "2026-05-02 08:58:00",
    "paths": ["n0.log", "n1.log"],
    "content_hash": "feedc0de12345678" * 4,
    "phases": [
        {"phase": "weight_load", "start_s": 0.0, "seconds": 96.0, "start_line": 3, "end_line": 20, "ended": True},
        {"phase": "cuda_graph", "start_s": 101.0, "seconds": None, "start_line": 25, "end_line": 30, "ended": False},
    ],
}


def test_runs_list_as_a_table() -> None:
    # GIVEN a ready run and a labelled hung run of two logs
    # WHEN the list is rendered as a terminal table
    table = render_runs_table([READY, HUNG])
    # THEN one row per run, newest last as given: its verdict and its label apart (a label never hides the
    # verdict), setup, where it stopped, ready time, logs
    assert table.split("\n") == [
        "  id  recorded             verdict    label    setup          stopped         ready in    log",
        "----  -------------------  ---------  -------  -------------  --------------  ----------  --------------",
        "   1  2026-05-01 10:05:00  ready               Qwen3-32B TP2  ready @43       3m32s       1.log",
        "   2  2026-05-02 09:00:00  stalled    hung     Qwen3-32B TP2  cuda_graph @30              n0.log, n1.log",
    ]


def test_runs_list_as_markdown() -> None:
    markdown = render_runs_markdown([READY, HUNG])
    assert markdown.split("\n") == [
        "|   id | recorded            | verdict   | label   | setup         "
        "| stopped        | ready in   | log            |",
        "|------|---------------------|-----------|---------|---------------"
        "|----------------|------------|----------------|",
        "|    1 | 2026-05-01 10:05:00 | ready     |         | Qwen3-32B TP2 "
        "| ready @43      | 3m32s      | 1.log          |",
        "|    2 | 2026-05-02 09:00:00 | stalled   | hung    | Qwen3-32B TP2 "
        "| cuda_graph @30 |            | n0.log, n1.log |",
    ]


def test_runs_list_as_json_names_the_store_it_read() -> None:
    # GIVEN the two runs read from /data/runs.db
    # WHEN the list is rendered as JSON, and as JSON where no store exists yet
    listed = render_runs_json([READY, HUNG], db=Path("/data/runs.db"))
    empty = render_runs_json([], db=None)
    # THEN the document carries the schema, the store and every run; with no store, no store is named
    document = json.loads(listed)
    assert (document["schema"], document["db"], [run["id"] for run in document["runs"]]) == (
        "logphase.runs/1",
        "/data/runs.db",
        [1, 2],
    )
    assert document["runs"][1] == HUNG_JSON
    assert listed == json.dumps(document, indent=2)
    assert empty == '{\n  "schema": "logphase.runs/1",\n  "runs": []\n}'


def test_runs_show_as_a_table() -> None:
    # GIVEN the hung run
    # WHEN it is shown as a terminal table
    table = render_run_table(HUNG)
    # THEN its facts (the verdict and the label apart, each known setup fact, where it stopped in the phase
    # names of the analysis report, a shortened hash), a blank line,
    # and its phases with when each began after the first line and how long it took (? while it never ended)
    assert table.split("\n") == [
        "run           2",
        "recorded      2026-05-02 09:00:00",
        "verdict       stalled",
        "label         hung",
        "setup         Qwen3-32B TP2",
        "system        sglang",
        "version       0.5.2",
        "model path    Qwen/Qwen3-32B",
        "tp size       2",
        "lines         30",
        "stopped       in cuda_graph, at line 30",
        "last line     Capture cuda graph begin.",
        "ready in      -",
        "log           n0.log, n1.log",
        "content hash  feedc0de12345678",
        "",
        "phase        began after    took      first line    last line  ended",
        "-----------  -------------  ------  ------------  -----------  -------",
        "weight_load  0s             1m36s              3           20  yes",
        "cuda_graph   1m41s          ?                 25           30  no",
    ]


def test_runs_show_as_markdown() -> None:
    markdown = render_run_markdown(HUNG)
    assert markdown.split("\n") == [
        "|--------------|---------------------------|",
        "| run          | 2                         |",
        "| recorded     | 2026-05-02 09:00:00       |",
        "| verdict      | stalled                   |",
        "| label        | hung                      |",
        "| setup        | Qwen3-32B TP2             |",
        "| system       | sglang                    |",
        "| version      | 0.5.2                     |",
        "| model path   | Qwen/Qwen3-32B            |",
        "| tp size      | 2                         |",
        "| lines        | 30                        |",
        "| stopped      | in cuda_graph, at line 30 |",
        "| last line    | Capture cuda graph begin. |",
        "| ready in     | -                         |",
        "| log          | n0.log, n1.log            |",
        "| content hash | feedc0de12345678          |",
        "",
        "| phase       | began after   | took   |   first line |   last line | ended   |",
        "|-------------|---------------|--------|--------------|-------------|---------|",
        "| weight_load | 0s            | 1m36s  |            3 |          20 | yes     |",
        "| cuda_graph  | 1m41s         | ?      |           25 |          30 | no      |",
    ]


def test_runs_show_as_json() -> None:
    shown = render_run_json(HUNG)
    assert shown == json.dumps({"schema": "logphase.runs/1", **HUNG_JSON}, indent=2)


def test_a_ready_run_without_a_label_shows_its_verdict_alone_and_its_ready_time() -> None:
    facts = dict(line.split("  ", 1) for line in render_run_table(READY).split("\n\n")[0].split("\n"))
    assert (facts["verdict"].strip(), facts["label"].strip(), facts["ready in"].strip()) == ("ready", "-", "3m32s")
    assert facts["stopped"].strip() == "in ready, at line 43"
