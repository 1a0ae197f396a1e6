"""What several commands share at the edge: the clock, the environment, pack loading, output."""

from __future__ import annotations

import math
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path

import click

from logphase.errors import UsageError
from logphase.jobs import MIN_PARALLEL_BYTES, RANGE_BYTES, Jobs, usable_cores
from logphase.packs import PackSet, load_packs, user_pack_dir
from logphase.report.formats import DEFAULT_WIDTH, OutputFormat

# `--format`: the command receives the OutputFormat itself (its value is what one types)
FORMATS = click.Choice(OutputFormat, case_sensitive=False)
# `runs list|show`: a list of runs has no page of its own, so no html
TIME_FORMATS = (
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
)


# The longest wait or budget an option takes (a year): beyond it a date overflows, and no run means it.
MAX_SECONDS = 365 * 24 * 3600.0
# Process ids Linux can give (PID_MAX_LIMIT, 2**22): a larger --pid names no process.
MAX_PID = 1 << 22
PID = click.IntRange(1, MAX_PID)
# Widths a table is drawn at: COLUMNS beyond it (`1e8`, 2**63) is ignored, as is junk.
MAX_WIDTH = 1000


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange, with nan and inf refused (click lets nan through any bound)."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number: float = super().convert(value, param, ctx)  # type: ignore[arg-type]  # click takes any value
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def seconds(low: float, high: float = MAX_SECONDS, *, low_open: bool = False) -> FiniteFloatRange:
    """A number of seconds between `low` and `high` (a year by default), finite."""
    return FiniteFloatRange(min=low, max=high, min_open=low_open)


def patterns_option(function: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--patterns",
        "pattern_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Extra pattern pack (.toml) or folder of packs; repeatable.",
    )(function)


def jobs_option(function: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--jobs",
        "jobs",
        type=click.IntRange(min=1),
        metavar="N",
        help="Processes that scan big logs (default: the usable cores; one below "
        f"{MIN_PARALLEL_BYTES >> 20} MB of plain files). The report is the same with any N.",
    )(function)


def stall_after_option(function: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--stall-after",
        "stall_after_s",
        type=seconds(0, low_open=True),
        metavar="S",
        help="Stalled after S seconds without progress, in any phase (instead of learned or pack budgets).",
    )(function)


def jobs_from(count: int | None) -> Jobs:
    """`--jobs`, default the cores this process may use, and never more (said in a note: more
    processes than cores only add memory). LOGPHASE_JOBS_MIN_BYTES and LOGPHASE_JOBS_RANGE_BYTES
    (tests, benchmarks) move the size where workers start and their share."""
    min_bytes = _bytes_from_env("LOGPHASE_JOBS_MIN_BYTES", MIN_PARALLEL_BYTES, low=0)
    range_bytes = _bytes_from_env("LOGPHASE_JOBS_RANGE_BYTES", RANGE_BYTES, low=1)
    cores = usable_cores()
    if count is not None and count > cores:
        click.echo(f"logphase: note: --jobs {count} is more than the {cores} usable cores: using {cores}", err=True)
    return Jobs(min(count, cores) if count is not None else cores, min_bytes=min_bytes, range_bytes=range_bytes)


def _bytes_from_env(name: str, default: int, *, low: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < low:
        raise UsageError(f"{name}={text!r} is not a byte count", hint=f"set it to a whole number >= {low}, or unset it")
    return int(text)


def default_db_path() -> Path:
    """`$XDG_DATA_HOME/logphase/runs.db` (XDG's default data home is ~/.local/share)."""
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "logphase" / "runs.db"


def db_option(function: click.decorators.FC) -> click.decorators.FC:
    """`--db` and `--lock-timeout` (kept in the context: `store_lock_timeout()` gives it to RunStore.open)."""
    function = click.option(
        "--lock-timeout",
        type=seconds(0, 3600),
        metavar="S",
        expose_value=False,
        callback=_keep_lock_timeout,
        help="Seconds to wait for another process's lock on the run store before giving up (exit 3) [default: 5].",
    )(function)
    return click.option(
        "--db",
        "db_path",
        type=click.Path(path_type=Path, dir_okay=False),
        envvar="LOGPHASE_DB",
        show_envvar=True,
        help="Run store (SQLite). Default: $XDG_DATA_HOME/logphase/runs.db.",
    )(function)


def _keep_lock_timeout(ctx: click.Context, _: click.Parameter, value: float | None) -> None:
    ctx.meta["logphase.lock_timeout_s"] = value


def store_lock_timeout() -> float | None:
    """`--lock-timeout` of the running command; None: the store's default (baselines/store.py)."""
    ctx = click.get_current_context(silent=True)
    value = ctx.meta.get("logphase.lock_timeout_s") if ctx is not None else None
    return float(value) if value is not None else None


def load_all_packs(pattern_paths: tuple[Path, ...], *, line_rules: bool = True) -> PackSet:
    """Built-in packs, then the user's config folder, then --patterns; from the cache when loaded before."""
    extra: list[Path] = []
    user_dir = user_pack_dir(os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config"))
    if user_dir is not None:
        extra.append(user_dir)
    extra.extend(pattern_paths)
    cache = cache_folder()
    return load_packs(extra, line_rules=line_rules, cache_folder=cache / "packs" if cache else None)


def cache_folder() -> Path | None:
    """logphase's cache: `$XDG_CACHE_HOME/logphase`, by default `~/.cache/logphase`; None (build
    everything afresh, write nothing) when LOGPHASE_NO_CACHE is set to anything but empty or 0."""
    if os.environ.get("LOGPHASE_NO_CACHE", "") not in ("", "0"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(base):
        return Path(base) / "logphase"
    try:
        return Path.home() / ".cache" / "logphase"
    except RuntimeError:  # no HOME and no passwd entry (a bare container): no cache, not a traceback
        return None


def parse_as_of(text: str | None) -> datetime:
    """`--as-of` in local time; without it, now."""
    if text is None:
        return datetime.now().replace(microsecond=0)
    for fmt in TIME_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    raise UsageError(
        f"--as-of {text!r} is not a time", hint="write it as 'YYYY-MM-DD HH:MM:SS' (local time, as the log)"
    )


def use_colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def terminal_width() -> int:
    """The columns the table's timeline may fill: COLUMNS when set, else the terminal's; where stdout
    is no terminal (a pipe, a file), the table's default width, as where COLUMNS is junk or absurd."""
    columns = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return columns if 0 < columns <= MAX_WIDTH else DEFAULT_WIDTH
