"""Wrappers as people paste and collect logs, one generator each, written from the wrapper's documented
format (not from logphase's reader): plain log lines in, the bytes the wrapper would have written out.

Each generator gets the plain log's lines, a seeded `random.Random` (timestamps, pod and host names,
where a long line is cut) and `Times`, the time each line was written (its own stamp where it has one,
else the last one plus a little), which the timestamping wrappers print."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from logphase.packs import PackSet

Times = Sequence[datetime]
Generator = Callable[[Sequence[str], random.Random, Times], bytes]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def line_times(lines: Sequence[str], packs: PackSet, rng: random.Random) -> list[datetime]:
    """When each line was written, as a collector would have stamped it: the line's own time (a
    year-less or date-less one completed from a seeded random day), else just after the last one."""
    base = datetime(rng.randint(2023, 2025), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23))
    base += timedelta(seconds=rng.randint(0, 3599))
    times: list[datetime] = []
    last = base
    for line in lines:
        fields, _ = packs.split_prefix(ANSI.sub("", line.split("\r")[0]))
        own = fields.time
        if own is not None and not fields.time_has_year:
            own = own.replace(year=base.year) if fields.time_has_date else datetime.combine(base.date(), own.time())
        step = timedelta(microseconds=rng.randint(0, 50_000))
        last = max(last + step, own) if own is not None else last + step
        times.append(last)
    return times


def _join(lines: Sequence[str], newline: str = "\n") -> bytes:
    return (newline.join(lines) + newline).encode("utf-8", "surrogateescape")


def rfc3339_nanos(when: datetime, rng: random.Random) -> str:
    """`docker logs -t`: RFC 3339 in UTC with nanoseconds always (RFC3339NanoFixed), `Z`."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") + f"{rng.randint(0, 999):03d}Z"


def rfc3339_nano_trimmed(when: datetime, rng: random.Random) -> str:
    """containerd's CRI files: Go's RFC3339Nano, the fraction's trailing zeros trimmed (the dot too when
    all nine are zero); drawn so that short fractions are common here (a tenth of real stamps lose a digit)."""
    fraction = f"{when:%f}{rng.randint(0, 999):03d}"[: rng.choice([9, 9, 8, 6, 3, 1, 0])].rstrip("0")
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _name(rng: random.Random, length: int = 5) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(length))


def _pod(rng: random.Random) -> str:
    return f"{rng.choice(['sglang', 'vllm', 'llm-server', 'inference'])}-{_name(rng, 9)}-{_name(rng)}"


# --- the wrappers ---------------------------------------------------------------------------------


def docker_timestamps(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`docker logs -t`: `2024-05-01T10:00:00.123456789Z line`."""
    return _join([f"{rfc3339_nanos(t, rng)} {line}" for line, t in zip(lines, times, strict=True)])


def kubectl_timestamps(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`kubectl logs --timestamps`: the stamps of the pod's CRI file, trimmed as containerd wrote them
    (`2024-05-01T10:00:00.1234567Z line`), without the stream and tag."""
    return _join([f"{rfc3339_nano_trimmed(t, rng)} {line}" for line, t in zip(lines, times, strict=True)])


def docker_desktop(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Docker Desktop's log view copied: `2024-05-01 10:00:00 line`."""
    return _join([f"{t:%Y-%m-%d %H:%M:%S} {line}" for line, t in zip(lines, times, strict=True)])


def cri(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """containerd / CRI-O files under /var/log/pods: `TS stdout|stderr F line`; a line longer than the
    runtime's buffer is written as `P` parts, the last one `F` (cut short here to exercise it)."""
    out: list[str] = []
    for line, t in zip(lines, times, strict=True):
        stream = rng.choice(["stdout", "stderr"])
        stamp = rfc3339_nano_trimmed(t, rng)
        parts = [line]
        if len(line) > 60 and rng.random() < 0.5:
            cut = rng.randint(1, len(line) - 1)
            parts = [line[:cut], line[cut:]]
        for index, part in enumerate(parts):
            tag = "F" if index == len(parts) - 1 else "P"
            out.append(f"{stamp} {stream} {tag} {part}")
    return _join(out)


def _journal(lines: Sequence[str], rng: random.Random, stamps: Sequence[str]) -> bytes:
    host = f"gpu-node-{rng.randint(1, 64):02d}"
    unit = rng.choice(["python3", "sglang-server", "vllm", "docker"])
    pid = rng.randint(100, 99999)
    return _join([f"{stamp} {host} {unit}[{pid}]: {line}" for line, stamp in zip(lines, stamps, strict=True)])


def journald_short(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`journalctl -o short`: `May 01 10:00:00 host unit[pid]: line` (no year)."""
    return _journal(lines, rng, [f"{MONTHS[t.month - 1]} {t.day:02d} {t:%H:%M:%S}" for t in times])


def journald_short_iso(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`journalctl -o short-iso`: `2024-05-01T10:00:00+0000 host unit[pid]: line`."""
    return _journal(lines, rng, [f"{t:%Y-%m-%dT%H:%M:%S}+0000" for t in times])


def journald_short_precise(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`journalctl -o short-precise`: `May 01 10:00:00.123456 host unit[pid]: line`."""
    return _journal(lines, rng, [f"{MONTHS[t.month - 1]} {t.day:02d} {t:%H:%M:%S.%f}" for t in times])


def kubectl_prefix(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`kubectl logs --prefix`: `[pod/NAME/CONTAINER] line`."""
    tag = f"[pod/{_pod(rng)}/{rng.choice(['server', 'sglang', 'vllm', 'main'])}]"
    return _join([f"{tag} {line}" for line in lines])


def compose(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`docker compose logs` / `up`: `service-1  | line`, the name padded to the longest service's."""
    service = f"{rng.choice(['sglang', 'vllm', 'server', 'llm'])}-{rng.randint(1, 3)}"
    width = len(service) + rng.randint(0, 6)
    return _join([f"{service.ljust(width)}  | {line}" for line in lines])


def stern(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """stern's default template: `POD CONTAINER line` (coloured on a terminal: here half the time)."""
    pod, container = _pod(rng), rng.choice(["server", "sglang", "vllm", "main"])
    if rng.random() < 0.5:
        pod, container = f"\x1b[36m{pod}\x1b[0m", f"\x1b[32m{container}\x1b[0m"
    return _join([f"{pod} {container} {line}" for line in lines])


def srun_label(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Slurm `srun --label`: `N: line`, N the task, right-aligned to the widest task number."""
    tasks = rng.choice([1, 2, 8, 16, 128])
    task = rng.randrange(tasks)
    label = str(task).rjust(len(str(tasks - 1)))
    return _join([f"{label}: {line}" for line in lines])


def torchrun_tee(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """torchrun `--tee 3` / `--log-dir`: `[default0]:line` (role `default`, the local rank, no space)."""
    rank = rng.randrange(8)
    return _join([f"[default{rank}]:{line}" for line in lines])


def mpirun_tag_output(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Open MPI `mpirun --tag-output`: `[jobid,rank]<stdout>:line` (orte iof_base_output.c, no space)."""
    tag = f"[{rng.randint(1, 9)},{rng.randrange(8)}]<{rng.choice(['stdout', 'stderr'])}>:"
    return _join([f"{tag}{line}" for line in lines])


def ray_actor(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Ray's log monitor on a driver: `(RayWorkerWrapper pid=123) line`; the name is the actor's `__repr__` where
    its class defines one (`(PolicyWorker[rank=3] pid=123) `)."""
    name = rng.choice(
        ["RayWorkerWrapper", "ServeReplica", "_RayTrainWorker", f"PolicyWorker[rank={rng.randrange(16)}]"]
    )
    tag = f"({name} pid={rng.randint(100, 99999)})"
    return _join([f"{tag} {line}" for line in lines])


def ray_task(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Ray's log monitor, a task or an actor on another node: `(pid=123, ip=10.0.0.1) line`."""
    tag = f"(pid={rng.randint(100, 99999)}, ip=10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)})"
    return _join([f"{tag} {line}" for line in lines])


def pdsh(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """pdsh running the job on one node: `host: line` (pdsh(1): the `hostname: ` prefix `-N` turns off)."""
    host = f"{rng.choice(['gpu', 'node', 'worker-'])}{rng.randint(1, 2048):0{rng.choice([1, 2, 4])}d}"
    return _join([f"{host}: {line}" for line in lines])


def torchserve(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """TorchServe's model log: each line a worker printed on stdout, logged by the frontend through log4j2's
    `%d{ISO8601} [%-5p] %t %c - %m%n` (`2024-10-07T22:54:54,595 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - line`)."""
    thread = f"W-{rng.choice([9000, 9001, 9003])}-{rng.choice(['model', 'llm', 'vllm'])}_1.0-stdout"
    return _join(
        [
            f"{t:%Y-%m-%dT%H:%M:%S},{t.microsecond // 1000:03d} [INFO ] {thread} MODEL_LOG - {line}"
            for line, t in zip(lines, times, strict=True)
        ]
    )


def loki_export(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Grafana/Loki "download logs": `TS<tab>{labels}<tab>line`, newest first."""
    labels = f'{{container="{rng.choice(["sglang", "vllm"])}", pod="{_pod(rng)}"}}'
    rows = [f"{rfc3339_nanos(t, rng)}\t{labels}\t{line}" for line, t in zip(lines, times, strict=True)]
    return _join(rows[::-1])


def cloudwatch_export(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """CloudWatch Logs export as text: `epoch-ms<tab>line`, newest first."""
    rows = [f"{int(t.timestamp() * 1000)}\t{line}" for line, t in zip(lines, times, strict=True)]
    return _join(rows[::-1])


def markdown_quote(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A markdown quote (`> `, one or two levels; `>` alone on an empty line)."""
    marker = rng.choice([">", "> >"])
    return _join([f"{marker} {line}" if line else marker for line in lines])


def indented_code(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A paste as markdown's indented code block (CommonMark 4.4): four spaces before each line, empty lines
    left empty."""
    return _join([f"    {line}" if line else "" for line in lines])


def hard_wrap(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A paste through a fixed-width box: every line longer than the column cut into pieces. What is
    pasted is the text a terminal showed: colour codes are gone and do not count."""
    width = rng.randint(80, 200)
    out: list[str] = []
    for line in (ANSI.sub("", line) for line in lines):
        out.extend([line[i : i + width] for i in range(0, len(line), width)] or [""])
    return _join(out)


def word_wrap_line(line: str, width: int) -> list[str]:
    """One line wrapped at word boundaries as a text box soft-wraps it and a copy of it keeps: each piece the longest
    that ends at a space and fits the column (a word longer than the column alone, longer); a single space between
    two words is where the piece ends and is dropped, a cut inside a run of spaces (an indentation, a traceback's
    caret margin) keeps every space, on one side or the other; the rest goes on at the margin, unindented."""
    pieces: list[str] = []
    while len(line) > width:
        breaks = [i for i, char in enumerate(line) if char == " " and line[:i].strip() and line[i:].strip()]
        if not breaks:
            break
        at = max((i for i in breaks if i <= width), default=breaks[0])
        single = line[at - 1] != " " and line[at + 1] != " "
        pieces.append(line[:at])
        line = line[at + 1 :] if single else line[at:]
    return [*pieces, line]


def word_wrap(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A paste wrapped at word boundaries (a web text box's soft wrap copied as shown, an e-mail's wrap): every line
    longer than the column cut at spaces (`word_wrap_line`). What is pasted is the text a terminal showed: colour
    codes are gone."""
    width = rng.randint(80, 200)
    return _join([piece for line in lines for piece in word_wrap_line(ANSI.sub("", line), width)])


def crlf(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """Saved on Windows: every line ends with CRLF."""
    return _join(lines, "\r\n")


def ansi(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A terminal's colours kept: levels and stamps coloured, some lines bold."""
    coloured = re.compile(r"\b(INFO|WARNING|ERROR|DEBUG|CRITICAL)\b")
    out = []
    for line in lines:
        line = coloured.sub(lambda m: f"\x1b[{rng.choice(['32', '33', '31', '1;31'])}m{m[1]}\x1b[0m", line)
        out.append(f"\x1b[1m{line}\x1b[0m" if rng.random() < 0.2 else line)
    return _join(out)


# --- partial wrappers: on some lines only, in another locale, around a paste's text -------------

# glibc's abbreviated months (localedata/locales/*: `abmon`), what strftime's `%b` gives under each locale;
# Japanese and Korean pad the months 1-9 with a space
LOCALE_MONTHS: dict[str, tuple[str, ...]] = {
    "de_DE": ("Jan", "Feb", "Mär", "Apr", "Mai", "Jun", "Jul", "Aug", "Sep", "Okt", "Nov", "Dez"),
    "fr_FR": ("janv.", "févr.", "mars", "avril", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.", "déc."),
    "ru_RU": ("янв", "фев", "мар", "апр", "мая", "июн", "июл", "авг", "сен", "окт", "ноя", "дек"),
    "zh_CN": tuple(f"{month}月" for month in range(1, 13)),
    "ja_JP": tuple(f"{month:2d}月" for month in range(1, 13)),
    "ko_KR": tuple(f"{month:2d}월" for month in range(1, 13)),
    "es_ES": ("ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sep", "oct", "nov", "dic"),
    "pt_BR": ("jan", "fev", "mar", "abr", "mai", "jun", "jul", "ago", "set", "out", "nov", "dez"),
    "pl_PL": ("sty", "lut", "mar", "kwi", "maj", "cze", "lip", "sie", "wrz", "paź", "lis", "gru"),
    "tr_TR": ("Oca", "Şub", "Mar", "Nis", "May", "Haz", "Tem", "Ağu", "Eyl", "Eki", "Kas", "Ara"),
}


def journald_short_locale(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """`journalctl -o short` under a non-English locale: systemd (logs-show.c) writes the short time with
    strftime's `%b %d %H:%M:%S`, so the month is the locale's (`Dez 01`, `déc. 01`, ` 5月 01`)."""
    months = LOCALE_MONTHS[rng.choice(sorted(LOCALE_MONTHS))]
    return _journal(lines, rng, [f"{months[t.month - 1]} {t.day:02d} {t:%H:%M:%S}" for t in times])


def record_stamps(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A log UI's copy of multi-line events (CloudWatch, Loki, a container console): the time column only on
    the line that starts an event. An event starts at a line that does not begin with white space (the
    CloudWatch agent's default `multi_line_start_pattern`, `^[^\\s]`); traceback frames, a message's indented
    tail and empty lines belong to the event before. The browser shows a `\\r` as a line break, so a
    progress bar's redraws are lines of their own, after the stamped one."""
    style = rng.choice(["docker", "kubectl", "desktop"])
    out: list[str] = []
    for line, t in zip(lines, times, strict=True):
        first, *redraws = line.rstrip("\r").split("\r")  # (a CRLF's `\r` ends the line: no break of its own)
        if first[:1].strip() or not out:
            if style == "docker":
                stamp = rfc3339_nanos(t, rng)
            elif style == "kubectl":
                stamp = rfc3339_nano_trimmed(t, rng)
            else:
                stamp = f"{t:%Y-%m-%d %H:%M:%S}"
            first = f"{stamp} {first}"
        out += [first, *redraws]
    return _join(out)


def stamp_lines(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A log UI's copy with each event's time on a line of its own above its text: AWS CloudWatch's console
    (`2024-12-04T05:26:25.055Z`, milliseconds in UTC, then the line) or Grafana's Loki view (`2025-05-21 16:20:15`
    and its column's tab, then the line). Every line is an event of its own here, an empty one too."""
    style = rng.choice(["cloudwatch", "grafana"])
    out: list[str] = []
    for line, t in zip(lines, times, strict=True):
        if style == "cloudwatch":
            stamp = f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z"
        else:
            stamp = f"{t:%Y-%m-%d %H:%M:%S}\t"
        out += [stamp, line]
    return _join(out)


def empty_columns(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A log UI's table copied with its leading columns empty: a spreadsheet or a web table copied as
    tab-separated cells (`\\t\\t`), Buildkite's log view with an empty line-number cell before its rule
    (`  | `, realworld 154 and 179), a markdown table's empty cells (`|  | `)."""
    column = rng.choice(["\t", "\t\t", "\t\t\t", "  | ", "|  | ", "| | ", " |  |  | "])
    return _join([f"{column}{line}" for line in lines])


# turndown's escapes (turndown src/turndown.js `escapes`), what an HTML-to-markdown paste writes: `\ * _ ` [ ]`
# anywhere, `- + = # > N.` where they would start a block
_TURNDOWN = (
    (re.compile(r"\\"), r"\\\\"),
    (re.compile(r"\*"), r"\\*"),
    (re.compile(r"^-"), r"\\-"),
    (re.compile(r"^\+ "), r"\\+ "),
    (re.compile(r"^(=+)"), r"\\\1"),
    (re.compile(r"^(#{1,6}) "), r"\\\1 "),
    (re.compile(r"`"), r"\\`"),
    (re.compile(r"^~~~"), r"\\~~~"),
    (re.compile(r"\["), r"\\["),
    (re.compile(r"\]"), r"\\]"),
    (re.compile(r"^>"), r"\\>"),
    (re.compile(r"_"), r"\\_"),
    (re.compile(r"^(\d+)\. "), r"\1\\. "),
)
# Google Docs' markdown (realworld pastes from docs: `\[2024-12-05 …\] … \= **6.09**`, `INFO \- msg`, `\!`,
# `\&`, `max\_cycles`) escapes these wherever they are, and ends each line with a hard break (two spaces)
_DOCS = re.compile(r"([\\`*_\[\]\-=!&<>])")
_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#39;"))


def inline_code(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A paste with each line put in markdown's inline code by hand: `` `line` `` (CommonMark 6.1: a line with a
    backtick at either end takes two and a space of padding); empty lines stay empty."""
    out: list[str] = []
    for line in (ANSI.sub("", line) for line in lines):
        if not line.strip():
            out.append("")
        elif line.startswith("`") or line.endswith("`") or ("`" in line and rng.random() < 0.5):
            out.append(f"`` {line} ``")
        else:
            out.append(f"`{line}`")
    return _join(out)


def markdown_escapes(lines: Sequence[str], rng: random.Random, times: Times) -> bytes:
    """A paste that went through HTML outside a code block: turndown's backslash escapes (a rich editor's
    paste as markdown), Google Docs' markdown export (more escapes, a hard break at each line's end), or the
    text as HTML entities (`&lt;module&gt;`, a `<pre>` block written by hand or a tool)."""
    style = rng.choice(["turndown", "docs", "entities"])
    out: list[str] = []
    for line in (ANSI.sub("", line) for line in lines):
        if style == "turndown":
            for pattern, replacement in _TURNDOWN:
                line = pattern.sub(replacement, line)
        elif style == "docs":
            line = _DOCS.sub(r"\\\1", line) + ("  " if line else "")
        else:
            for char, entity in _ENTITIES:
                line = line.replace(char, entity)
        out.append(line)
    return _join(out)


@dataclass(frozen=True)
class Wrapper:
    name: str
    generate: Generator


WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper("docker-t", docker_timestamps),
    Wrapper("kubectl-timestamps", kubectl_timestamps),
    Wrapper("docker-desktop", docker_desktop),
    Wrapper("cri", cri),
    Wrapper("journald-short", journald_short),
    Wrapper("journald-short-iso", journald_short_iso),
    Wrapper("journald-short-precise", journald_short_precise),
    Wrapper("kubectl-prefix", kubectl_prefix),
    Wrapper("compose", compose),
    Wrapper("stern", stern),
    Wrapper("srun-label", srun_label),
    Wrapper("torchrun-tee", torchrun_tee),
    Wrapper("mpirun-tag-output", mpirun_tag_output),
    Wrapper("ray-actor", ray_actor),
    Wrapper("ray-task", ray_task),
    Wrapper("pdsh", pdsh),
    Wrapper("torchserve", torchserve),
    Wrapper("loki-export", loki_export),
    Wrapper("cloudwatch-export", cloudwatch_export),
    Wrapper("markdown-quote", markdown_quote),
    Wrapper("indented-code", indented_code),
    Wrapper("hard-wrap", hard_wrap),
    Wrapper("crlf", crlf),
    Wrapper("ansi", ansi),
    Wrapper("record-stamps", record_stamps),
    Wrapper("stamp-lines", stamp_lines),
    Wrapper("journald-short-locale", journald_short_locale),
    Wrapper("empty-columns", empty_columns),
    Wrapper("markdown-escapes", markdown_escapes),
    Wrapper("inline-code", inline_code),
)
BY_NAME = {wrapper.name: wrapper for wrapper in WRAPPERS}

# Wrappers nest as logs travel: the first named is applied first (the inner one).
PAIRS: tuple[tuple[str, str], ...] = (
    ("cri", "kubectl-prefix"),  # kubectl logs --prefix of a pod's CRI file
    ("kubectl-timestamps", "kubectl-prefix"),  # kubectl logs --prefix --timestamps
    ("docker-t", "markdown-quote"),  # `docker logs -t` pasted as a quote in an issue
    ("docker-t", "compose"),  # docker compose logs -t
    ("journald-short-iso", "crlf"),  # a journal saved on Windows
    ("srun-label", "hard-wrap"),  # a Slurm job's output pasted through a fixed-width box
    ("stern", "markdown-quote"),
)
