"""Assembles a bug-report bundle's files: logs (whole or cut), analysis, stacks, versions, README.

Everything that goes into the bundle passes through one Redactor (unless redaction is off), so
one host or address has one placeholder across all files."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice, tee
from pathlib import Path, PurePosixPath
from typing import Any

from logphase.baselines.fingerprint import HEAD_LINES, fingerprint_of_lines
from logphase.bundle import environment, pickles
from logphase.bundle.analysis_calls import Analysis, analyse, failure_lines, summarize_stacks
from logphase.bundle.excerpt import Excerpt, choose, render
from logphase.bundle.live import LiveStacks
from logphase.bundle.readme import Listed, render_readme
from logphase.bundle.redact import Redactor, map_strings
from logphase.errors import UsageError
from logphase.flight_recorder import read_dump_bytes
from logphase.jobs import ONE_JOB, Jobs
from logphase.logs.reader import LogSource, open_sources, read_lines
from logphase.packs import PackSet
from logphase.stacks.model import ProcessSnapshot

# Logs up to this size go in whole; a bug report rarely needs more, and a mail or an issue
# attachment (GitHub: 25 MB) takes it.
CUT_OVER_BYTES = 4 << 20
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


@dataclass(frozen=True)
class Member:
    """One file of the bundle: its path inside the bundle's folder, content, and what it is."""

    name: str
    data: bytes
    what: str


@dataclass(frozen=True)
class BundleRequest:
    """What `logphase bundle` was asked for, with what the edge knows (clock, folder, host)."""

    logs: Sequence[str]
    cwd: Path
    as_of: datetime
    post_mortem: bool | None = None
    redact: bool = True
    cut_over_bytes: int = CUT_OVER_BYTES
    live: LiveStacks | None = None
    dump_files: Sequence[str] = ()
    dump_snapshots: Sequence[ProcessSnapshot] = ()
    host: str | None = None  # this machine's name: redacted wherever it appears
    nvidia_smi: environment.SmiOutput = field(default_factory=lambda: environment.SmiOutput(None, "not asked"))
    jobs: Jobs = ONE_JOB  # processes that scan big logs, as for `analyze --jobs`


@dataclass(frozen=True)
class Bundle:
    members: list[Member]
    redacted: dict[str, tuple[int, int]]
    cut_logs: int


def collect(request: BundleRequest, packs: PackSet) -> Bundle:
    """Read, analyse, cut and redact: every file of the bundle, in the order they are listed."""
    if "-" in request.logs:
        raise UsageError(
            "a bundle cannot read standard input",
            hint="save it first: COMMAND > server.log; logphase bundle server.log",
        )
    flight_dumps: list[str] = []
    sources = open_sources(request.logs, dumps=flight_dumps, packs=packs)
    for source in sources:
        source.name = display_name(source.name, request.cwd)
    post_mortem = request.post_mortem if request.post_mortem is not None else all(s.finished for s in sources)
    snapshots = [*(request.live.snapshots if request.live else []), *request.dump_snapshots]
    gpus = request.live.gpus if request.live else None
    stacks_report = summarize_stacks(snapshots, packs, gpus=gpus) if snapshots else None
    analysis = analyse(
        sources,
        packs,
        flight_recorder_dumps=flight_dumps,
        as_of=request.as_of,
        post_mortem=post_mortem,
        stacks=stacks_report,
        jobs=request.jobs,
    )
    # the flight-recorder dumps are read by the paths given; the report names them as a bug report may
    shown_paths = {path: display_name(path, request.cwd) for path in flight_dumps}
    analysis = Analysis(_renamed(analysis.json, shown_paths), _renamed(analysis.markdown, shown_paths))
    redactor = Redactor()
    texts: list[tuple[str, str, str]] = []  # member name, text, what
    cuts: list[tuple[str, Excerpt, int]] = []
    used: set[str] = set()
    for index, source in enumerate(sources):
        summary = analysis.json["inputs"][index]
        member = _unique(f"logs/{member_path(source.name)}", used)
        if summary["bytes"] > request.cut_over_bytes:
            marks = _marks(analysis.json, source.name) | failure_lines(source, packs, request.as_of)
            excerpt = choose(summary["lines"], marks)
            member = _unique(f"{member}.excerpt", used)
            lines = _last_text_per_line(source)
            if request.redact:  # a private key's block is known by its BEGIN line, which the cut may leave out
                numbers, texts_of = tee(lines)
                lines = zip((n for n, _ in numbers), redactor.across_lines(t for _, t in texts_of), strict=True)
            excerpt_text = "\n".join(render(lines, excerpt)) + "\n"
            what = f"an excerpt of the log, lines numbered: {excerpt.kept_lines:,} of {excerpt.total:,} lines"
            texts.append((member, excerpt_text, what))
            cuts.append((member, excerpt, summary["bytes"]))
        else:
            texts.append((member, _whole_text(source), f"the log, whole ({summary['lines']:,} lines)"))
    binaries: list[Member] = []
    for path in request.dump_files:
        member = _unique(f"dumps/{member_path(display_name(path, request.cwd))}", used)
        data = Path(path).read_bytes()
        text = _as_text(data)
        what = "a stack dump given with --from"
        if text is None:
            binaries.append(Member(member, data, f"{what} (binary: as it was, not redacted)"))
        else:
            texts.append((member, text, what))
    # flight-recorder dumps are pickles: decompressed as the analysis read them, redacted below
    flight_members = [
        (path, _unique(f"dumps/{member_path(display_name(path, request.cwd))}", used)) for path in flight_dumps
    ]

    fingerprint = fingerprint_of_lines(
        (line.text for source in sources for line in islice(read_lines(source), HEAD_LINES)),
        analysis.json.get("system"),
        analysis.json.get("version"),
    )
    versions: dict[str, Any] = {
        "runtime": environment.runtime(),
        "log": fingerprint.to_json(),
        "pip": environment.installed_versions(),
        "nvidia_smi": "nvidia-smi.txt" if request.nvidia_smi.text is not None else request.nvidia_smi.missing,
    }
    notes: list[str] = []
    stacks = stacks_report.to_json() if stacks_report is not None else None
    if request.live is not None:
        notes.extend(request.live.notes)
    if request.nvidia_smi.text is None:
        notes.append(f"nvidia-smi: {request.nvidia_smi.missing}")

    redact = request.redact
    if redact:
        if request.host:
            redactor.learn_host(request.host)
        redactor.learn_all([texts, analysis.json, analysis.markdown, stacks, request.nvidia_smi.text])
        for path in flight_dumps:  # one at a time: a decoded dump is many times its size
            pickles.learn(read_dump_bytes(path), path, redactor)

    def clean(text: str) -> str:
        return redactor.text(text) if redact else text

    def clean_json(value: Any) -> Any:
        return redactor.json(value) if redact else value

    # the logs and dumps first: a secret found there (a `value:` line under its `name:`) is then
    # known wherever the analysis quotes that line alone
    renamed = {name: clean(name) for name, _, _ in texts} | {m.name: clean(m.name) for m in binaries}
    files = [Member(renamed[name], clean(text).encode(), what) for name, text, what in texts]
    for path, member in flight_members:
        files.extend(_flight_member(path, clean(member), redactor if redact else None, notes))
    shown_analysis = clean_json(analysis.json)
    members = [
        Member("analysis.md", clean(analysis.markdown).encode(), "the analysis, ready to paste into a GitHub issue"),
        Member("analysis.json", _json(shown_analysis), "the same analysis: `logphase analyze --format json`"),
    ]
    if stacks is not None:
        members.append(Member("stacks.json", _json(clean_json(stacks)), "stacks: `logphase stacks --format json`"))
    what_versions = "logphase, Python, platform; what the log says (system, NCCL, GPUs); what pip has installed here"
    members.append(Member("versions.json", _json(clean_json(versions)), what_versions))
    if request.nvidia_smi.text is not None:
        members.append(Member("nvidia-smi.txt", clean(request.nvidia_smi.text).encode(), "nvidia-smi's output"))
    members.extend(files)
    members.extend(Member(renamed[m.name], m.data, m.what) for m in binaries)
    summary = redactor.summary()
    # the README is made of redacted parts, and is not redacted itself: it quotes `api_key=` as an example
    readme = render_readme(
        verdict=shown_analysis,
        listed=[Listed(m.name, m.what, len(m.data)) for m in members],
        cuts=[(renamed[name], excerpt, size) for name, excerpt, size in cuts],
        redacted=summary if redact else None,
        secret_classes=redactor.secret_classes(),
        notes=[clean(note) for note in notes],
        as_of=request.as_of,
    )
    members.insert(0, Member("README.md", readme.encode(), "this file"))
    return Bundle(members=members, redacted=summary, cut_logs=len(cuts))


def _flight_member(path: str, member: str, redactor: Redactor | None, notes: list[str]) -> list[Member]:
    """A flight-recorder dump as the bundle carries it: the pickle (masked in place where it held
    something to redact), else its decoded form as redacted JSON, else nothing; a note says which."""
    data = read_dump_bytes(path)
    what = "a torch flight-recorder dump (pickle"
    if redactor is None:
        return [Member(member, data, f"{what}, as it was: not redacted)")]
    dump = pickles.redact_dump(data, path, redactor)
    if dump.note is not None:
        notes.append(f"{member}: {dump.note}")
    if dump.data is None:
        return []
    if dump.suffix:
        return [Member(member + dump.suffix, dump.data, "a torch flight-recorder dump, decoded and redacted as JSON")]
    masked = f"; {dump.masked:,} strings masked with `*` at their length" if dump.masked else ""
    return [Member(member, dump.data, f"{what}, redacted in place{masked})")]


def display_name(name: str, cwd: Path) -> str:
    """A path as a bug report may show it: relative to the working folder when inside it, else
    its file name (an absolute path says who and where, and helps no reader). Archive members
    (`/x/logs.tar:rank0.log`) keep the member's name."""
    archive, separator, member = name.partition(":") if not name.startswith("<") else (name, "", "")
    path = Path(archive)
    if path.is_absolute():
        try:
            archive = path.relative_to(cwd).as_posix()
        except ValueError:
            archive = path.name
    return f"{archive}{separator}{member}"


def member_path(name: str) -> str:
    """A display name as a safe path inside the bundle: no `..`, no absolute path, no `:`."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]  # the bundle holds the decompressed text
    parts = [p for p in PurePosixPath(name.replace(":", "/").replace("<", "").replace(">", "")).parts]
    safe = [p for p in parts if p not in ("", ".", "..", "/")]
    return "/".join(safe) or "log"


def _unique(name: str, used: set[str]) -> str:
    candidate, number = name, 1
    while candidate in used:
        number += 1
        stem, dot, suffix = name.rpartition(".") if "." in PurePosixPath(name).name else (name, "", "")
        candidate = f"{stem}-{number}{dot}{suffix}"
    used.add(candidate)
    return candidate


def _marks(analysis: dict[str, Any], path: str) -> set[int]:
    """The lines the analysis points at in one log: root cause and its context, phase starts and
    ends, the last line; each rank's last progress (rank rows name no file: kept in every log)."""
    marks: set[int] = set()
    root = analysis.get("root_cause")
    if root and root["path"] == path:
        marks.add(root["line"])
        marks.update(context["line"] for context in root["context"])
    for span in analysis["phases"]:
        if span["path"] == path:
            marks.update((span["start_line"], span["end_line"]))
    marks.update(row["last_progress_line"] for row in analysis["rank_states"] if row["last_progress_line"])
    last = analysis.get("last_line")
    if last and last["path"] == path:
        marks.add(last["line"])
    return marks


def _last_text_per_line(source: LogSource) -> Iterator[tuple[int, str]]:
    """(number, text) once per physical line; of a progress bar's `\\r` updates, the last (what a
    terminal showed)."""
    pending: tuple[int, str] | None = None
    for line in read_lines(source):
        if pending is not None and pending[0] != line.number:
            yield pending
        pending = (line.number, line.text)
    if pending is not None:
        yield pending


def _whole_text(source: LogSource) -> str:
    with source.open_stream() as stream:
        return stream.read().decode("utf-8", "replace")


def _as_text(data: bytes) -> str | None:
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """`value` with each path of `names` (as given on the command line) replaced by its display name."""

    def rename(text: str) -> str:
        for path, shown in names.items():
            text = text.replace(path, shown)
        return text

    return map_strings(value, rename) if names else value


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode()


def output_name(made: datetime) -> str:
    """The default bundle file name: `logphase-bundle-20260421-091213.tar.gz`."""
    return f"logphase-bundle-{made:%Y%m%d-%H%M%S}.tar.gz"
