"""`--format html`: one self-contained page with every section, and a real browser draws its timeline."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from logphase.judging.stalls import summarize
from logphase.logs.reader import ContextLine
from logphase.phases import Phase
from logphase.report.formats import OutputFormat, pick
from logphase.report.formats.html import PHASE_FILLS
from tests.conftest import FIXTURES, run_cli
from tests.report.png_pixels import png_rows, png_size
from tests.report.test_formats import BASELINE, COLLECTIVE, NOTES, STALL, full_report

LOGS = FIXTURES / "logs" / "sglang"


class Page(HTMLParser):
    """What a browser would fetch or run, the sections by id, and the text a reader sees."""

    def __init__(self, document: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.ids: list[str] = []
        self.text: list[str] = []
        self.feed(document)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        named = dict(attrs)
        self.links += [value for key, value in attrs if key in ("src", "href", "xlink:href") and value]
        if named.get("id"):
            self.ids.append(str(named["id"]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_page_has_every_section_and_fetches_nothing() -> None:
    # GIVEN the report with every optional section (a crash of TP1, baseline, in-log stacks, flight recorder)
    page = Page(pick(OutputFormat.HTML).analysis(full_report()))
    # THEN no script, stylesheet, image or font from elsewhere: nothing with a src or an href
    assert page.links == []
    assert not {"script", "link", "img", "iframe", "object"} & set(page.tags)
    # AND the headline with the verdict, confidence and evidence, the timeline (an SVG), the phases, the
    # ranks, the root cause, the stacks and the findings, in that order
    assert page.ids == ["verdict", "confidence", "timeline", "phases", "ranks", "root-cause", "stacks", "findings"]
    assert "svg" in page.tags
    text = "".join(page.text)
    for said in ["CRASHED", "RuntimeError: CUDA error", BASELINE, STALL, COLLECTIVE, *NOTES, "TP1 (crashed)"]:
        assert said in text


def test_every_text_is_escaped() -> None:
    # GIVEN a log line and a reason that look like markup
    evil = "<script>alert('x')</script> & <b>"
    report = full_report()
    assert report.root_cause is not None
    root = replace(report.root_cause, context=(ContextLine(9, evil),))
    page = Page(pick(OutputFormat.HTML).analysis(replace(report, reason=evil, root_cause=root)))
    # WHEN parsed THEN no tag came from them: the reader sees the text as it was
    assert "script" not in page.tags and page.tags.count("b") == len(NOTES) + 3  # the findings' labels
    assert "".join(page.text).count(evil) == 2


def test_a_stacks_report_as_a_page() -> None:
    # GIVEN a stacks report of no process WHEN written as a page THEN its summary heads it
    report = summarize([], [])
    page = Page(pick(OutputFormat.HTML).stacks(report))
    assert page.ids[0] == "verdict" and report.summary in "".join(page.text)


def test_the_page_shows_the_merged_stack_tree_of_stacks_in_the_log() -> None:
    # GIVEN a log with a faulthandler dump of the crashed process WHEN analysed as HTML
    document = run_cli("analyze", "--post-mortem", "--format", "html", str(LOGS / "faulthandler-segfault-capture.log"))
    page = Page(document.stdout)
    # THEN the stacks section holds the tree as `logphase stacks` draws it: the process, outermost frame
    # first, the crashed frame last (the dump's innermost)
    stacks = "".join(page.text).split("Stacks in the log", 1)[1].splitlines()
    assert "stacks" in page.ids
    # each frame with its line, as the dump gives it (`File "<string>", line 1`, `custom_all_reduce.py", line 331`)
    assert "process #1 (1)  <module> (<string>:1)" in stacks
    custom = "sglang/srt/distributed/device_communicators/custom_all_reduce.py"
    assert f"                register_graph_buffers ({custom}:331)  [crashed]" in stacks


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install -y chromium)")
def test_a_headless_browser_draws_the_timeline(tmp_path: Path) -> None:
    # GIVEN the EAGLE3 relaunch against the run that hung, written as one page
    args = ["analyze", "--post-mortem", "--format", "html", "--db", str(tmp_path / "none.db")]
    hung = LOGS / "eagle3-tp8-hung-cuda-graph-247.log"
    document = run_cli(*args, str(LOGS / "eagle3-tp8-warmup-health-503.log"), "--baseline", str(hung)).stdout
    page = tmp_path / "report.html"
    page.write_text(document, encoding="utf-8")
    assert CHROMIUM is not None
    browser = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={tmp_path / 'profile'}"]
    # WHEN Chromium loads it (no network needed) and takes a 1200×1600 screenshot
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    shot = tmp_path / "report.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    # THEN the page it loaded is the report, whole (its last element there)
    assert dom.returncode == 0, dom.stderr
    assert '<section id="timeline">' in dom.stdout and "generated by logphase" in dom.stdout
    # AND the screenshot is a PNG of the window's size, with the timeline's bars in it: weight_load's
    # blue (2m35s of 9m07s, three rows) and cuda_graph's green as the browser drew them
    assert png_size(shot) == (1200, 1600)
    wanted = {phase: _rgb(PHASE_FILLS[phase]) for phase in (Phase.WEIGHT_LOAD, Phase.CUDA_GRAPH)}
    seen = dict.fromkeys(wanted, 0)
    colours: set[tuple[int, int, int]] = set()
    for row in png_rows(shot):
        colours.update(row[::8])
        for phase, rgb in wanted.items():
            seen[phase] += sum(1 for pixel in row if _near(pixel, rgb))
    assert seen[Phase.WEIGHT_LOAD] > 5000 and seen[Phase.CUDA_GRAPH] > 1000, seen
    assert len(colours) > 20  # text, table lines and bars: not a blank page


def _rgb(fill: str) -> tuple[int, int, int]:
    return int(fill[1:3], 16), int(fill[3:5], 16), int(fill[5:7], 16)


def _near(pixel: tuple[int, int, int], rgb: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 3 for a, b in zip(pixel, rgb, strict=True))


def test_runs_have_an_html_page_too(tmp_path: Path) -> None:
    # GIVEN a recorded run WHEN the store's commands are asked for HTML
    db = str(tmp_path / "runs.db")
    log = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
    assert run_cli("runs", "add", str(log), "--db", db).exit_code == 0
    # THEN a self-contained page each, with the run in it, every text escaped
    for command in (("runs", "list"), ("runs", "show", "1")):
        page = run_cli(*command, "--db", db, "--format", "html")
        assert page.exit_code == 0
        assert page.stdout.startswith("<!DOCTYPE html>") and "tp8-ready-serving.log" in page.stdout
        assert "<script" not in page.stdout
