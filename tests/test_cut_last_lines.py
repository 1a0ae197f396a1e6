"""A paste cut while the program printed a step's line (issue 25): the log's last line, which no rule reads, begins
the text every line of a rule starts with (its leading literal) and ends inside it. Written from TGI's router format
(router/src/logging.rs: `<RFC 3339 stamp>  INFO text_generation_router: <file>:<line>: <message>`, `Warming up model`
before the Warmup RPC) and the launcher's."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text

_STARTED = [
    "2023-07-14T01:44:48.433000Z  INFO text_generation_launcher: Starting shard 0",
    "2023-07-14T01:45:00.257293Z  INFO text_generation_launcher: Shard 0 ready in 11.823529818s",
    "2023-07-14T01:45:00.352230Z  INFO text_generation_launcher: Starting Webserver",
]
_ROUTER = "2023-07-14T01:45:01.248137Z  INFO text_generation_router: router/src/main.rs:212: "


def test_a_last_line_cut_inside_the_routers_warming_up_places_the_warmup_at_low_confidence(tmp_path: Path) -> None:
    # GIVEN a TGI start whose paste ends inside the router's `Warming up model` (`Warming u`)
    text = "\n".join([*_STARTED, _ROUTER + "Warming u"]) + "\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the run reached the warmup, said at low confidence, naming the cut line and the text it was cut from
    assert report["phase"] == "warmup"
    assert report["confidence"] == "low"
    assert "cut inside `Warming up model`" in report["reason"]
    assert "line 4" in report["reason"]


def test_a_cut_that_holds_no_whole_word_of_the_lead_or_stands_before_other_lines_places_nothing(
    tmp_path: Path,
) -> None:
    # GIVEN the same start ending in `Warmin` (no whole word), and one whose `Warming u` line is followed by the
    # launcher's next line (a line in the middle of a log is no paste's cut)
    (tmp_path / "short").mkdir()
    (tmp_path / "middle").mkdir()
    short = "\n".join([*_STARTED, _ROUTER + "Warmin"]) + "\n"
    middle = "\n".join(
        [
            *_STARTED,
            _ROUTER + "Warming u",
            "2023-07-14T01:45:02.000000Z  INFO text_generation_launcher: Waiting for shard to be ready... rank=0",
        ]
    )
    # WHEN each is judged
    reports = [judge_text(tmp_path / "short", short), judge_text(tmp_path / "middle", middle + "\n")]
    # THEN neither placed the warmup: the webserver's start is the furthest step a line says
    assert [report["phase"] for report in reports] == ["http_start", "http_start"]


def test_a_cut_inside_a_line_of_a_step_a_whole_line_placed_changes_nothing(tmp_path: Path) -> None:
    # GIVEN a shard waiting (the launcher's `Waiting for shard to be ready... rank=0`), and the same log with the paste
    # cut inside that line printed again
    lines = [
        "2024-06-28T11:29:18.100000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
        "2024-06-28T11:29:28.227565Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... "
        "rank=0",
    ]
    cut = "2024-06-28T11:29:28.329419Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be"
    (tmp_path / "whole").mkdir()
    (tmp_path / "cut").mkdir()
    # WHEN both are judged
    whole = judge_text(tmp_path / "whole", "\n".join(lines) + "\n")
    after = judge_text(tmp_path / "cut", "\n".join([*lines, cut]) + "\n")
    # THEN the cut line adds nothing: the same step, verdict and cause line, and nothing says a cut placed the step
    assert after["phase"] == whole["phase"] == "weight_load"
    assert after["verdict"] == whole["verdict"]
    assert after["root_cause"]["line"] == whole["root_cause"]["line"]
    assert "cut inside" not in after["reason"]
