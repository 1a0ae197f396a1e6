"""`watch --on-ready/--on-stall/--on-crash CMD`: the outcome's command, its environment, its time bound, its
failure said and never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase.phases import Verdict
from logphase.watch.hooks import Hooks
from tests.conftest import run_cli

# SGLang's own lines (scheduler.py, http_server.py wording)
READY = (
    "[2026-01-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2026-01-01 10:00:01 TP0] Init torch distributed ends. mem usage=0.10 GB\n"
    "[2026-01-01 10:00:30] The server is fired up and ready to roll!\n"
)
CRASH = (
    "[2026-01-01 10:00:00 TP0] Init torch distributed begin.\n"
    "[2026-01-01 10:00:01 TP0] Init torch distributed ends. mem usage=0.10 GB\n"
    "[2026-01-01 10:00:05 TP0] Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static=0.88\n"
)
# what a hook writes of its environment, one variable a line
DUMP_ENV = (
    'printf \'%s\\n\' "$LOGPHASE_VERDICT" "$LOGPHASE_PHASE" "$LOGPHASE_RANK" "$LOGPHASE_WHERE" '
    '"$LOGPHASE_EXIT_CODE" "$LOGPHASE_REASON" > {out}'
)


@pytest.fixture
def at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOGPHASE_DB", str(tmp_path / "r.db"))
    return tmp_path


def watch(log: str, *args: str) -> tuple[int, str, str]:
    result = run_cli("watch", log, *args)
    return result.exit_code, result.stdout, result.stderr


def test_ready_runs_the_ready_hook_with_the_outcome_in_its_environment(at: Path) -> None:
    # GIVEN a log that reaches ready, and a hook for each outcome
    Path("server.log").write_text(READY)
    # WHEN watched
    code, _, err = watch(
        "server.log",
        "--on-ready",
        DUMP_ENV.format(out="ready.txt"),
        "--on-crash",
        "touch crash.txt",
        "--on-stall",
        "touch stall.txt",
    )
    # THEN only the ready hook ran, with the verdict, phase, rank (none), where, exit code and reason
    assert code == 0
    where = f"{(at / 'server.log').resolve()}:3"  # the watch names its log by its full path
    assert (at / "ready.txt").read_text().splitlines()[:5] == ["ready", "ready", "", where, "0"]
    assert not (at / "crash.txt").exists() and not (at / "stall.txt").exists()
    assert err.splitlines()[-1].endswith(f"] --on-ready ran: {DUMP_ENV.format(out='ready.txt')}")


def test_a_crash_runs_the_crash_hook_with_its_rank_and_reason(at: Path) -> None:
    Path("server.log").write_text(CRASH)
    code, _, _ = watch("server.log", "--on-crash", DUMP_ENV.format(out="crash.txt"))
    lines = (at / "crash.txt").read_text().splitlines()
    where = f"{(at / 'server.log').resolve()}:3"
    assert (code, lines[:5]) == (4, ["crashed", "kv_cache", "TP0", where, "4"])
    assert lines[5].startswith("TP0 crashed during kv_cache: Not enough memory.")


def test_a_failing_hook_is_said_with_what_it_printed_and_changes_no_exit_code(at: Path) -> None:
    Path("server.log").write_text(CRASH)
    code, out, err = watch("server.log", "--on-crash", "echo no pager reachable; exit 3")
    assert code == 4
    assert err.splitlines()[-1].endswith(
        "] --on-crash failed (exit 3): echo no pager reachable; exit 3; it said: no pager reachable"
    )
    assert "no pager" not in out  # the hook's output is not the watch's transitions


def test_a_hook_past_its_time_is_killed_and_said(at: Path) -> None:
    Path("server.log").write_text(CRASH)
    code, _, err = watch("server.log", "--on-crash", "sleep 30; touch late.txt", "--hook-timeout", "0.3")
    assert code == 4
    assert err.splitlines()[-1].endswith("] --on-crash ran past 0.3s and was killed: sleep 30; touch late.txt")
    assert not (at / "late.txt").exists()


def test_a_hook_that_cannot_run_is_said(at: Path) -> None:
    Path("server.log").write_text(READY)
    code, _, err = watch("server.log", "--on-ready", "/nonexistent/notify")
    assert code == 0
    assert "] --on-ready failed (exit 127): /nonexistent/notify; it said: " in err.splitlines()[-1]


def test_json_lines_stay_json_lines_whatever_the_hook_prints(at: Path) -> None:
    Path("server.log").write_text(READY)
    code, out, _ = watch("server.log", "--format", "jsonl", "--on-ready", "echo not json")
    assert code == 0
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["phase", "outcome"]


@pytest.mark.parametrize(
    ("verdict", "option"),
    [
        (Verdict.READY, "--on-ready"),
        (Verdict.FINISHED, "--on-ready"),
        (Verdict.STALLED, "--on-stall"),
        (Verdict.CRASHED, "--on-crash"),
        (Verdict.ABORTED, "--on-crash"),
        (Verdict.TIMEOUT, "--on-crash"),
        (Verdict.PROGRESSING, None),
        (Verdict.UNKNOWN, None),
    ],
)
def test_each_verdict_runs_its_hook_or_none(verdict: Verdict, option: str | None) -> None:
    hooks = Hooks(on_ready="r", on_stall="s", on_crash="c")
    chosen = hooks.command_for(verdict)
    assert (chosen[0] if chosen else None) == option
    assert Hooks().command_for(verdict) is None  # no hook given: none runs


def test_a_bad_hook_timeout_is_a_usage_error(at: Path) -> None:
    Path("server.log").write_text(READY)
    code, _, err = watch("server.log", "--on-ready", "true", "--hook-timeout", "0")
    assert code == 2
    assert err.startswith("logphase: error: Invalid value for '--hook-timeout'")
