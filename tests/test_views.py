"""The lines behind a verdict (`analyze --rank --phase --since --until --tail -C`) and `--format line`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase.report.formats import OutputFormat, pick
from logphase.report.formats.line import one_line
from tests.conftest import run_cli

# SGLang's own lines (scheduler.py / model_runner.py wording): TP1 never ends its capture; line 7 no rule knows
LOG = (
    "[2025-06-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2025-06-01 10:00:00 TP1] Init torch distributed begin.\n"
    "[2025-06-01 10:00:20 TP0] Init torch distributed ends. mem usage=0.50 GB\n"
    "[2025-06-01 10:00:20 TP1] Init torch distributed ends. mem usage=0.50 GB\n"
    "[2025-06-01 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.55 GB\n"
    "[2025-06-01 10:01:00 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=14.55 GB\n"
    "[2025-06-01 10:01:05 TP1] Something the packs do not know\n"
    "[2025-06-01 10:02:00 TP0] Capture cuda graph end. Time elapsed: 60.00 s. mem usage=0.52 GB. avail mem=14.03 GB.\n"
)
LINES = LOG.splitlines()
VERDICT = "stalled | cuda_graph | TP0 | the log ends during cuda_graph with no error (line 8) | server.log:8\n"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # paths are printed as given: `server.log`
    path = tmp_path / "server.log"
    path.write_text(LOG)
    return path


def analyze(*args: str) -> tuple[int, str, str]:
    result = run_cli("analyze", "--post-mortem", "server.log", *args)
    return result.exit_code, result.stdout, result.stderr


def test_one_rank_in_one_phase_shows_its_lines_with_what_each_counts_as(log: Path) -> None:
    # GIVEN TP1's capture that never ended, and a line of TP1 no rule knows inside it
    # WHEN the lines of TP1 in cuda_graph are asked for
    code, out, err = analyze("--rank", "TP1", "--phase", "cuda_graph")
    # THEN grep's `path:line`, the rank, what the line counts as (the unknown line: the phase TP1 was in), the line;
    # the verdict in one line on stderr and its exit code
    assert out.splitlines() == [
        f"server.log:6  TP1  cuda_graph begin  {LINES[5]}",
        f"server.log:7  TP1  in cuda_graph     {LINES[6]}",
    ]
    assert (code, err) == (4, VERDICT)


def test_tail_and_context_mark_the_lines_around_as_grep_does(log: Path) -> None:
    # WHEN the last line of TP1 is asked for with a line of context either side
    _, out, _ = analyze("--rank", "TP1", "--tail", "1", "-C", "1")
    # THEN the chosen line has `:`, the lines around it `-` (whoever wrote them)
    assert out.splitlines() == [
        f"server.log-6  TP1  cuda_graph begin  {LINES[5]}",
        f"server.log:7  TP1  in cuda_graph     {LINES[6]}",
        f"server.log-8  TP0  cuda_graph end    {LINES[7]}",
    ]


def test_a_line_is_shown_once_where_groups_of_context_meet(log: Path) -> None:
    # WHEN TP1's dist-init lines (2 and 4) are asked for with a line of context: their groups meet at 3
    _, out, _ = analyze("--rank", "TP1", "--phase", "dist_init", "-C", "1")
    # THEN one group, each line once, line 3 a context line and line 4 chosen
    assert [line.split()[0] for line in out.splitlines()] == [
        "server.log-1",
        "server.log:2",
        "server.log-3",
        "server.log:4",
        "server.log-5",
    ]


def test_groups_of_context_apart_are_separated_by_two_dashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN TP0's lines 1 and 6, and TP1's between them
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.log").write_text(
        "[2025-06-01 10:00:00 TP0] Init torch distributed begin.\n"
        "[2025-06-01 10:00:00 TP1] Init torch distributed begin.\n"
        "[2025-06-01 10:00:20 TP1] Init torch distributed ends. mem usage=0.50 GB\n"
        "[2025-06-01 10:00:21 TP1] one\n"
        "[2025-06-01 10:00:22 TP1] two\n"
        "[2025-06-01 10:00:23 TP0] Init torch distributed ends. mem usage=0.50 GB\n"
    )
    # WHEN TP0's lines are asked for with a line of context; and without context
    _, context, _ = analyze("--rank", "TP0", "-C", "1")
    _, bare, _ = analyze("--rank", "TP0")
    # THEN `--` between lines 2 and 5, as grep -C writes it; none without context
    assert [line.split()[0] for line in context.splitlines()] == [
        "server.log:1",
        "server.log-2",
        "--",
        "server.log-5",
        "server.log:6",
    ]
    assert [line.split()[0] for line in bare.splitlines()] == ["server.log:1", "server.log:6"]


def test_since_and_until_take_a_time_of_day_or_a_date_and_time(log: Path) -> None:
    # WHEN the lines from 10:01 (on the log's date) to 10:01:30 are asked for
    _, out, _ = analyze("--since", "10:01", "--until", "2025-06-01 10:01:30")
    # THEN the three lines stamped in that minute's first half
    assert [line.split()[0] for line in out.splitlines()] == ["server.log:5", "server.log:6", "server.log:7"]


def test_no_line_chosen_says_so_and_keeps_the_exit_code(log: Path) -> None:
    code, out, err = analyze("--rank", "TP7")
    assert (code, out) == (4, "")
    assert err.splitlines() == ["logphase: no line of 8 read was chosen", VERDICT.strip()]


def test_the_untagged_process_is_main_and_a_line_without_prefix_is_its_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a line of TP0, then a traceback with no prefix (the matcher gives it no rank: the main process's),
    # whose frame line no rule reads
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.log").write_text(
        "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2025-06-01 10:00:01 TP0] Init torch distributed begin.\n"
        "[2025-06-01 10:00:02 TP0] Not a line any rule knows\n"
        "    and its second line\n"
        "Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 10, in run_scheduler_process\n'
        "RuntimeError: boom\n"
    )
    # WHEN the main process's lines, and TP0's, are asked for
    _, main, _ = analyze("--rank", "main")
    _, tp0, _ = analyze("--rank", "TP0")
    # THEN the traceback is main's as the analysis reads it, the unprefixed second line TP0's (its writer's)
    assert [line.split()[0] for line in main.splitlines()] == [f"server.log:{n}" for n in (1, 5, 6, 7)]
    assert [line.split()[0] for line in tp0.splitlines()] == [f"server.log:{n}" for n in (2, 3, 4)]


def test_view_as_json_carries_each_line_and_the_analysis(log: Path) -> None:
    code, out, _ = analyze("--rank", "TP1", "--phase", "cuda_graph", "--tail", "1", "--format", "json")
    document = json.loads(out)
    assert document["schema"] == "logphase.view/1"
    assert document["lines"] == [
        {
            "path": "server.log",
            "line": 7,
            "rank": "TP1",
            "phase": "cuda_graph",
            "time": "2025-06-01 10:01:05",
            "text": LINES[6],
            "events": [],
            "chosen": True,
        }
    ]
    assert (document["analysis"]["verdict"], document["left_out"], code) == ("stalled", 0, 4)


def test_view_as_markdown_is_the_verdict_and_a_text_block(log: Path) -> None:
    _, out, _ = analyze("--rank", "TP1", "--tail", "1", "--format", "markdown")
    assert out == f"**{VERDICT.strip()}**\n\n```text\nserver.log:7  TP1  in cuda_graph  {LINES[6]}\n```\n"


def test_a_bar_redrawn_with_carriage_returns_is_one_line_and_one_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a weight-loading bar redrawn three times on one physical line (tqdm's `\r`), after TP0's begin
    monkeypatch.chdir(tmp_path)
    bar = "Loading safetensors checkpoint shards:  {0}% Completed | {1}/4 [00:0{1}<00:00,  1.00it/s]"
    (tmp_path / "server.log").write_text(
        "[2025-06-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"
        + "\r".join(bar.format(25 * n, n) for n in (1, 2, 3))
        + "\n"
    )
    _, out, _ = analyze("--phase", "weight_load")
    # THEN line 2 once, as its last redraw reads, counted once as weight_load progress of TP0 (tqdm bars are
    # the lowest rank's)
    assert out.splitlines() == [
        "server.log:1  TP0  weight_load begin     [2025-06-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB",
        f"server.log:2  TP0  weight_load progress  {bar.format(75, 3)}",
    ]


def test_format_line_is_one_line_for_prompts_and_probes(log: Path) -> None:
    code, out, err = analyze("--format", "line")
    assert (code, out, err) == (4, VERDICT, "")


def test_one_line_never_holds_its_separator_or_a_line_break() -> None:
    assert one_line("crashed", None, "TP1", "a | b\nc", "x.log:3") == "crashed | - | TP1 | a / b c | x.log:3\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "logphase: error: --since 'yesterday' is not a time"),
        (("--rank", "TP1", "--format", "html"), "logphase: error: the lines behind the verdict have no html form"),
    ],
)
def test_bad_view_options_are_usage_errors_with_a_hint(log: Path, args: tuple[str, ...], message: str) -> None:
    code, out, err = analyze(*args)
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == message
    assert err.splitlines()[1].startswith("  hint: ")


def test_a_phase_that_is_no_phase_is_refused_with_the_choices(log: Path) -> None:
    code, _, err = analyze("--phase", "capture")
    assert code == 2
    assert "'capture' is not one of 'launch', 'tokenizer'" in err


def test_line_format_is_a_format_of_every_document() -> None:
    assert OutputFormat("line") is OutputFormat.LINE
    assert pick(OutputFormat.LINE).runs([], db=None) == ""
