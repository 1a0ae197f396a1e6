"""analyze's progress on stderr: bytes, rate and ETA on a terminal for big inputs; nothing otherwise."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path

import pytest

from logphase import pipeline
from logphase.cli import progress
from logphase.cli.progress import progress_on_stderr
from logphase.logs.reader import open_sources
from logphase.packs import load_packs
from logphase.report.formats.json import JsonFormat

AS_OF = datetime(2030, 1, 1)
LINE = b"[2026-03-02 09:16:04 TP0] Decode batch, #running-req: 40, #token: 67600, token usage: 0.04, \n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def analysed(path: Path, stderr: io.StringIO) -> str:
    sources = open_sources([str(path)])
    with progress_on_stderr(sources, stderr):
        report = pipeline.report(sources, load_packs(), pipeline.Options(as_of=AS_OF, post_mortem=True))
    return JsonFormat().analysis(report)


@pytest.fixture
def big_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A log over the threshold (lowered to 10 kB for the test)."""
    monkeypatch.setattr(progress, "SHOW_ABOVE", 10_000)
    log = tmp_path / "server.log"
    log.write_bytes(LINE * 2000)
    return log


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_a_big_input_on_a_terminal_shows_bytes_rate_and_eta(big_log: Path) -> None:
    # GIVEN a log over the threshold and a terminal on stderr
    terminal = Terminal()
    # WHEN it is analysed
    analysed(big_log, terminal)
    # THEN the bar went to stderr: what was read of the whole, the rate and the time left
    shown = terminal.getvalue()
    assert "reading" in shown
    assert len(LINE) * 2000 == 186_000
    assert "/182k " in shown  # of the file's size, in KiB
    assert "B/s]" in shown
    assert "[00:00<" in shown  # elapsed<remaining


def test_nothing_when_stderr_is_not_a_terminal(big_log: Path) -> None:
    # GIVEN the same log, stderr a pipe
    pipe = Pipe()
    # WHEN it is analysed
    analysed(big_log, pipe)
    # THEN nothing is written there
    assert pipe.getvalue() == ""


def test_nothing_for_a_small_input(tmp_path: Path) -> None:
    # GIVEN a 9 kB log (under the 50 MB threshold) and a terminal
    log = tmp_path / "small.log"
    log.write_bytes(LINE * 100)
    terminal = Terminal()
    # WHEN it is analysed
    analysed(log, terminal)
    # THEN no bar is shown
    assert terminal.getvalue() == ""


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_the_report_is_the_same_with_progress(big_log: Path) -> None:
    # GIVEN the log read with the bar on a terminal and without it
    # WHEN both are analysed
    # THEN the reports are identical
    assert analysed(big_log, Terminal()) == analysed(big_log, Pipe())


def test_a_stream_of_unknown_size_shows_the_bar_once_past_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a progress of unknown total (stdin, an archive) with a 100-byte threshold
    monkeypatch.setattr(progress, "SHOW_ABOVE", 100)
    terminal = Terminal()
    shown = progress.ReadProgress(None, terminal)
    # WHEN 60 and then 60 more bytes are read
    shown.add(60)
    before = terminal.getvalue()
    shown.add(60)
    shown.close()
    # THEN nothing shows before the threshold, and the bytes read after it
    assert before == ""
    assert "120B" in terminal.getvalue()
