"""The README's 503 story in every format (issue 30): the health route's answers counted by status where the log
has them, the same words in the text, markdown and the page; a draft model's phases in a colour of their own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from logphase.logs.timeline import DRAFT_REPEATED
from logphase.phases import Phase
from logphase.report.formats.html import DRAFT_FILLS, PHASE_FILLS, phase_fill
from tests.conftest import FIXTURES, run_cli
from tests.report.png_pixels import png_rows
from tests.report.test_html import Page

LOGS = FIXTURES / "logs" / "sglang"
# The README's story: uvicorn up, `GET /health` answered 503 from line 262 to the last line (392), 131 times
STORY = LOGS / "eagle3-tp8-warmup-health-503.log"
# SGLang 0.5.3 TP1 comes up; three /health probes answered 200 follow the ready line (lines 31–33)
READY = LOGS / "tp1-ready-untagged.log"
SAID_503 = "Health route: 131 answers, all 503 (lines 262–392)"


def test_the_fixture_has_the_health_answers_the_story_says() -> None:
    # GIVEN the story's log THEN its 503 answers are uvicorn's access lines, 131 of them, lines 262–392
    lines = STORY.read_bytes().decode().split("\n")  # a line ends at \n: a bar redrawn with \r is one line
    answers = [n for n, line in enumerate(lines, 1) if re.search(r'"GET /health HTTP/1\.1" 503 ', line)]
    assert (len(answers), answers[0], answers[-1]) == (131, 262, 392)


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_every_format_says_how_the_health_route_answered(fmt: str) -> None:
    # WHEN the story's log is analysed in each human format
    output = run_cli("analyze", "--post-mortem", "--format", fmt, str(STORY)).stdout
    text = "".join(Page(output).text) if fmt == "html" else output.replace("**", "")
    # THEN each says the same: how many answers, of which status, on which lines
    assert SAID_503 in text


def test_the_json_counts_the_answers_by_status() -> None:
    story = json.loads(run_cli("analyze", "--post-mortem", "--format", "json", str(STORY)).stdout)["health"]
    ready = json.loads(run_cli("analyze", "--post-mortem", "--format", "json", str(READY)).stdout)["health"]
    name = str(STORY)
    assert story == {
        "answers": {"503": 131},
        "first": {"path": name, "line": 262},
        "newest": {"path": name, "line": 392, "status": "503"},
        "serving": None,
    }
    # AND a ready server's 200 probes are no refusals to count (they are summarised, not each read)
    assert ready is None


def test_refusals_are_counted_and_the_answer_after_them_named(tmp_path: Path) -> None:
    # GIVEN a start whose /health answered 503 twice during warmup, then 200 once (uvicorn's access lines)
    log = tmp_path / "server.log"
    probe = '[2026-01-01 10:00:{0:02d}] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" {1}\n'
    log.write_text(
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"
        + probe.format(10, "503 Service Unavailable")
        + probe.format(20, "503 Service Unavailable")
        + probe.format(30, "200 OK")
    )
    # WHEN analysed THEN the refusals are counted, and the answer that came after them is named
    out = run_cli("analyze", "--post-mortem", str(log)).stdout
    assert "Health route: 2 answers, all 503 (lines 2–3); then 200 (line 4)" in out.splitlines()


def test_a_log_without_health_answers_says_nothing_of_them() -> None:
    hung = LOGS / "eagle3-tp8-hung-cuda-graph-247.log"
    assert "Health route" not in run_cli("analyze", "--post-mortem", str(hung)).stdout
    assert json.loads(run_cli("analyze", "--post-mortem", "--format", "json", str(hung)).stdout)["health"] is None


def test_each_draft_phase_has_a_colour_no_other_phase_has() -> None:
    # GIVEN the phases a speculative draft model repeats (SGLang ≤0.5.10)
    # THEN each has a draft fill, unlike its own and every other phase's fill
    assert set(DRAFT_REPEATED) <= set(DRAFT_FILLS)
    fills = set(PHASE_FILLS.values())
    assert all(phase_fill(phase, True) not in fills for phase in DRAFT_REPEATED)
    assert len({phase_fill(phase, True) for phase in DRAFT_REPEATED}) == len(DRAFT_REPEATED)
    # AND draft_init, the draft's by name, keeps its own
    assert phase_fill(Phase.DRAFT_INIT, True) == PHASE_FILLS[Phase.DRAFT_INIT]


def test_the_page_draws_the_draft_capture_apart_from_the_target_capture() -> None:
    # GIVEN the story's page (its target's graphs 09:14:58–09:15:47, the draft's 09:15:52–09:16:14)
    page = run_cli("analyze", "--post-mortem", "--format", "html", str(STORY)).stdout
    bars = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"[^>]*><title>([^<]*)</title>', page)
    # THEN every cuda_graph bar has cuda_graph's fill, every cuda_graph (draft) bar the draft's
    target = {fill for fill, title in bars if title.startswith("cuda_graph 09:")}
    draft = {fill for fill, title in bars if title.startswith("cuda_graph (draft) ")}
    assert (target, draft) == ({PHASE_FILLS[Phase.CUDA_GRAPH]}, {DRAFT_FILLS[Phase.CUDA_GRAPH]})
    # AND the legend's swatch for `cuda_graph (draft)` is the draft's fill
    swatch = re.search(r'fill="(#[0-9a-f]{6})"/>\s*<text [^>]*>cuda_graph \(draft\)</text>', page)
    assert swatch is not None and swatch.group(1) == DRAFT_FILLS[Phase.CUDA_GRAPH]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install -y chromium)")
def test_a_headless_browser_draws_the_draft_capture_in_its_own_colour(tmp_path: Path) -> None:
    # GIVEN the story's page, loaded by Chromium and shot at 1200×1600
    page = tmp_path / "report.html"
    page.write_text(run_cli("analyze", "--post-mortem", "--format", "html", str(STORY)).stdout, encoding="utf-8")
    assert CHROMIUM is not None
    shot = tmp_path / "report.png"
    browser = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    # THEN both greens are on the screen: the target's capture (49 s) and the draft's (22 s), on two lanes
    wanted = {"target": _rgb(PHASE_FILLS[Phase.CUDA_GRAPH]), "draft": _rgb(DRAFT_FILLS[Phase.CUDA_GRAPH])}
    seen = dict.fromkeys(wanted, 0)
    for row in png_rows(shot):
        for name, rgb in wanted.items():
            seen[name] += sum(1 for pixel in row if all(abs(a - b) <= 3 for a, b in zip(pixel, rgb, strict=True)))
    assert seen["target"] > 1000 and seen["draft"] > 300, seen


def _rgb(fill: str) -> tuple[int, int, int]:
    return int(fill[1:3], 16), int(fill[3:5], 16), int(fill[5:7], 16)
