"""Log shapes for the benchmarks: serving formats, interleavings and wrappers a fast path must not be tuned to.

Each generated shape is a busy TP8 server as it really writes: every rank logs its own batches, the
HTTP server its access lines and probes, NCCL INFO its chatter, line by line in the order they happen
(no two consecutive lines need be of one kind), every line fresh from the seed. The line formats
are the reference ones (../shared/reference/sglang.md §1, nccl_torch_vllm.md §6).

The `real-*` shapes are drawn from the real logs of fixtures/realworld (`Corpus`): one log of each
system, its lines in their order, grown with its own repeatable lines in their own proportions.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from logphase.packs import PackSet

RANKS = 8
HOST = "gpu-node-17"
PIDS = [41200 + 7 * rank for rank in range(RANKS)]
API_PID = 41190


@dataclass(frozen=True)
class Mix:
    """How often each kind of serving line comes (the rest: NCCL INFO chatter)."""

    decode: float = 0.45
    prefill: float = 0.15
    access: float = 0.20
    probe: float = 0.03
    request: str = "POST /v1/chat/completions"  # what the access lines ask for


BUSY = Mix()
# issue 27: an SGLang server whose clients call its own /generate (uvicorn's access line is then the
# warmup request's), with no health probes
GENERATE = Mix(probe=0.0, request="POST /generate")
NCCL_STORM = Mix(decode=0.15, prefill=0.05, access=0.12, probe=0.01)  # NCCL_DEBUG=INFO on a chatty fabric


class Format(Protocol):
    """One server version's serving lines; `now` is the line's wall time."""

    def decode(self, r: random.Random, now: datetime, rank: int) -> str: ...

    def prefill(self, r: random.Random, now: datetime, rank: int) -> str: ...

    def access(self, now: datetime, client: str, request: str) -> str: ...

    def nccl(self, r: random.Random, now: datetime, rank: int) -> str:
        pid = PIDS[rank]
        peer = (rank + r.choice((1, -1))) % RANKS
        return (
            f"{HOST}:{pid}:{pid + r.randrange(60, 140)} [{rank}] NCCL INFO Channel "
            f"{r.randrange(32):02d}/1 : {rank}[{rank}] -> {peer}[{peer}] via P2P/CUMEM/read"
        )


def _numbers(r: random.Random) -> tuple[int, int, float]:
    running = r.randrange(8, 160)
    tokens = running * r.randrange(300, 2400)
    return running, tokens, tokens / 1623040


class SGLang(Format):
    """SGLang: `[%(asctime)s TPn] message`. 0.3.0: time of day only; until 0.5.3 `Decode batch.`,
    then `Decode batch, `; until 0.4.0 uvicorn's access lines carry no timestamp; 0.4.10+: DP/TP/EP tags."""

    def __init__(self, *, date: bool, comma: bool, stamped_access: bool, tags: str) -> None:
        self.date, self.comma, self.stamped_access, self.tags = date, comma, stamped_access, tags

    def stamp(self, now: datetime, rank: int | None) -> str:
        tags = "" if rank is None else " " + self.tags.format(rank=rank)
        return f"[{now:%Y-%m-%d %H:%M:%S}{tags}] " if self.date else f"[{now:%H:%M:%S}{tags}] "

    def decode(self, r: random.Random, now: datetime, rank: int) -> str:
        running, tokens, usage = _numbers(r)
        head = "Decode batch, " if self.comma else "Decode batch. "
        graph = "cuda graph: True, " if self.comma else ""
        return (
            f"{self.stamp(now, rank)}{head}#running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
            f"{graph}gen throughput (token/s): {r.uniform(800, 3200):.2f}, #queue-req: {r.randrange(0, 3)}"
            + (", " if self.comma else "")
        )

    def prefill(self, r: random.Random, now: datetime, rank: int) -> str:
        running, _, usage = _numbers(r)
        head = "Prefill batch, " if self.comma else "Prefill batch. "
        return (
            f"{self.stamp(now, rank)}{head}#new-seq: {1 + r.randrange(4)}, #new-token: {r.randrange(20, 4096)}, "
            f"#cached-token: {r.randrange(0, 2048)}, token usage: {usage:.2f}, #running-req: {running}, "
            f"#queue-req: {r.randrange(0, 3)}" + (", " if self.comma else "")
        )

    def access(self, now: datetime, client: str, request: str) -> str:
        stamp = self.stamp(now, None) if self.stamped_access else ""
        return f'{stamp}INFO:     {client} - "{request} HTTP/1.1" 200 OK'


class VLLM(Format):
    """vLLM: `INFO mm-dd HH:MM:SS file.py:line] message` (V0, no year), worker lines prefixed
    `(VllmWorkerProcess pid=N) `; V1 (0.10): every process tagged `(APIServer pid=N) `,
    `(Worker_TPn pid=N) `, the file in brackets, stats as `Engine 000: …`."""

    def __init__(self, *, v1: bool) -> None:
        self.v1 = v1

    def line(self, now: datetime, where: str, message: str, process: str) -> str:
        place = f"[{where}]" if self.v1 else f"{where}]"
        tag = f"({process}) " if process else ""
        return f"{tag}INFO {now:%m-%d %H:%M:%S} {place} {message}"

    def api(self) -> str:
        return f"APIServer pid={API_PID}" if self.v1 else ""

    def worker(self, rank: int) -> str:
        if self.v1:
            return f"Worker_TP{rank} pid={PIDS[rank]}"
        return f"VllmWorkerProcess pid={PIDS[rank]}" if rank else ""

    def decode(self, r: random.Random, now: datetime, rank: int) -> str:
        running = r.randrange(8, 160)
        if self.v1:
            message = (
                f"Engine 000: Avg prompt throughput: {r.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: "
                f"{r.uniform(0, 3000):.1f} tokens/s, Running: {running} reqs, Waiting: {r.randrange(3)} reqs, "
                f"GPU KV cache usage: {r.uniform(0, 90):.1f}%, Prefix cache hit rate: {r.uniform(0, 60):.1f}%"
            )
            return self.line(now, "loggers.py:123", message, self.api())
        message = (
            f"Avg prompt throughput: {r.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: "
            f"{r.uniform(0, 3000):.1f} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: "
            f"{r.randrange(3)} reqs, GPU KV cache usage: {r.uniform(0, 90):.1f}%, CPU KV cache usage: 0.0%."
        )
        return self.line(now, "metrics.py:399", message, "")

    def prefill(self, r: random.Random, now: datetime, rank: int) -> str:
        request = f"chatcmpl-{r.getrandbits(128):032x}"
        if self.v1:
            return self.line(now, "logger.py:43", f"Received request {request}: prompt: '...', params: ...", self.api())
        return self.line(now, "engine.py:267", f"Added request {request}.", "")

    def access(self, now: datetime, client: str, request: str) -> str:
        tag = f"({self.api()}) " if self.v1 else ""
        return f'{tag}INFO:     {client} - "{request} HTTP/1.1" 200 OK'

    def nccl(self, r: random.Random, now: datetime, rank: int) -> str:
        worker = self.worker(rank)
        return (f"({worker}) " if worker else "") + super().nccl(r, now, rank)


def cri(line: str, now: datetime, r: random.Random) -> str:
    """Kubernetes' container runtime wraps every line (`kubectl logs` strips it; a node's file keeps it).
    containerd stamps it with Go's RFC3339Nano, which trims the fraction's trailing zeros (a tenth of
    the stamps have 8 digits, a hundredth 7, ...)."""
    fraction = f"{r.randrange(10**9):09d}".rstrip("0")
    return f"{now:%Y-%m-%dT%H:%M:%S}{'.' + fraction if fraction else ''}Z stdout F {line}"


def docker_t(line: str, now: datetime, r: random.Random) -> str:
    """`docker logs -t`: RFC3339NanoFixed, nine digits always."""
    return f"{now:%Y-%m-%dT%H:%M:%S}.{r.randrange(10**9):09d}Z {line}"


def journald(line: str, now: datetime, r: random.Random) -> str:
    """`journalctl -u sglang` output."""
    return f"{now:%b %d %H:%M:%S} {HOST} sglang[{API_PID}]: {line}"


@dataclass(frozen=True)
class Shape:
    """A log to benchmark: its serving format, its mix, whether the startup comes first (else the
    log starts mid-run, as after a rotation), and the wrapper every line gets."""

    format: Format
    mix: Mix = BUSY
    startup: bool = True
    wrap: Callable[[str, datetime, random.Random], str] | None = None
    per_rank: bool = False  # one file per rank (bench/loggen.py: write_logs)


@dataclass(frozen=True)
class Corpus:
    """A real log of fixtures/realworld/logs grown to a size: its lines in their order, and between them
    (before its first failure, whose lines close it as they do the real one) lines drawn from its
    repeatable ones (a line that makes no event, or only a steady one) in their proportions, each with
    fresh numbers (`variants`), its stamp moved on by the time the growth took so far (a line of another
    clock keeps its offset)."""

    path: Path
    per_rank: bool = False

    def lines(self, seed: int, size: int) -> Iterator[str]:
        from logphase.packs import load_packs

        packs = load_packs()
        r = random.Random(seed)
        original, repeatable, end = _read_corpus(self.path)
        pool = [variant for line in repeatable for variant in variants(line, packs, r)]
        budget = size - sum(len(line.encode()) + 1 for line in original)
        per_gap = max(0, budget) // max(1, end)  # grown after each line before the first failure
        elapsed = timedelta(0)
        clocks: dict[str, datetime] = {}  # each stamp layout's time at the last original line (else its first)
        for line in reversed(original):
            stamp = stamp_of(line)
            clocks.update({stamp[1]: when} if stamp is not None and (when := _parsed(stamp)) else {})
        for index, line in enumerate(original):
            line = shift_stamp(line, elapsed)
            stamp = stamp_of(line)
            if stamp is not None:
                clocks[stamp[1]] = _parsed(stamp) or clocks.get(stamp[1], datetime(2026, 3, 2))
            yield line
            if index >= end or not pool:
                continue
            written, start = 0, elapsed
            while written < per_gap:
                elapsed += timedelta(seconds=r.expovariate(200.0))
                grown = r.choice(pool)
                stamp = stamp_of(grown)
                if stamp is not None and stamp[1] in clocks:
                    grown = restamp(grown, clocks[stamp[1]] + (elapsed - start))
                written += len(grown.encode()) + 1
                yield grown


CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "realworld" / "logs"


# Of each system, the real log with the most repeatable lines (`_read_corpus`, over the whole corpus on
# 2026-12-02: ~2 min, too long for every import); ray's best has four.
REAL_LOGS = (
    "001_sglang-qwq32b-tp4-ready",
    "046_nccl-one-gpu-stuck-bootstrap",
    "261_lmdeploy-windows-turbomind-gemm-tune-forward",
    "267_tgi-vlm-3shard-waiting-quoted",
    "274_trtllm-triton-pytorch-backend-model-loaded-tables",
    "308_vllm-dynamo-prefill-weights-loaded-planner-metrics",
    "426_torch-pai-megatron-line-numbered-torchrun-agent-traceback",
)


def corpus_shapes() -> dict[str, Corpus]:
    """The real logs as shapes, `real-NNN-system`."""
    shapes = {}
    for stem in REAL_LOGS:
        number, _, rest = stem.partition("_")
        shapes[f"real-{number}-{rest.split('-', 1)[0]}"] = Corpus(CORPUS / f"{stem}.log")
    return shapes


@cache
def _read_corpus(path: Path) -> tuple[list[str], list[str], int]:
    """A real log's lines, its repeatable ones (of a kind it shows more than once, with no event or
    only steady ones, outside tracebacks and dumps, no trigger of the fast path), and the index of its
    first failure line (else its last line)."""
    from logphase.frames import TRIGGER
    from logphase.logs.fast.plan import is_steady, plan_for
    from logphase.logs.matcher import SourceMatcher
    from logphase.logs.reader import Line
    from logphase.packs import load_packs
    from logphase.phases import FAILURE_KINDS

    packs = load_packs()
    triggers = [re.compile(trigger) for trigger in plan_for(packs, (TRIGGER,)).triggers]
    matcher = SourceMatcher(packs, datetime(2030, 1, 1))
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    quiet: list[str] = []
    end = len(lines) - 1
    for number, text in enumerate(lines):
        events = matcher.match_line(Line(number + 1, text, 0))
        if any(event.kind in FAILURE_KINDS for event in events) and number < end:
            end = number
        raw = text.encode()
        if (
            all(is_steady(event.rule) for event in events)
            and matcher.block is None
            and text.strip()
            and not any(trigger.search(raw) for trigger in triggers)
        ):
            quiet.append(text)
    kinds = Counter(_kind_of(text) for text in quiet)
    return lines, [text for text in quiet if kinds[_kind_of(text)] > 1], end


def _kind_of(line: str) -> str:
    """A line's kind: its text after the stamp, numbers and hex ids masked (a kind the log shows once
    is a one-off, a launch command or a banner: never repeated)."""
    stamp = stamp_of(line)
    return re.sub(r"[0-9a-f]*[0-9][0-9a-f]*", "0", line[stamp[0].end() if stamp else 0 :])


# The stamps of the lines' prefixes (the first in their first STAMP_BEFORE characters), with their layouts.
STAMPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}([ T])\d{2}:\d{2}:\d{2}"), "%Y-%m-%d{0}%H:%M:%S"),
    (re.compile(r"\d{2}/\d{2}/\d{4}-\d{2}:\d{2}:\d{2}"), "%m/%d/%Y-%H:%M:%S"),
    (re.compile(r"(?<![\w-])([IWEF])\d{4} \d{2}:\d{2}:\d{2}"), "{0}%m%d %H:%M:%S"),
    (re.compile(r"(?<![\w-])\d{2}-\d{2} \d{2}:\d{2}:\d{2}"), "%m-%d %H:%M:%S"),
    (re.compile(r"(?<![\d:])\d{2}:\d{2}:\d{2}(?![\d:])"), "%H:%M:%S"),
)
STAMP_BEFORE = 48  # a stamp starting later is part of the message (a bar's `00:01<00:00`)
NUMBER = re.compile(r"(?<![\d.])\d{4,}|(?<![0-9a-f])[0-9a-f]{12,}(?![0-9a-f])")  # ids, ports, pids, counts; short kept
VARIANTS = 8  # renumbered variants of each line, each checked to read as the original does


def stamp_of(line: str) -> tuple[re.Match[str], str] | None:
    """The stamp of the line's prefix and its strftime layout."""
    for pattern, layout in STAMPS:
        found = pattern.search(line, 0, STAMP_BEFORE + 24)
        if found is not None and found.start() < STAMP_BEFORE:
            return found, layout.format(*found.groups())
    return None


def restamp(line: str, now: datetime) -> str:
    """The line with its prefix's stamp set to `now`."""
    stamp = stamp_of(line)
    if stamp is None:
        return line
    found, layout = stamp
    return line[: found.start()] + now.strftime(layout) + line[found.end() :]


def shift_stamp(line: str, by: timedelta) -> str:
    """The line with its prefix's stamp moved on by `by` (as it is where the stamp does not parse)."""
    stamp = stamp_of(line)
    then = _parsed(stamp) if stamp is not None and by else None
    return line if then is None else restamp(line, then + by)


def _parsed(stamp: tuple[re.Match[str], str]) -> datetime | None:
    try:
        return datetime.strptime(stamp[0].group(), stamp[1])
    except ValueError:  # February 29th of a stamp without a year
        return None


def variants(line: str, packs: PackSet, r: random.Random) -> list[str]:
    """The line and copies of it with the numbers and hex ids after its stamp drawn afresh (same length),
    where the packs read each as they read the line (a status code, a rank tag, a count a rule names kept)."""
    from logphase.logs.matcher import explain

    def reading(text: str) -> tuple[str, ...]:
        return tuple(rule.id for rule, _ in explain(text, packs).matches)

    def fresh(found: re.Match[str]) -> str:
        text = found.group()
        if not text.isdigit():
            return "".join(r.choice("0123456789abcdef") for _ in text)
        return str(r.randrange(10 ** (len(text) - 1), 10 ** len(text)))

    stamp = stamp_of(line)
    after = stamp[0].end() if stamp else 0
    meaning = reading(line)
    found = [line]
    for _ in range(VARIANTS):
        copy = line[:after] + NUMBER.sub(fresh, line[after:])
        if copy != line and reading(copy) == meaning:
            found.append(copy)
    return found


SGLANG_03 = SGLang(date=False, comma=False, stamped_access=False, tags="TP{rank}")
SGLANG_04 = SGLang(date=True, comma=False, stamped_access=False, tags="TP{rank}")
SGLANG_05 = SGLang(date=True, comma=True, stamped_access=True, tags="DP0 TP{rank} EP{rank}")

SHAPES: dict[str, Shape | Corpus | None] = {
    "sglang-pooled": None,  # bench/loggen.py's LogGenerator: the log the fast path was first measured on
    "sglang-0.3": Shape(SGLANG_03),
    "sglang-0.4": Shape(SGLANG_04),
    "sglang-0.5": Shape(SGLANG_05),
    "vllm-v0": Shape(VLLM(v1=False), startup=False),
    "vllm-v1": Shape(VLLM(v1=True), startup=False),
    "rotated": Shape(SGLANG_05, startup=False),
    "nccl-storm": Shape(SGLANG_05, mix=NCCL_STORM),
    "sglang-generate": Shape(SGLANG_05, mix=GENERATE),
    "per-rank": Shape(SGLANG_05, per_rank=True),
    "cri": Shape(SGLANG_05, wrap=cri),
    "docker-t": Shape(SGLANG_05, wrap=docker_t),
    "journald": Shape(SGLANG_05, wrap=journald),
    **corpus_shapes(),
}


RANK_TAG = re.compile(r"^\[[^]]* TP(\d+)|^\S+:\d+:\d+ \[(\d+)\] NCCL")


def shape_per_rank(name: str) -> bool:
    shape = SHAPES[name]
    return shape is not None and shape.per_rank


def rank_of(line: str) -> int:
    """The rank that wrote a line (its TP tag or NCCL's `[rank]`); 0 for the rest."""
    found = RANK_TAG.match(line)
    return int(found.group(1) or found.group(2)) if found else 0


def serving(shape: Shape, r: random.Random, start: datetime) -> Iterator[tuple[datetime, str]]:
    """Serving lines forever, interleaved as they happen, with their wall time."""
    now, fmt, mix = start, shape.format, shape.mix
    decode, prefill, access, probe = (
        mix.decode,
        mix.decode + mix.prefill,
        mix.decode + mix.prefill + mix.access,
        mix.decode + mix.prefill + mix.access + mix.probe,
    )
    while True:
        now += timedelta(seconds=r.expovariate(200.0))
        roll = r.random()
        rank = r.randrange(RANKS)
        if roll < decode:
            yield now, fmt.decode(r, now, rank)
        elif roll < prefill:
            yield now, fmt.prefill(r, now, rank)
        elif roll < access:
            client = f"10.42.{r.randrange(0, 8)}.{r.randrange(2, 250)}:{r.randrange(30000, 65000)}"
            yield now, fmt.access(now, client, mix.request)
        elif roll < probe:
            path = r.choice(("/health", "/metrics", "/get_model_info"))
            yield now, fmt.access(now, f"127.0.0.1:{r.randrange(30000, 65000)}", f"GET {path}")
        else:
            yield now, fmt.nccl(r, now, rank)


def shape_lines(name: str, seed: int, size: int) -> Iterator[str]:
    """About `size` bytes of one shape's log, as lines without their newline."""
    from bench.loggen import LogGenerator  # the SGLang startup and crash every SGLang shape shares

    generator = LogGenerator(seed)
    shape = SHAPES[name]
    if shape is None:
        yield from generator.lines(size)
        return
    if isinstance(shape, Corpus):
        yield from shape.lines(seed, size)
        return
    r = random.Random(seed)
    sglang = isinstance(shape.format, SGLang)
    time_of_day = isinstance(shape.format, SGLang) and not shape.format.date
    head = list(generator.startup()) if shape.startup else []
    start = now = generator.clock.now
    budget = size - sum(len(line) + 1 for line in head) - 2048  # the crash
    written = 0
    wrap = shape.wrap
    for line in head:
        yield _finish(line, start, r, wrap, time_of_day=time_of_day)
    for now, line in serving(shape, r, start):
        if written >= budget:
            break
        line = _finish(line, now, r, wrap, time_of_day=False)
        written += len(line) + 1
        yield line
    if sglang:  # TP3 runs out of memory
        generator.clock.now = now
        for line in generator.crash():
            yield _finish(line, now, r, wrap, time_of_day=time_of_day)


def _finish(
    line: str,
    now: datetime,
    r: random.Random,
    wrap: Callable[[str, datetime, random.Random], str] | None,
    *,
    time_of_day: bool,
) -> str:
    line = _time_of_day(line) if time_of_day else line
    return wrap(line, now, r) if wrap else line


def _time_of_day(line: str) -> str:
    """SGLang 0.3.0's stamps: `[23:17:01 TP7]`, no date."""
    if line.startswith("[2026-") and line[11:12] == " ":
        return "[" + line[12:]
    return line
