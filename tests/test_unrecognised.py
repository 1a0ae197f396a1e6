"""When nothing is recognised, the report lists what the packs missed: the lines no rule knows,
grouped by template and counted, so one can be fed to `patterns explain`."""

from __future__ import annotations

from pathlib import Path

from logphase.logs.reader import Line
from logphase.logs.templates import MAX_TEMPLATES, TemplateMiner, template_of
from logphase.packs import load_packs
from tests.conftest import FIXTURES, run_cli, run_json

PACKS = load_packs()


def test_lines_that_differ_in_numbers_paths_and_ids_are_one_template() -> None:
    assert template_of("worker 3 ready in 12.5s at /opt/app/run.py (0x7f2a, id deadbeef99)") == (
        "worker <*> ready in <*> at <*> (<*>, id <*>)"
    )
    assert template_of("GET http://10.0.0.1:8000/v1/models took 5ms") == "GET <*> took <*>"


def test_the_miner_counts_by_template_most_frequent_first() -> None:
    miner = TemplateMiner(PACKS)
    texts = [
        "myserver: shard 1 of 8 mapped",
        "myserver: shard 2 of 8 mapped",
        "myserver: booting",
        "myserver: shard 3 of 8 mapped",
    ]
    miner.feed(Line(n, text, 0) for n, text in enumerate(texts, start=1))
    assert [(t.text, t.count, t.example_line) for t in miner.top()] == [
        ("myserver: shard <*> of <*> mapped", 3, 1),
        ("myserver: booting", 1, 3),
    ]


def test_the_miner_keeps_a_bounded_number_of_templates() -> None:
    miner = TemplateMiner(PACKS)
    miner.feed(Line(n, f"unique message {'x' * (n % 7)} {chr(65 + n % 26)}{n}", 0) for n in range(MAX_TEMPLATES * 3))
    assert len(miner._counts) <= MAX_TEMPLATES


def test_an_unknown_log_lists_what_no_rule_knows(tmp_path: Path) -> None:
    # GIVEN a server's log that no pack knows: 40 lines of one kind, 3 of another
    log = tmp_path / "other-server.log"
    lines = [f"2026-01-01 10:00:{n:02d} engine: loading layer {n} of 40" for n in range(40)]
    lines += [f"2026-01-01 10:01:0{n} engine: health probe {n} ok" for n in range(3)]
    log.write_text("\n".join(lines) + "\n")
    # WHEN analysed
    code, report = run_json("analyze", "--post-mortem", str(log))
    # THEN unknown, and the most frequent templates with a count and an example line
    assert (report["verdict"], code) == ("unknown", 6)
    assert [(t["count"], t["line"]) for t in report["unrecognised"]][:2] == [(40, 1), (3, 41)]
    assert report["unrecognised"][0]["template"].endswith("engine: loading layer <*> of <*>")
    table = run_cli("analyze", "--post-mortem", str(log)).stdout
    assert "Lines no rule knows (most frequent first; try one with `logphase patterns explain LINE`):" in table


def test_a_recognised_log_lists_nothing() -> None:
    _, report = run_json("analyze", "--post-mortem", str(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"))
    assert report["unrecognised"] == []
