"""Envelopes: the wrappers a log was collected or pasted in (docker, CRI, journald, kubectl, compose, stern,
srun, pdsh, Ray, TorchServe, log exports, markdown quotes and inline code, hard wraps), recognised once per source
and removed from every line before any system pack sees it. Pure: text in, text out.

An envelope is data (`ENVELOPES`): the shape of its prefix, where its timestamp and rank label are, how
its time is written. One mechanism reads them: `sniff` decides from a source's first lines which
envelopes it has, outermost first (they nest: `kubectl logs --prefix` over CRI, `> ` over `docker logs
-t`), and whether hard wraps are to be joined and the order reversed; `Unwrapper` then applies exactly
that to every line. Deciding per source, not per line, keeps a system's own lines that merely look
like an envelope (a pylogging stamp, a `0: ` list item) from being stripped in logs that have none."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from itertools import pairwise

from logphase.bounded import from_epoch, in_calendar, rank_label, read_rank
from logphase.frames import is_pyspy_thread
from logphase.logs.rich_box import boxed

# --- the envelopes (data) ------------------------------------------------------------------------

_RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"


@dataclass(frozen=True)
class Envelope:
    """One kind of wrapper: a prefix on every line. Groups of `pattern`: `ts` (its timestamp), `rank`
    (a rank label), `partial` (CRI's `P`: the line continues in the next one), `writer` (who wrote the
    line: pod, service; its values stay few, which tells a wrapper from a log's own words)."""

    name: str
    pattern: re.Pattern[str]
    time_formats: tuple[str, ...] = ()
    newest_first_possible: bool = False  # exports list the newest line first
    weak: bool = False  # a loose shape: needs several lines, all but a few of them matching
    rank_name: str = ""  # what its `rank` label counts: srun's tasks, torchrun's local ranks
    share: float = 0.9  # of the first lines that must carry it (pasted excerpts start with a stray line)
    max_writers: int = 16  # a wrapper names a few pods / services; a log's own first words vary more
    # a line of its own: the whole line is the wrapper (STAMP_LINE), whose stamp dates the lines after it
    alone: bool = False
    # a JSON record that holds the program's line as a string value: after the prefix comes that string's body, JSON
    # escapes and all, up to its closing quote, then the record's other keys (`json_text`)
    json_text: bool = False


def _envelope(
    name: str,
    pattern: str,
    *time_formats: str,
    newest_first: bool = False,
    weak: bool = False,
    rank_name: str = "",
    share: float = 0.9,
    max_writers: int = 16,
) -> Envelope:
    return Envelope(name, re.compile(pattern), time_formats, newest_first, weak, rank_name, share, max_writers)


# markdown's indented code block (CommonMark 4.4: each line of the block indented by four spaces, the way a paste
# is quoted without fences, or under a list item): four spaces before every line; a second layer under a list
INDENTED_CODE = _envelope("a markdown indented code block", r"^ {4}", weak=True)
RAY = "Ray"


# a name's parenthesised tail, one level nested inside it (`(MapBatches(f))`, a fused `(MapBatches(f)->Map(g))`)
NESTED_PARENS = r"(?:\((?:[^\s()]|\([^\s()]*\))*\))"


@cache
def ray_envelope(process_tags: frozenset[str]) -> Envelope:
    """Ray's log monitor's `(ActorName pid=123) `, `(pid=123, ip=10.0.0.1) `. The name is the actor's repr where
    its class defines `__repr__` (Ray's state API calls it `repr_name`: NeMo-RL's `MegatronPolicyWorker[rank=8]`),
    so it may hold any character but the tag's own space and parentheses, and a colon (Ray Serve's
    `ServeReplica:app:deployment`, which the ray pack reads as its own), save parentheses that nest whole after
    it: Ray Data's map actor's repr is `MapWorker({op name})`, the operator's name holding its function's
    (`MapWorker(MapBatches(vLLMEngineStageUDF))`: ray/data/_internal/execution/operators/
    actor_pool_map_operator.py, `__repr__`). Only a single actor's: the lines of several actors need their tag
    to stay apart (the packs read vLLM's and SGLang's actors' tags, with their ranks: `(Worker_TP1 pid=42)`,
    `(SchedulerActor pid=7)`). A tag whose name opens with one of `process_tags` is a system's own log format
    (a pack's `process_tags`: vLLM's `(APIServer pid=1) `), read by its pack: not an envelope."""
    own = "".join(f"|{re.escape(name)}" for name in sorted(process_tags))
    return _envelope(
        RAY,
        rf"^\((?P<writer>(?:(?!\w*(?:_?(?:TP|PP|DP|EP)\d|Scheduler){own})[A-Za-z_][^\s():]*{NESTED_PARENS}? )?pid=\d+)"
        r"(?:, ip=[\w.:]+)?\) ",
        max_writers=1,
    )


def envelopes_for(process_tags: frozenset[str]) -> tuple[Envelope, ...]:
    """ENVELOPES, in order, with Ray's told the systems' own process tags."""
    ray = ray_envelope(process_tags)
    return tuple(ray if envelope.name == RAY else envelope for envelope in ENVELOPES)


_JOURNAL_UNIT = r" (?P<writer>[^\s:]+) [^\s\[:]+(?:\[\d+\])?: "
ENVELOPES: tuple[Envelope, ...] = (
    # containerd / CRI-O log files (/var/log/pods): `TS stdout F text`; `P` lines are cut at 16 KiB
    _envelope("CRI container log", rf"^(?P<ts>{_RFC3339}) (?:stdout|stderr) (?P<partial>[FP])(?: |$)", "rfc3339"),
    # journalctl -o short-iso (before docker's stamp, which its own starts like)
    _envelope("journald (short-iso)", rf"^(?P<ts>{_RFC3339}){_JOURNAL_UNIT}", "rfc3339"),
    # `docker logs -t` / `kubectl logs --timestamps`: RFC 3339 with nanoseconds
    _envelope("docker logs -t", rf"^(?P<ts>{_RFC3339}) ", "rfc3339"),
    # log exports (Loki / Grafana / CloudWatch): tab-separated, a time column first, maybe a labels column
    _envelope(
        "log export (tab-separated)",
        rf"^(?P<ts>{_RFC3339}|\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{{10}}(?:\d{{3}}|\d{{6}}|\d{{9}})?)\t"
        r"(?:\{[^\t]*\}\t|[\w./-]+\t(?=.))?",
        "rfc3339",
        "%Y-%m-%d %H:%M:%S.%f",
        "%Y-%m-%d %H:%M:%S",
        "epoch",
        newest_first=True,
    ),
    # A log viewer's stamp to the millisecond and a bar before the program's own line (Docker Desktop's log view
    # copied, realworld 936: `2025-11-16 14:48:19.055 | 2025-11-16T11:48:19.053494Z  INFO text_embeddings_router: …`;
    # a web console's table, realworld 1332: `2024-07-26 16:03:47.197 | 07/26/2024 08:03:47-INFO-train_utils …`).
    # Only where the program's own date follows it: loguru's default format starts the same way, `{time:YYYY-MM-DD
    # HH:mm:ss.SSS} | {level: <8} | ` (TGI's Python shards), and is the line itself.
    _envelope(
        "a log viewer's stamp and bar",
        r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \| "
        r"(?=\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|\d\d/\d\d/\d{4} \d\d:\d\d:\d\d)",
        "%Y-%m-%d %H:%M:%S.%f",
    ),
    # Docker Desktop's log view: `YYYY-MM-DD HH:MM:SS ` (no fraction, no zone; not a logger's own
    # `YYYY-MM-DD HH:MM:SS - name - LEVEL - `: a dash and a space; a line of dashes, Megatron's `-----` rule
    # around its validation loss, is a wrapped line). A job console's stamp of the same shape may be set off by two
    # spaces (realworld 873: `2026-03-31 10:51:52  2026-03-31 10:51:52,906\tINFO cli.py:41 -- `): the second is
    # the envelope's too where a logger's own date and time follow it, which no line's indentation starts with.
    # Nor a logger's `YYYY-MM-DD HH:MM:SS | LEVEL | name | ` (FastChat's and LLaVA's build_logger), a bar and a space.
    _envelope(
        "Docker Desktop",
        r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?: (?=\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d))?(?![-|](?:\s|$)|[,.])",
        "%Y-%m-%d %H:%M:%S",
    ),
    # journalctl -o short / short-precise: no year, so the time is not taken. The month is strftime's `%b` in the
    # reader's locale (systemd logs-show.c formats short times with `%b %d %H:%M:%S`): `Mar`, `Dez`, `déc.`,
    # `мар`, `12月`; glibc's Japanese and Korean months 1-9 are padded with a space (ja_JP ` 5月`, ko_KR ` 5월`)
    _envelope(
        "journald", rf"^(?:(?:[^\W\d_]{{3,5}}\.?| ?\d{{1,2}}[月월]) [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?){_JOURNAL_UNIT}"
    ),
    # TorchServe's frontend logs each line a model worker prints through log4j2 (its log4j2.xml's PatternLayout
    # `%d{ISO8601} [%-5p] %t %c - %m%n`): `2024-10-07T22:54:54,595 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - `,
    # the thread named after the worker and its stream, the logger MODEL_LOG (its own lines: a class name)
    _envelope(
        "TorchServe (log4j)",
        r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{3}) \[(?:TRACE|DEBUG|INFO |WARN |ERROR|FATAL)\] "
        r"(?P<writer>\S+) [\w.$]+ - ",
        "%Y-%m-%dT%H:%M:%S,%f",
    ),
    # milabench's data log (milabench/log.py DataReporter: `json.dumps(entry.dict())` a line, the pack left out), one
    # record per event; a line the benchmark printed is `{"event": "line", "data": "<the line>\\n", "pipe": "stdout"}`,
    # its other events (`start`, `data`, `end`) records of their own: a share of the lines
    Envelope(
        "a milabench JSON-lines event log", re.compile(r'^\{"event": "line", "data": "'), share=0.3, json_text=True
    ),
    # kubectl logs --prefix: `[pod/NAME/CONTAINER] `
    _envelope("kubectl logs --prefix", r"^\[(?P<writer>pod/[^/\]\s]+/[^\]\s]+)\] "),
    # docker compose: `service-1  | ` (the name padded to the longest service's; `[name]` by some wrappers)
    _envelope("docker compose", r"^(?P<writer>\[?[A-Za-z0-9][\w.-]*\]?) *\|(?: |$)"),
    # pm2 logs (streamed): `ID|NAME` padded with spaces, then ` | ` (pm2 lib/API/Log.js `Log.stream`: the name is
    # `pm_id + '|' + name`, padded to one more than the longest seen, then `' | '`); its `tail` of the files writes
    # the name alone, padded, which is compose's shape above
    _envelope("pm2 logs", r"^(?P<writer>\d{1,5}\|[^\s|]+) *\| "),
    # stern: `POD CONTAINER ` (pod names have dashes: deployment-replicaset-suffix)
    _envelope("stern", r"^(?P<writer>[a-z0-9]+(?:-[a-z0-9]+)+ [a-z0-9]+(?:-[a-z0-9]+)*)(?: |$)", weak=True),
    # Slurm srun --label: `0: `, space padded to the widest task number
    _envelope("srun --label", r"^ *(?P<rank>\d{1,5}): ", weak=True, rank_name="task"),
    # pdsh / pdcp: `host: ` before each line a node printed (pdsh(1): `-N` "disable hostname: prefix on lines of
    # output"); a node's name holds a number (`gpu1504`, `node-07`, `10.0.0.7`): a log's own `Note: `, `INFO: ` do
    # not. A name without one is a learned column (LEARNED), taken where the packs read more without it
    _envelope("pdsh", r"^(?P<writer>(?=[\w.-]*\d)[A-Za-z0-9][\w.-]{0,62}): ", weak=True),
    # torchrun --tee / --log-dir: `[default0]:` (role, local rank); the agent's own lines go unlabelled
    _envelope("torchrun --tee", r"^\[default(?P<rank>\d{1,5})\]:", rank_name="local_rank", share=0.3),
    # a test harness's tee of a child's streams: accelerate's and transformers' testing `execute_subprocess_async`
    # (`accelerate test`) prints each line of the child as `print(label, line)`, label `stdout:` or `stderr:`
    # (accelerate 0.21.0 test_utils/testing.py:365-375)
    _envelope("a test harness's stream tee", r"^(?:stdout|stderr): "),
    # Open MPI mpirun --tag-output: `[jobid,rank]<stdout>:` (orte/prte iof_base_output.c: `"[%s,%s]<%s>:"`, the
    # local job id, the process's vpid -- its MPI rank -- and stdout / stderr / stddiag; no space after it). The tag
    # starts mpirun's line; blanks before it are a paste's indentation (realworld 557: a review's quote, `>` then eight
    # or nine spaces before each tag), which no line of a program's own starts an mpirun tag with.
    _envelope(
        "mpirun --tag-output", r"^[ \t]{0,16}\[\d+,(?P<rank>\d{1,6})\]<(?:stdout|stderr|stddiag)>:", rank_name="rank"
    ),
    # Ray's log monitor: `(ActorName pid=123) `, `(pid=123, ip=10.0.0.1) `; `sniff` tries it with the
    # packs' process tags, which are not Ray's (`ray_envelope`)
    ray_envelope(frozenset()),
    # markdown quotes (one level per layer; `>` alone quotes an empty line)
    _envelope("markdown quote", r"^>(?: |$)", weak=True),
    # pytest's report of a failed test (_pytest/_code/code.py FormattedExcinfo.get_exconly: `fail_marker` `E`, then
    # the failing statement's indentation less one, at least four in all, before each line of the exception and its
    # message): a child's traceback the test captured, quoted in an AssertionError (realworld 1381, a CI job's
    # `lmdeploy convert`; uv's CI, `E           File "…", line 113, in handle_request`). The marker and its three
    # spaces; the rest of the statement's indentation is the block's own, a learned column's.
    _envelope("pytest's failure lines", r"^E {3}", weak=True),
)

# A stamp on a line of its own, above the line(s) it dates: a log UI's copy that puts each event's time on a line and
# its message on the next (AWS CloudWatch's console, `2024-12-04T05:26:25.055Z` / `line`, realworld 947; Grafana's
# Loki view, `2025-05-21 16:20:15<TAB>` / `line`, realworld 113). The stamps are the ones the listed envelopes read
# (RFC 3339, a date and time with or without its fraction, epoch seconds to nanoseconds), nothing else on the line
# but white space. Learned per source from several of them alternating with the lines they date
# (`_stamps_alone`): a log's own line that is only a stamp (a script's `date -Is`) is left as it is.
STAMP_LINE = Envelope(
    "a stamp on a line of its own above the lines it dates",
    re.compile(
        rf"^[ \t]*(?P<ts>{_RFC3339}|\d{{4}}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{{1,9}})?"
        r"|\d{10}(?:\d{3}|\d{6}|\d{9})?)[ \t]*$"
    ),
    (
        "rfc3339",
        "%Y-%m-%d %H:%M:%S.%f",
        "%Y-%m-%d %H:%M:%S,%f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S.%f",
        "%Y-%m-%dT%H:%M:%S,%f",
        "%Y-%m-%dT%H:%M:%S",
        "epoch",
    ),
    alone=True,
)

# Leading columns no listed envelope names (a log viewer's time column or line numbers, a report's `  | ` rule,
# k9s's `│ `, a role label of a launcher, a replica label): each is a loose shape, taken only where the packs read
# more of the source's first lines without it than with it (`sniff`'s `reads`). Learned per source, never assumed.
TABLE_RULE = _envelope("a table's column rule", r"^(?:[ \t]{0,40}[|│┃¦][ \t]?)+", weak=True)
# A paste inside a markdown list item (CommonMark 5.2: the item's lines are indented by its marker's width, `1. `
# three spaces, `- ` two): the list's indentation before every line (realworld 1053: a shard bar alone, two spaces).
# After the code block's four, which either would take a part of. Unlike the other empty cells, never taken without
# asking the packs: a traceback's frames pasted alone are indented so too, and are read as they are.
LIST_INDENTS = (
    _envelope("a markdown list item's indentation", r"^ {3}", weak=True),
    _envelope("a markdown list item's indentation", r"^ {2}", weak=True),
)
LEARNED: tuple[Envelope, ...] = (
    # (a run of empty cells before the text is one column: `|  | `, Buildkite's `  | `; peeled one at a time, the
    # first would gain nothing the packs read)
    TABLE_RULE,
    # a spreadsheet's or a web table's row copied as tab-separated cells, the first ones empty
    _envelope("empty tab-separated cells", r"^\t+(?:[ \t]{0,40}[|│┃¦][ \t]?)*", weak=True),
    _envelope("a time-of-day column", r"^\d{1,2}:\d\d:\d\d(?:[.,]\d{1,9})? +", weak=True),
    _envelope(
        "a date and time column",
        r"^[ \t]{0,8}\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?[ \t]+",
        weak=True,
    ),
    _envelope("a bracketed process label", r"^\[(?P<writer>[A-Za-z_][\w.-]{0,40}(?:\|\d{1,5})?)\]:", weak=True),
    _envelope("a replica label", r"^(?P<writer>[A-Za-z_][\w.-]{0,60}/\d{1,5}) ", weak=True),
    # line numbers before each line: coreutils' `cat -n` and `nl` (`%6d` and a tab), a log viewer's gutter (a space);
    # before the indented block: `%6d` pads a number below 100 with four spaces or more, which that would take alone
    _envelope("a line-number column", r"^ {0,8}\d{1,7}(?:\t| {1,4})(?=\S)", weak=True),
    INDENTED_CODE,
    *LIST_INDENTS,
    # a writer's name and a colon, as pdsh's `host: ` (ENVELOPES) but of no number: `localhost: `, a launcher's
    # `stderr: `; few of them. Loose (a log's own `Note: ` lines): taken where the packs read more
    _envelope("a writer's label", r"^(?P<writer>[A-Za-z0-9][\w.-]{0,62}): ", weak=True),
)
# What taking a learned column must gain: this many more of the first lines read, and a tenth of them.
LEARNED_GAIN_LINES = 2
LEARNED_GAIN_SHARE = 0.1
# How deep the packs read a line (`sniff`'s `reads`): not at all (0), a prefix of theirs parses its start (READ_PREFIX:
# a `True` of a plain yes-or-no reader), or its message is read too (READ_MESSAGE: a rule matches it, or the matcher
# reads it as a traceback's frame).
READ_PREFIX = 1
READ_MESSAGE = 2
# A leading part of one shape on all but a few lines, no listed envelope nor LEARNED column: a collector's or an
# export's wrapper nobody listed (GCP Cloud Logging's copied view, `SEVERITY TIMESTAMP [resource.labels.KEY: VALUE] `;
# a runner's `host [stderr] `). Its shape is its first fields (runs of non-space, a space after each) with their
# digits free: the same words and punctuation on every line, stamps and counters varying. Taken as LEARNED's are,
# where the packs read more without it (the fewest fields that gain the most), and looked for only where the packs
# read under half the lines: a wrapper hides nearly every line. Up to eight fields: a fork's SGLang format writes seven
# before the message (`INFO <pid> [ DP15 TP15 EP15 scheduler_metrics_mixin.py:222] `, realworld 487 and 828; its rank
# tags go with it, the messages are read). What it hides is measured by the messages read (READ_MESSAGE), not the
# prefixes parsed: a wrapper that starts as a pack's prefix does (`<asctime> - INFO - [container] `, realworld 845)
# parses as that prefix and hides the message behind it all the same.
CONSTANT_NAME = "a leading part of one shape"
CONSTANT_FIELDS = 8
_FIELDS = [re.compile(rf"^(?:[^\s]+ ){{{count}}}(?=\S)") for count in range(1, CONSTANT_FIELDS + 1)]
# The part alone on a line, a space after it or none: the wrapper around one of the log's empty lines (a pod's name
# before each blank line of `kubectl logs` piped through a labeller, realworld 1049; `docker logs -t`'s stamp alone).
# It carries the part as the other lines do, with no message behind it to read.
_BARE_FIELDS = [re.compile(rf"^(?:[^\s]+ ){{{count - 1}}}[^\s]+ ?$") for count in range(1, CONSTANT_FIELDS + 1)]
_DIGITS = re.compile(r"\d+")

# Sniffing: how many of a source's first non-empty lines are looked at, and the fewest lines a loose
# shape must show.
SNIFF_LINES = 200
WEAK_LINES_NEEDED = 3
# An excerpt may have two lines without it (cut at both ends: realworld 013), but never half of its share.
STRAY_LINES = 2
MAX_LAYERS = 4
# An excerpt whose every line is a stamp alone or right under one shows that layout (STAMP_LINE) in this many events.
EVENTS_SHOWING_STAMP_LINES = 2
WRAP_COLUMNS = range(60, 241)  # the columns a paste is hard-wrapped at (80-200, and some slack)
WRAP_LINES_NEEDED = 2
# A paste wrapped at word boundaries (a text box's soft wrap copied as it shows, an author's hard wrap): each
# line cut at a space, so its pieces are at most as long as the column and each ends where the next piece's
# first word would not fit. Several cuts, of several lengths, with several rests, before the layout is taken: a
# log's own multi-line message repeated (one line and the same rest each time), or a box of rules, is no wrap.
WORD_CUTS_NEEDED = 3
SCREEN_ROWS_SHARE = 0.8  # of a screen copy's rows as wide as the terminal (a paste's last row may be trimmed)


@dataclass(frozen=True)
class Envelopes:
    """What `sniff` found for one source: the envelopes outermost first, the column its lines were
    hard-wrapped at, whether it lists the newest line first, whether its rank labels tell ranks
    apart (a label that is the same on every line, one srun task running a whole TP8 server, names a
    node or a launcher, not the rank of each line), and whether the fractions of its RFC 3339 stamps
    vary in length (Go's RFC3339Nano, containerd's CRI files and `kubectl logs --timestamps`, trims
    their trailing zeros; `docker logs -t` writes nine digits always)."""

    layers: tuple[Envelope, ...] = ()
    wrap_width: int | None = None
    newest_first: bool = False
    ranks_apart: bool = False
    trimmed: bool = False
    # a screen copy: every line padded with spaces to the wrap column, so a line ending in padding is whole
    screen: bool = False
    # the layers whose rank label is one and the same on every line sniffed (one srun task, one torchrun local
    # rank wrapped around a log whose own inner labels differ): such a label tells no line apart, the inner does
    still_layers: frozenset[int] = frozenset()
    # a paste that went through HTML outside a code block: its text escaped as markdown (`\_`, `\[`) or as
    # HTML entities (`&lt;`), undone before any envelope is read (`unescape`)
    markdown_escaped: bool = False
    html_escaped: bool = False
    # a paste that put each line in markdown's inline code (`` `line` ``, a backtick on either side): the marks
    # come off before any envelope is read (`uncode`)
    inline_code: bool = False
    # a paste put in one inline code span across its lines (`` `first line `` … `` last line` ``): the first line
    # opens it, a later one closes it; each line's unpaired backtick comes off (`unspan`)
    code_spanned: bool = False
    # the hard wrap is inside the envelopes: a log cut at the column before each of its lines was wrapped (a
    # hard-wrapped paste of it collected or copied again), so the envelopes come off each piece before they join
    wrap_inside: bool = False
    # the paste was wrapped at word boundaries, not at the column itself (`_word_wrap_width`): a line joins the
    # next where the next's first word would not have fitted on it; `record_starts`: the shapes of the first
    # characters (`shape`) that start the log's own records in the head, which no cut line's rest starts with
    word_wrap: bool = False
    record_starts: frozenset[str] = frozenset()

    def gives_rank(self, layer: int) -> bool:
        """Whether a line's label in this layer names its rank."""
        return self.ranks_apart and layer not in self.still_layers

    def __bool__(self) -> bool:
        return (
            bool(self.layers)
            or self.wrap_width is not None
            or self.newest_first
            or self.markdown_escaped
            or self.html_escaped
            or self.inline_code
            or self.code_spanned
        )

    @property
    def prefixes_only(self) -> bool:
        """Every envelope is a prefix of one physical line (CRI's parts aside): a byte scan can read the
        lines where they lie. Not a hard-wrapped paste (a line's length says whether the next joins it)
        nor an export listed newest first (read in reverse), nor a layout of stamps on lines of their own (a
        line's time is on the line above it)."""
        return (
            self.wrap_width is None
            and not self.newest_first
            and not self.escaped
            and not any(layer.alone or layer.json_text for layer in self.layers)
        )

    @property
    def escaped(self) -> bool:
        """The text is escaped (markdown or HTML) or marked as inline code: undone on each line, so no byte scan
        reads it where it lies."""
        return self.markdown_escaped or self.html_escaped or self.inline_code or self.code_spanned

    def notes(self, source: str) -> tuple[str, ...]:
        """What reading `source` through these envelopes assumed, for the report's notes."""
        notes: list[str] = []
        if self.layers:
            names = " inside ".join(envelope.name for envelope in reversed(self.layers))
            notes.append(f"lines unwrapped from: {names} (found in the first lines)")
        if self.wrap_width is not None and self.word_wrap:
            cut = f"lines cut at a space within {self.wrap_width} columns"
            notes.append(f"{cut} were joined (a paste wrapped at word boundaries)")
        elif self.wrap_width is not None:
            inside = " inside the envelopes" if self.wrap_inside else ""
            notes.append(f"lines cut at column {self.wrap_width}{inside} were joined (a hard-wrapped paste)")
        if self.markdown_escaped:
            notes.append("markdown's escapes undone (`\\_` read as `_`): the paste went through HTML")
        if self.html_escaped:
            notes.append("HTML entities undone (`&lt;` read as `<`): the paste went through HTML")
        if self.inline_code:
            notes.append("markdown's inline code marks removed (each line pasted as `` `line` ``)")
        if self.code_spanned:
            notes.append("markdown's inline code marks removed (the paste put in one `` `span` `` across its lines)")
        if self.newest_first:
            notes.append("the export lists the newest line first: read in reverse, lines numbered in time order")
        return tuple(f"{source}: {note}" for note in notes)


@dataclass(frozen=True, slots=True)
class Unwrapped:
    """One line out of its envelopes: its text, the envelope's time (only where it has a year) and the
    rank label an envelope gave (srun's `3: ` is `task 3`), and the physical line it started on."""

    number: int
    text: str
    stamp: datetime | None = None
    rank: str | None = None


# --- sniffing ------------------------------------------------------------------------------------


def sniff(
    head: Iterable[str], process_tags: frozenset[str] = frozenset(), reads: Callable[[str], int] | None = None
) -> Envelopes:
    """Decide from a source's first lines (decoded, colour codes and `\\r` at the end removed) which
    envelopes it has (`process_tags`: the packs' own `(Name pid=N) ` tags, never Ray's). `reads`: how deep
    the packs read a line (0, READ_PREFIX, READ_MESSAGE; any but 0 is read); given, a leading column of LEARNED is
    taken where no listed envelope fits and the packs read more lines without it. Never raises; a source with none
    gets an empty `Envelopes`."""
    candidates = envelopes_for(process_tags)
    head = list(head)[: SNIFF_LINES * 2]
    lines = [line for line in head if line.strip()][:SNIFF_LINES]
    physical = lines
    screen = _screen_copy(lines)
    # a wrap at word boundaries first: its pieces are of many lengths, a few of them as long as the column by chance,
    # where a paste cut at the column itself has them all of that one length. Not in a paste that went through HTML or
    # inline code: its escapes and marks changed each line's length after it was cut, so no length tells a cut
    converted = _inline_code(lines) or _hard_breaks(lines) or _escapes_of(lines, _MARKDOWN_TOKEN, _MARKDOWN_EVIDENCE)
    converted = converted or _escapes_of(lines, _HTML_TOKEN, "")
    wrap_width = None if converted else _word_wrap_width(lines)
    word_wrap, record_starts = False, frozenset[str]()
    if wrap_width is not None:
        word_wrap, record_starts = True, _record_starts(lines, wrap_width)
        lines = [joined for _, joined in _join_word_wraps(enumerate(lines), wrap_width, record_starts)]
    elif (wrap_width := _wrap_width(lines, screen)) is not None:
        lines = [joined for _, joined in _join_wraps(enumerate(lines), wrap_width, screen)]
    inline_code = _inline_code(lines)
    lines = [uncode(line, inline_code) for line in lines]
    code_spanned = not inline_code and _code_spanned(lines)
    lines = [unspan(line, code_spanned) for line in lines]
    markdown_escaped = _escapes_of(lines, _MARKDOWN_TOKEN, _MARKDOWN_EVIDENCE) or _hard_breaks(lines)
    html_escaped = _escapes_of(lines, _HTML_TOKEN, "")
    lines = [unescape(line, markdown_escaped, html_escaped) for line in lines]
    layers: list[Envelope] = []
    ranks: set[str] = set()
    still: set[int] = set()
    fractions: set[int] = set()  # the lengths of the RFC 3339 stamps' fractions
    on_records = False  # a layer was found on the records' first lines only: the ones inside it are so too
    for _ in range(MAX_LAYERS):
        # an envelope on all but a few lines first (`docker logs -t` writes `<stamp> ` alone for an empty line); then
        # stamps on lines of their own, before an envelope found on the records only: a listed envelope's stamp
        # column (a tab export's) may match them too, with nothing after it, and would leave the lines they date bare
        found = _envelope_of(lines, candidates, on_records, reads, passes=(False,))
        if found is None and STAMP_LINE not in layers and _stamps_alone(lines):
            found = STAMP_LINE
        if found is None:
            found = _envelope_of(lines, candidates, on_records, reads, passes=(True,))
        if found is None and reads is not None:
            found = (
                _loose_on_a_few(lines, reads, candidates)
                or _learned_column(lines, reads, candidates)
                or _constant_part(lines, reads, candidates)
            )
        if found is None:
            break
        layers.append(found)
        matches = [found.pattern.match(line) for line in lines]
        on_records = on_records or not (found.alone or _on_lines(lines, found, sum(m is not None for m in matches)))
        labels = {read_rank(m["rank"]) for m in matches if m is not None and m.groupdict().get("rank")} - {None}
        ranks |= {str(label) for label in labels}
        if len(labels) == 1:
            still.add(len(layers) - 1)
        if "rfc3339" in found.time_formats:
            stamps = [_RFC3339_PARTS.match(m["ts"]) for m in matches if m is not None and m.groupdict().get("ts")]
            fractions |= {len(parts["fraction"] or "") for parts in stamps if parts is not None}
        lines = _join_partials(
            [
                (json_text(line[m.end() :]) if found.json_text else line[m.end() :]) if m else line
                for line, m in zip(lines, matches, strict=True)
            ],
            matches,
        )
        lines = [line for line in lines if line.strip()]
    # the span may be inside the envelopes (a wrapper's prefix before its opening backtick): read once they are off
    code_spanned = code_spanned or (bool(layers) and not inline_code and _code_spanned(lines))
    wrap_inside = False
    if wrap_width is None and layers and not any(layer.json_text for layer in layers):
        # cut before it was wrapped: every piece carries the envelopes, so the rest of a cut line starts as the
        # line did (its stamp, its column) and shows the cut only once they are off (a JSON record holds its line
        # whole in its string: lines of one length inside are no cut)
        screen = _screen_copy(lines)
        wrap_width = _wrap_width(lines, screen)
        wrap_inside = wrap_width is not None
    elif wrap_width is not None and not word_wrap and layers and _carried(physical, wrap_width, layers[0]):
        # the rests of the cut lines carry the envelope too (one that differs from line to line, a tab column):
        # the cut is inside it, at the column the lines show once it is off
        inner = [_peel(line, layers) for line in physical]
        inner = [line for line in inner if line.strip()]
        inner_screen = _screen_copy(inner)
        if (inner_width := _wrap_width(inner, inner_screen)) is not None:
            wrap_width, screen, wrap_inside = inner_width, inner_screen, True
    newest_first = any(layer.newest_first_possible for layer in layers) and _descending(
        head, layers, wrap_width, screen, wrap_inside, (word_wrap, record_starts)
    )
    if not newest_first and not any(layer.time_formats for layer in layers):
        # no wrapper's stamp says the order: the log's own lines do (its stamps, a traceback's frames)
        newest_first = _own_stamps_descending(lines) or _traceback_reversed(lines)
    if newest_first and (wrap_inside or word_wrap):
        # read in reverse, a cut line's rest comes before it: left as it is
        wrap_width, wrap_inside, word_wrap, record_starts = None, False, False, frozenset()
    return Envelopes(
        tuple(layers),
        wrap_width,
        newest_first,
        ranks_apart=len(ranks) > 1,
        trimmed=len(fractions) > 1,
        screen=screen and wrap_width is not None,
        still_layers=frozenset(still) if len(still) < len(layers) else frozenset(),
        markdown_escaped=markdown_escaped,
        html_escaped=html_escaped,
        wrap_inside=wrap_inside,
        inline_code=inline_code,
        word_wrap=word_wrap,
        record_starts=record_starts,
        code_spanned=code_spanned,
    )


# A backslash before an ASCII punctuation character is an escape (CommonMark 2.4); an HTML-to-markdown converter
# (turndown, Google Docs) escapes every `_ * [ ] `` ` and backslash, so a paste it wrote has them escaped only;
# an underscore inside a word opens no emphasis (CommonMark 6.2), so a converter that escapes only what could be read
# as markdown (Discourse's: `\[backends.py:1051\]` beside `rank_0_0`) leaves it bare: no bare character of its kind
_MARKDOWN_TOKEN = re.compile(r"\\[!-/:-@\[-`{-~]|[*\[\]`]|(?<![^\W_])_|_(?![^\W_])")
_MARKDOWN_EVIDENCE = "\\_*[]`"
_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# HTML's entities: text written into HTML has every `<`, `>` and `&` as one
_HTML_TOKEN = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d{1,7}|#x[0-9a-fA-F]{1,6});|[<>&]")
ESCAPED_SHARE = 10  # escapes needed for each character left bare (a human's line above the paste)


# a JSON string's body (RFC 8259 §7): characters other than a quote or a backslash, and escapes; it ends at the first
# quote no backslash escapes
_JSON_BODY = re.compile(r'(?:[^"\\]|\\.)*')


def json_text(body: str) -> str:
    """The text of a JSON string whose body starts `body`, read up to its closing quote (the record's other keys after
    it dropped), its escapes undone (json's own decoder: a surrogate pair is one character); the line end it kept
    (`\\n`) off. A record cut before its closing quote (a paste's last line) gives what it holds, an escape it cut
    and a lone surrogate half replaced."""
    import json  # deferred: only a JSON-lines log needs it (tests/test_startup_imports.py)

    found = _JSON_BODY.match(body)
    string = found.group() if found is not None else ""
    if (len(string) - len(string.rstrip("\\"))) % 2:
        string = string[:-1]  # the cut fell inside an escape: its backslash alone
    try:
        text = str(json.loads(f'"{string}"'))
    except json.JSONDecodeError:
        text = string  # an escape the cut left unfinished (`\\u00`), a bare control character: the text as it stands
    return text.encode("utf-8", "replace").decode("utf-8").removesuffix("\n").removesuffix("\r")


def _escapes_of(lines: Sequence[str], token: re.Pattern[str], evidence: str) -> bool:
    """Whether the lines' special characters are escaped, all but a few: at least one escape, and ten
    for each left bare. A log's own backslashes (a Windows path, a regex, JSON's `\\"`) sit among bare
    brackets and underscores."""
    escaped = bare = 0
    for line in lines:
        for found in token.finditer(line):
            text = found.group()
            if len(text) == 1:
                bare += 1
            elif not evidence or text[1] in evidence:
                escaped += 1
    return escaped > 0 and bare * ESCAPED_SHARE <= escaped


# A line as markdown's inline code (CommonMark 6.1): a backtick string on either side of equal length, the log's line
# between them; a space on both sides of it is the span's padding (written where the line starts or ends with `)
_CODE_SPAN = re.compile(r"^(?P<ticks>`+)(?!`)(?P<text>.*?[^`])(?P=ticks)[ \t]*$")


def _inline_code(lines: Sequence[str]) -> bool:
    """Whether all but a few of the lines are each one inline code span (a person wrapped every line in
    backticks: a log's own lines rarely start and end with one, and never nearly all of them)."""
    spans = sum(1 for line in lines if _CODE_SPAN.match(line))
    return spans > 0 and spans >= max(len(lines) / 2, min(0.9 * len(lines), len(lines) - STRAY_LINES))


def uncode(text: str, inline_code: bool) -> str:
    """A line of a paste in inline code as the log wrote it: the span's backticks off (a line not in one stays)."""
    if inline_code and (span := _CODE_SPAN.match(text)) is not None:
        inner = span["text"]
        padded = len(inner) > 2 and inner[0] == inner[-1] == " " and inner.strip(" ")
        return inner[1:-1] if padded else inner
    return text


# A backtick alone where a span opens or closes: not one of a pair on its line (a log's own backticks quote a name,
# `use_cache=True`, in pairs), not a run of two or more (a fence, ```, or a span of a longer run)
_LONE_OPENING = re.compile(r"^`(?!`)")
_LONE_CLOSING = re.compile(r"(?<!`)`$")


def _unpaired(line: str) -> bool:
    return line.count("`") % 2 == 1


def _code_spanned(lines: Sequence[str]) -> bool:
    """Whether the paste opens one inline code span on its first line that the line does not close (CommonMark 6.1:
    a span may go on over line endings): a person quoted the lines as `` `…` `` inline, its closing backtick on the
    paste's last line (or cut off with it). A program's line rarely begins with a backtick it never closes."""
    return bool(lines) and _unpaired(lines[0]) and _LONE_OPENING.match(lines[0]) is not None


def unspan(text: str, code_spanned: bool) -> str:
    """A line of a paste in one inline code span as the log wrote it: the span's opening backtick off the line that
    begins with it, its closing one off the line that ends with it (a line with its backticks paired stays)."""
    if not code_spanned or not _unpaired(text):
        return text
    if _LONE_OPENING.match(text) is not None:
        return text[1:]
    if _LONE_CLOSING.search(text) is not None:
        return text[:-1]
    return text


def _hard_breaks(lines: Sequence[str]) -> bool:
    """Whether every line ends with markdown's hard break (two spaces), as a converter writes each line of a
    paragraph (Google Docs' markdown): a paste with nothing to escape shows its converter only by these."""
    return len(lines) >= WEAK_LINES_NEEDED and all(line.endswith("  ") for line in lines)


def unescape(text: str, markdown: bool, entities: bool) -> str:
    """A line of a paste that went through HTML as the log wrote it: markdown's backslash escapes undone
    (and the hard break, two spaces, a converter ends a line with), then HTML's entities."""
    if markdown:
        text = _MARKDOWN_ESCAPE.sub(r"\1", text.removesuffix("  "))
    if entities and "&" in text:
        import html  # only a paste that went through HTML (~1 ms of every run's start-up)

        text = html.unescape(text)
    return text


def _envelope_of(
    lines: Sequence[str],
    candidates: Sequence[Envelope],
    inside_records: bool = False,
    reads: Callable[[str], int] | None = None,
    passes: tuple[bool, ...] = (False, True),
) -> Envelope | None:
    """The first candidate on all but a few of the lines; else the first stamp on all but a few of the lines
    that start a record (`_on_records`: a log UI's copy, its time column absent from a record's later lines),
    or any strict candidate so, `inside_records`, within an envelope found so (compose's `name | `). `reads`
    given, a candidate whose writer's label swallows a known message's own leading words is passed over
    (`_swallows`). `passes`: which of the two to try (on the lines: False; on the records: True)."""
    if not lines:
        return None
    for on_records in passes:
        for envelope in candidates:
            if envelope.weak and (on_records or len(lines) < WEAK_LINES_NEEDED):
                continue
            matches = [m for line in lines if (m := envelope.pattern.match(line))]
            if on_records:
                if not (envelope.time_formats or inside_records) or not _on_records(lines, envelope, len(matches)):
                    continue
            elif not _on_lines(lines, envelope, len(matches)):
                continue
            if "writer" in envelope.pattern.groupindex and len({m["writer"] for m in matches}) > envelope.max_writers:
                continue
            if envelope.weak and all(m.end() == len(m.string) for m in matches):
                continue  # nothing after the prefix anywhere: not a wrapper around a log
            if envelope is INDENTED_CODE and any(is_pyspy_thread(line) for line in lines):
                # py-spy's text dump indents its frames four spaces under each thread line at the margin (src/dump.rs
                # `print_trace`): the dump's own layout, not a code block's (a dump pasted alone, few lines)
                continue
            if reads is not None and _swallows(matches, reads):
                continue
            return envelope
    return None


def _swallows(matches: Sequence[re.Match[str]], reads: Callable[[str], int]) -> bool:
    """Whether an envelope's writer's label takes off the words a known message begins with: on most of the lines
    it labels, the packs read the line from the label on (`Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2`,
    Lightning's, behind a `docker logs -t` stamp, where journald's `host ident: ` would take `Initializing
    distributed: `) and not the rest after it. A real label (a host, a unit, a service) is no message's words."""
    labelled = [m for m in matches if m.groupdict().get("writer")]
    swallowed = sum(1 for m in labelled if not reads(m.string[m.end() :]) and reads(m.string[m.start("writer") :]))
    return 2 * swallowed > len(labelled)


def _carried(physical: Sequence[str], width: int, outer: Envelope) -> bool:
    """Whether most of the pieces that continue a line cut at `width` start with the outermost envelope."""
    rests = [physical[i + 1] for i, line in enumerate(physical[:-1]) if len(line) == width]
    return bool(rests) and 2 * sum(1 for rest in rests if outer.pattern.match(rest)) > len(rests)


def _peel(line: str, layers: Sequence[Envelope]) -> str:
    """One physical line out of the envelopes it carries."""
    for envelope in layers:
        if (found := envelope.pattern.match(line)) is not None:
            line = line[found.end() :]
    return line


def _stamps_alone(lines: Sequence[str]) -> bool:
    """Whether the lines are laid out as stamps on lines of their own above the lines they date (STAMP_LINE): several
    such lines, and at least half of the records (a line that is no continuation, or one right under a stamp) right
    under one; in an excerpt of two events, every line a stamp or right under one. A stray stamp line (a script's
    `date`), or a few among many undated records, are the log's."""
    alone = [STAMP_LINE.pattern.match(line) is not None for line in lines]
    dated = records = undated = 0
    for index, line in enumerate(lines):
        if alone[index]:
            continue
        under = index > 0 and alone[index - 1]
        undated += not under
        if under or not _CONTINUATION.search(line):
            records += 1
            dated += under
    if undated == 0 and dated >= EVENTS_SHOWING_STAMP_LINES:
        return True  # (a stamp above each of an excerpt's lines: two events show the layout as well as many)
    return dated >= WEAK_LINES_NEEDED and 2 * dated >= records


def _on_lines(lines: Sequence[str], envelope: Envelope, found: int) -> bool:
    """Whether an envelope is on its share of the lines, or all but a few of an excerpt's."""
    share = envelope.share
    return found >= max(1, share / 2 * len(lines), min(share * len(lines), len(lines) - STRAY_LINES))


def _on_records(lines: Sequence[str], envelope: Envelope, stamped: int) -> bool:
    """Whether an envelope is on the lines that start a record, all but a few of them: a log UI shows its
    time column once per event, not on the event's later lines (a traceback's frames, a message's indented
    tail) nor on a progress bar's redraws, which a browser shows as lines of their own (and an envelope
    inside the stamp is then on the same lines only: compose's `name | `)."""
    records = sum(1 for line in lines if envelope.pattern.match(line) or not _CONTINUATION.search(line))
    if stamped == records:  # every record stamped (a traceback pasted alone has one or two)
        return stamped > 0
    return stamped >= WEAK_LINES_NEEDED and stamped >= min(envelope.share * records, records - STRAY_LINES)


# A line that goes on the record before it: indented, or a progress bar's redraw (tqdm's `NN%|` or `| N/M [`)
_CONTINUATION = re.compile(r"^\s|\d%\||\| *\d+/\d+ \[")


def _loose_on_a_few(
    lines: Sequence[str], reads: Callable[[str], int], candidates: Sequence[Envelope]
) -> Envelope | None:
    """A loose listed envelope (a markdown quote, an srun label, stern's pod and container) on every line of an
    excerpt too short to show a loose shape (one or two lines: a line quoted in a review, one task's last words):
    taken where the packs read more of its lines without it (and the listed envelopes inside it) than with it."""
    if not 0 < len(lines) < WEAK_LINES_NEEDED:
        return None
    read = _count(reads, lines)
    for envelope in candidates:
        if not envelope.weak:
            continue
        matches = [envelope.pattern.match(line) for line in lines]
        rests = [line[m.end() :] for line, m in zip(lines, matches, strict=True) if m and m.end() < len(line)]
        if len(rests) == len(lines) and _count(reads, _peeled(rests, candidates)) > read:
            return envelope
    return None


def _learned_column(
    lines: Sequence[str], reads: Callable[[str], int], candidates: Sequence[Envelope] = ()
) -> Envelope | None:
    """The first LEARNED column the lines carry whose removal lets the packs read more of them (with the
    listed envelopes it was around removed too: a log UI's empty cells before `docker logs -t` lines)."""
    fitting = [envelope for envelope in LEARNED if _envelope_of(lines, (envelope,)) is not None]
    if any(map(boxed, lines)) or any(map(TABLE_DIVIDER.match, lines)):
        # rich's traceback box: its left side is the box's, not a table's column (logs/rich_box.py reads its rows);
        # an ASCII table's `+---+` divider: its rows' `| ` is the table's edge, the row the table's own text
        fitting = [envelope for envelope in fitting if envelope is not TABLE_RULE]
    read = _count(reads, lines)
    if not fitting and 0 < len(lines) < WEAK_LINES_NEEDED:
        # a line or two: too few for a loose shape, but empty cells before every one of them, each line read
        # without them and more read so, are a column all the same
        fitting = [envelope for envelope in LEARNED if all(envelope.pattern.match(line) for line in lines)]
        for envelope in fitting:
            matches = [envelope.pattern.match(line) for line in lines]
            if any(m is None or _TEXT.search(m.group()) for m in matches):
                continue
            peeled = _peeled(
                [line[m.end() :] if m else line for line, m in zip(lines, matches, strict=True)], candidates
            )
            if all(map(reads, peeled)) and len(peeled) > read:
                return envelope
        return None
    for envelope in fitting:
        matches = [envelope.pattern.match(line) for line in lines]
        peeled = _peeled([line[m.end() :] if m else line for line, m in zip(lines, matches, strict=True)], candidates)
        gained = _count(reads, peeled) - read
        # empty cells (white space and rules, no text) on all but a few lines hide nothing: taken without asking the
        # packs (a paste of a traceback alone has no line they read either way, and an indented source line behind
        # the cells is read as a message of its own only while they hide its indentation)
        if envelope not in LIST_INDENTS and not any(_TEXT.search(m.group()) for m in matches if m is not None):
            return envelope
        if gained >= max(LEARNED_GAIN_LINES, LEARNED_GAIN_SHARE * len(lines)):
            return envelope
    return None


_TEXT = re.compile(r"\w")


def _constant_part(
    lines: Sequence[str], reads: Callable[[str], int], candidates: Sequence[Envelope] = ()
) -> Envelope | None:
    """The leading part of one shape the lines carry (CONSTANT_FIELDS) whose removal lets the packs read more of them:
    of the shapes found on all but a few lines, the fewest fields that gain the most. Looked for where the packs read
    under half the lines' messages, and taken where they read more lines or, reading as many, more messages."""
    if len(lines) < WEAK_LINES_NEEDED:
        return None
    read, messages = _counts(reads, lines)
    if 2 * messages >= len(lines):
        return None
    needed = max(LEARNED_GAIN_LINES, LEARNED_GAIN_SHARE * len(lines))
    best: tuple[tuple[int, int], Envelope] | None = None
    for fields, bare in zip(_FIELDS, _BARE_FIELDS, strict=True):
        shapes: dict[str, int] = {}
        for line in lines:
            if (found := fields.match(line)) is not None:
                shape = _DIGITS.sub("0", found.group())
            elif bare.match(line) is not None:
                shape = _DIGITS.sub("0", line.rstrip(" ") + " ")
            else:
                continue
            shapes[shape] = shapes.get(shape, 0) + 1
        if not shapes:
            break
        shape, count = max(shapes.items(), key=lambda item: item[1])
        envelope = _envelope(CONSTANT_NAME, "^" + r"\d+".join(map(re.escape, shape.split("0"))), weak=True)
        if not _on_lines(lines, envelope, count):
            break  # a longer part is on fewer lines still
        matches = [envelope.pattern.match(line) for line in lines]
        peeled = _peeled([line[m.end() :] if m else line for line, m in zip(lines, matches, strict=True)], candidates)
        peeled_read, peeled_messages = _counts(reads, peeled)
        gained = (peeled_read - read, peeled_messages - messages)
        if (gained[0] >= needed or (gained[0] >= 0 and gained[1] >= needed)) and (best is None or gained > best[0]):
            best = (gained, envelope)
    return None if best is None else best[1]


def _count(reads: Callable[[str], int], lines: Iterable[str]) -> int:
    """How many of the lines the packs read (at any depth)."""
    return sum(1 for line in lines if reads(line))


def _counts(reads: Callable[[str], int], lines: Iterable[str]) -> tuple[int, int]:
    """How many of the lines the packs read, and of how many they read the message (READ_MESSAGE)."""
    depths = [reads(line) for line in lines]
    return sum(1 for depth in depths if depth), sum(1 for depth in depths if depth >= READ_MESSAGE)


def _peeled(lines: Sequence[str], candidates: Sequence[Envelope]) -> list[str]:
    """The lines out of the listed envelopes they carry, outermost first (as `sniff` would find them), and out of a
    markdown list's indentation on every one of them (LIST_INDENTS: a wrapper around a line pasted in a list item,
    realworld 1053 behind a pod's name, is what hides it as much as the indentation)."""
    out = list(lines)
    for _ in range(MAX_LAYERS - 1):
        found = _envelope_of(out, candidates)
        if found is None:
            break
        out = [line[m.end() :] if (m := found.pattern.match(line)) else line for line in out]
    for indent in LIST_INDENTS:
        matches = [indent.pattern.match(line) for line in out]
        if out and all(matches):
            return [line[m.end() :] if m else line for line, m in zip(out, matches, strict=True)]
    return out


def _join_partials(lines: Sequence[str], matches: Sequence[re.Match[str] | None]) -> list[str]:
    """CRI's `P` parts joined with the parts that follow, so the envelopes inside are sniffed whole."""
    joined: list[str] = []
    held = ""
    for line, found in zip(lines, matches, strict=True):
        if found is not None and found.groupdict().get("partial") == "P":
            held += line
            continue
        joined.append(held + line)
        held = ""
    return [*joined, held] if held else joined


def _screen_copy(lines: Sequence[str]) -> bool:
    """Whether the lines are a copy of a terminal's screen: all but the last as long as the longest (the
    rows, padded with spaces to the terminal's width), several of them ending in that padding."""
    if len(lines) < WRAP_LINES_NEEDED + 1:
        return False
    width = max(len(line) for line in lines)
    rows = lines[:-1]
    full = sum(1 for line in rows if len(line) == width)
    return full >= SCREEN_ROWS_SHARE * len(rows) and sum(map(padded, rows)) >= WRAP_LINES_NEEDED


def _wrap_width(lines: Sequence[str], screen: bool = False) -> int | None:
    """The column a paste cut its long lines at: the longest length, shared by several lines that are
    followed by a shorter line that does not start like them (the rest of the cut line). A progress
    bar redrawn at its full width is followed by itself, so it does not count."""
    if len(lines) < WRAP_LINES_NEEDED + 1:
        return None
    width = max(len(line) for line in lines)
    if width not in WRAP_COLUMNS:
        return None
    cut = [i for i, line in enumerate(lines[:-1]) if len(line) == width and not (screen and padded(line))]
    continued = [i for i in cut if continues(lines[i], lines[i + 1])]
    if len(continued) < WRAP_LINES_NEEDED or len(continued) * 2 < len(cut):
        return None
    return width


def _descending(
    head: Iterable[str],
    layers: Sequence[Envelope],
    wrap_width: int | None,
    screen: bool,
    wrap_inside: bool = False,
    words: tuple[bool, frozenset[str]] = (False, frozenset()),
) -> bool:
    """Most of the stamps the envelopes give go back in time from line to line (`words`: the paste is wrapped at
    word boundaries, and the shapes its records start with)."""
    envelopes = Envelopes(
        tuple(layers), wrap_width, screen=screen, wrap_inside=wrap_inside, word_wrap=words[0], record_starts=words[1]
    )
    unwrapper = Unwrapper(envelopes)
    stamps = [u.stamp for line in head for u in unwrapper.feed(0, line) if u.stamp is not None]
    stamps += [u.stamp for u in unwrapper.end() if u.stamp is not None]
    pairs = list(pairwise(stamps))
    falling = sum(1 for a, b in pairs if b < a)
    rising = sum(1 for a, b in pairs if b > a)
    return falling > rising


# A log's own stamp near the start of its line (after a prefix of its own: a process tag, a level): a date and a
# time of day, its fraction with `.` or `,` (logging's asctime), the year optional (vLLM's `%m-%d %H:%M:%S`)
OWN_STAMP = re.compile(r"(?<![\d:.-])(?:\d{4}-)?\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?![\d:])")
OWN_STAMP_SPAN = 80  # where on a line a log's own stamp may stand (its prefix's first fields)
OWN_STAMPS_FALLING = 2  # a log's own stamps going back this often, and never forward, is an export newest first


def _own_stamps_descending(lines: Sequence[str]) -> bool:
    """The log's own stamps go back in time from line to line throughout (never forward, at least twice back): an
    export listed newest first whose wrapper's stamps were dropped (a console's copy, a quoted paste), read in
    reverse. Stamps of one shape are compared as text (digits in a fixed place read in order)."""
    stamps = [
        found.group(0).replace(",", ".") for line in lines if (found := OWN_STAMP.search(line, 0, OWN_STAMP_SPAN))
    ]
    pairs = [(a, b) for a, b in pairwise(stamps) if len(a) == len(b)]
    falling = sum(1 for a, b in pairs if b < a)
    return falling >= OWN_STAMPS_FALLING and not any(b > a for a, b in pairs)


# CPython's traceback prints a frame's `File "…", line N, in f` line, then its source line, then (3.11+) the carets
# under the failing expression (Lib/traceback.py StackSummary.format_frame_summary): carets right under a frame's
# line are a traceback read bottom up, a source line's carets under it one read top down
TRACEBACK_FILE = re.compile(r'(?:^|\s)File "[^"]*", line \d+, in \S+\s*$')
TRACEBACK_CARETS = re.compile(r"\s{4}[~^]*\^[~^]*\s*$")
CARETS_REVERSED = 2  # carets right under a frame's line this often (and never under a source line): reversed


def _traceback_reversed(lines: Sequence[str]) -> bool:
    """A traceback listed bottom up (a console export newest first, its lines unstamped): the carets CPython prints
    under a frame's source line stand right under the frame's `File` line instead, and never under a source line."""
    reversed_, forward = 0, 0
    for above, line in pairwise(lines):
        if TRACEBACK_CARETS.search(line) is None or TRACEBACK_CARETS.search(above) is not None:
            continue
        if TRACEBACK_FILE.search(above) is not None:
            reversed_ += 1
        else:
            forward += 1
    return reversed_ >= CARETS_REVERSED and not forward


def padded(line: str) -> bool:
    """Whether a row of a screen copy is a whole line the terminal padded to its width with spaces, not
    one it cut: a cut falls inside the text, at most just after one space between two words. (Only in a
    screen copy: in a plain hard-wrapped paste a cut may fall inside a run of spaces, an indentation.)"""
    return line.endswith("  ")


def cut_at(text: str, width: int, screen: bool) -> bool:
    """Whether the paste cut `text` at the column: its rest is on the next line."""
    return bool(text) and len(text) % width == 0 and not (screen and padded(text))


# Where a record starts (reader.py splits a line there; `continues` never takes one for a cut line's rest): the
# openings of the lines a bar is seen glued to (SGLang's `[2025-03-08 12:29:13 …]`, torch's
# `[rank0]:`, c10's `[E ProcessGroupNCCL.cpp:458] ` / `[W1209 11:24:53.753104426 compiler_depend.ts:28] `, glog's
# (elastic's) `W0529 15:43:30.844000 15110 …/api.py:897] `: ref 2.1; realworld 454, 159, 357), logging's
# BASIC_FORMAT `%(levelname)s:%(name)s:%(message)s` (CPython's logging.basicConfig, which torch's elastic agent
# writes through when nothing configured it: `WARNING:torch.distributed.elastic.multiprocessing.api:`), vLLM's
# `%(levelname)s %(asctime)s ` with its `%m-%d %H:%M:%S` (ref 6.1) and CPython's traceback header.
RECORD_START = (
    r"\[(?:(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d|rank\d+\]:|[FEWIV](?:\d{3,4} \d\d:\d\d:\d\d\.\d+)? [\w.]+:\d+\] )"
    r"|[IWEF](?:\d{4})?\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w./-]+:\d+\] "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:(?=\S)"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d "
    r"|Traceback \(most recent call last\):"
)
# A box a terminal library draws fills the width too (rich's Panel pads each row and ends it with the box's right
# edge, box.py ROUNDED: its traceback, logs/rich_box.py): a row that ends with the bottom-right corner is the box's
# last, whole; one that ends with the right side or the top-right corner is whole where a row of the box follows
BOX_END = "╯"
BOX_RIGHT = ("│", "╮")
BOX_LEFT = ("│", "╰")
# An ASCII table drawn to a fixed width, the same: Triton's status tables (triton-inference-server/common
# table_printer.cc: `+---+` dividers and `| cell | cell |` rows, each cell padded to its column's width) print every
# line of a table at one length; a line that starts and ends with the table's edge is whole where a line of the
# table follows
TABLE_EDGE = ("|", "+")
TABLE_DIVIDER = re.compile(r"[ \t]*`?\+(?:-+\+){2,}`?$")
# A traceback's frame line ends with the function's name (CPython's `  File "<path>", line N, in <name>`) and its source
# line follows it indented deeper: a frame line as long as the column followed by an indented line is whole, however
# many of a traceback's long frame lines share that length (a cut one's rest would go on inside the name, at the margin)
_RECORD_OPENING = re.compile(RECORD_START)
WHOLE_FRAME = re.compile(r'(?:^|\s)File "[^"]*", line \d+, in [\w<>.]+$')


def continues(cut: str, text: str) -> bool:
    """Whether `text` is the rest of a line the paste cut at the column: not when it starts the way
    that line did (the log's next line, written by the same code: `[2025-`, `gpu-h100-07:`, `INFO`), nor
    after a box's whole row (`BOX_END`), a table's (`TABLE_EDGE`) or a traceback's frame over its source line
    (`WHOLE_FRAME`), nor a record's start (RECORD_START: another writer's record after fixed-width lines of one
    length, realworld 1210's Lightning steps before torch's `[rank6]:[E …]`; a cut falls inside text), nor a
    stamp alone (STAMP_LINE: the next event's time in a log UI's copy, under every line
    of the longest length)."""
    if STAMP_LINE.pattern.match(text) is not None:
        return False
    if cut.endswith(BOX_END) or (cut.endswith(BOX_RIGHT) and text.startswith(BOX_LEFT)):
        return False
    if cut.startswith(TABLE_EDGE) and cut.endswith(TABLE_EDGE) and text.startswith(TABLE_EDGE):
        return False
    if text.lstrip("`")[:1].isspace() and WHOLE_FRAME.search(cut.rstrip("`")) is not None:
        return False  # (each line in inline code's backticks too: the width is sniffed before they come off)
    if _RECORD_OPENING.match(text.lstrip("`")) is not None:
        return False  # another record, of another writer than the cut line's (torch's `[rank6]:` after a logger's)
    return cut[:4] != text[:4]


def _join_wraps(numbered: Iterable[tuple[int, str]], width: int, screen: bool) -> Iterable[tuple[int, str]]:
    pending: tuple[int, str] | None = None
    for number, text in numbered:
        if pending is not None:
            if continues(pending[1], text):
                number, text = pending[0], pending[1] + text
            else:
                yield pending
        pending = (number, text) if cut_at(text, width, screen) else None
        if pending is None:
            yield number, text
    if pending is not None:
        yield pending


def first_word(text: str) -> str:
    """A line's first word with the white space before it: what a wrap at word boundaries moves whole."""
    found = _FIRST_WORD.match(text)
    return found.group(0) if found is not None else ""


_FIRST_WORD = re.compile(r"\s*\S*")
SHAPE_CHARS = 8
# CPython's traceback ends at the margin with the exception's name and its message (traceback.py
# TracebackException.format_exception_only): `RuntimeError: …`, `torch.OutOfMemoryError: …`, a bare `KeyboardInterrupt`
# the end of a traceback's frame line (`…", line N, in f`): the source line indented under it is no rest of it
FRAME_END = re.compile(r", line \d+, in \S+\s*$")
EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)(?::|$)")
_DIGIT = re.compile(r"\d")


def shape(text: str) -> str:
    """The first characters of a line, digits as `0`: what lines a writer started alike share (`[1,0]<stdout>` and
    `[1,2]<stdout>`, `(Worker pid=213)`), so a rest that starts so is the writer's next record, not a cut one's rest
    (a stamp's `2025-12-` is not a number's `551320, `)."""
    return _DIGIT.sub("0", text[:SHAPE_CHARS])


def word_cut(line: str, piece: str, text: str, width: int) -> bool:
    """Whether `text` may be the rest of `line` (its last physical piece `piece`) cut at a space by a wrap at `width`
    columns: neither is empty, the piece fits the column (or is one word), `text` starts otherwise than the line
    (`continues`, and not of its shape) and its first word, after the space the cut took, would not have fitted on
    the piece. A piece longer than the column is a word alone (a path longer than the column): no word fits after it."""
    if not piece.strip() or not text.strip() or (len(piece) > width and " " in piece.strip()):
        return False
    if line[:1].isspace() and EXCEPTION_LINE.match(text) is not None:
        return False  # a traceback's last line under its indented source line (a rest starts so by chance only)
    if text[:1].isspace() and FRAME_END.search(piece) is not None:
        return False  # a frame's source line under it (escaped or ending in a hard break: `in all\_gather  `)
    gap = 0 if piece[-1].isspace() or text[0].isspace() else 1
    return len(piece) + gap + len(first_word(text)) > width and shape(line) != shape(text) and continues(line, text)


def join_word_cut(piece: str, text: str) -> str:
    """A piece and its rest as one line: the space the cut took back between two words, none where the cut fell
    in a run of spaces (either side keeps white space: a traceback's indentation, its carets' margin)."""
    return piece + text if piece[-1:].isspace() or text[:1].isspace() else f"{piece} {text}"


def _word_cuts(lines: Sequence[str], width: int) -> list[int]:
    """The lines a wrap at `width` cut at a space, by index: those whose next line `word_cut` takes for their rest
    and does not start as the head's own records do (`_record_starts`)."""
    pairs = [i for i, (piece, text) in enumerate(pairwise(lines)) if word_cut(piece, piece, text, width)]
    rests = {i + 1 for i in pairs}
    counts = Counter(shape(line) for i, line in enumerate(lines) if i not in rests)
    return [i for i in pairs if counts[shape(lines[i + 1])] < WRAP_LINES_NEEDED]


def _record_starts(lines: Sequence[str], width: int) -> frozenset[str]:
    """The shapes that start at least two of the head's lines that are no cut line's rest: the log's records."""
    rests = {i + 1 for i in _word_cuts(lines, width)}
    counts = Counter(shape(line) for i, line in enumerate(lines) if i not in rests and line.strip())
    return frozenset(start for start, count in counts.items() if count >= WRAP_LINES_NEEDED)


def _word_wrap_width(lines: Sequence[str]) -> int | None:
    """The column a paste wrapped its lines at word boundaries at: the longest line that holds a space between two
    words (a word longer than the column stands alone, longer), where several lines are cut there (`_word_cuts`),
    each once, several of them holding a space and of several lengths besides the column's, most of them shorter
    than it (a paste cut at the column itself has most of its pieces as long as the column, `_wrap_width`)."""
    if len(lines) < WORD_CUTS_NEEDED + 1:
        return None
    width = max((len(line) for line in lines if " " in line.strip()), default=0)
    if width not in WRAP_COLUMNS:
        return None
    # each cut piece once (a log's repeated lines are cut alike, their numbers aside); those that hold a space show
    # where a word did not fit (one word alone, a rule of dashes, fits nothing after it); lengths besides the column's
    # own, of pieces at least half as long as it (a short line before a long word or a rule is a log's own line as
    # often: an error summary's title over its `====`); fewer than half of the pieces as long as the column (a paste
    # cut at the column itself has most of its pieces of that length, a record's last piece before the next record)
    pieces = {_DIGIT.sub("0", lines[i]): lines[i] for i in _word_cuts(lines, width)}.values()
    decided = [piece for piece in pieces if " " in piece.strip()]
    lengths = {len(piece) for piece in pieces if 2 * len(piece) >= width} - {width}
    at_column = sum(1 for piece in pieces if len(piece) == width)  # a paste cut at the column: half its pieces, or more
    if 2 * at_column >= len(pieces):
        return None
    return width if len(decided) >= WORD_CUTS_NEEDED and len(lengths) >= WORD_CUTS_NEEDED else None


def _join_word_wraps(
    numbered: Iterable[tuple[int, str]], width: int, record_starts: frozenset[str]
) -> Iterable[tuple[int, str]]:
    """Lines wrapped at word boundaries joined: a line and the rests after it, each judged against the piece before
    it (the joined line is longer than the column)."""
    held: tuple[int, str, str] | None = None  # the first piece's number, the line so far, its last piece
    for number, text in numbered:
        if held is not None:
            if word_cut(held[1], held[2], text, width) and shape(text) not in record_starts:
                held = (held[0], join_word_cut(held[1], text), text)
                continue
            yield held[0], held[1]
        held = (number, text, text)
    if held is not None:
        yield held[0], held[1]


# --- unwrapping ----------------------------------------------------------------------------------


@dataclass
class Unwrapper:
    """Removes one source's envelopes line by line. Stateful: a hard-wrapped line and CRI's partial
    lines are held until their last piece arrives (`end` gives back what the source ends with)."""

    envelopes: Envelopes
    _wrapped: tuple[int, str] | None = field(default=None, repr=False)
    _partial: dict[int, Unwrapped] = field(default_factory=dict, repr=False)  # by layer: CRI in CRI
    _cut: Unwrapped | None = field(default=None, repr=False)  # a cut line out of its envelopes (`wrap_inside`)
    _above: datetime | None = field(default=None, repr=False)  # the last stamp on a line of its own (STAMP_LINE)
    _piece: str = field(default="", repr=False)  # the held line's last physical piece (`word_wrap`)
    _column: int = field(default=0, repr=False)  # the longest line holding a space so far (`word_wrap`)

    def feed(self, number: int, text: str) -> list[Unwrapped]:
        width = self.envelopes.wrap_width
        if width is None:
            return self._unwrap(number, text)
        if self.envelopes.word_wrap:
            return self._join_words(number, text, width)
        if self.envelopes.wrap_inside:
            return [joined for line in self._unwrap(number, text) for joined in self._join_cut(line, width)]
        out: list[Unwrapped] = []
        if self._wrapped is not None:
            held_number, held = self._wrapped
            self._wrapped = None
            if continues(held, text):
                number, text = held_number, held + text
            else:
                out = self._unwrap(held_number, held)  # a line as long as the column, not a cut one
        if cut_at(text, width, self.envelopes.screen):
            self._wrapped = (number, text)  # the paste cut it here: the rest is on the next line
            return out
        return out + self._unwrap(number, text)

    def _join_words(self, number: int, text: str, width: int) -> list[Unwrapped]:
        """A paste wrapped at word boundaries: each line held until the next shows whether it is the held one's rest
        (`word_cut`, judged against the last piece; never a line that starts as the log's records do). The column is
        at least the longest line holding a space seen so far: the head's longest piece may fall short of it."""
        if " " in text.strip():
            self._column = max(self._column, len(text))
        width = max(width, self._column)
        out: list[Unwrapped] = []
        if self._wrapped is not None:
            held_number, held = self._wrapped
            self._wrapped = None
            if word_cut(held, self._piece, text, width) and shape(text) not in self.envelopes.record_starts:
                self._wrapped, self._piece = (held_number, join_word_cut(held, text)), text
                return out
            out = self._unwrap(held_number, held)
        if not text.strip():
            return out + self._unwrap(number, text)
        self._wrapped, self._piece = (number, text), text
        return out

    def _join_cut(self, line: Unwrapped, width: int) -> list[Unwrapped]:
        """A piece out of its envelopes joined to the cut line before it (the first piece's number, time, rank)."""
        out: list[Unwrapped] = []
        if self._cut is not None:
            held, self._cut = self._cut, None
            if continues(held.text, line.text):
                line = Unwrapped(held.number, held.text + line.text, held.stamp or line.stamp, held.rank or line.rank)
            else:
                out.append(held)  # a line as long as the column, not a cut one
        if cut_at(line.text, width, self.envelopes.screen):
            self._cut = line
            return out
        return [*out, line]

    @property
    def holding(self) -> bool:
        """A line's first pieces are held: the next physical line continues it."""
        return bool(self._partial) or self._wrapped is not None or self._cut is not None

    def end(self) -> list[Unwrapped]:
        out: list[Unwrapped] = []
        if self._wrapped is not None:
            number, text = self._wrapped
            self._wrapped = None
            out += self._unwrap(number, text)
        out += self._partial.values()
        self._partial.clear()
        if self._cut is not None:
            out.append(self._cut)
            self._cut = None
        return out

    def _unwrap(self, number: int, text: str) -> list[Unwrapped]:
        if self.envelopes.escaped:
            text = unescape(
                unspan(uncode(text, self.envelopes.inline_code), self.envelopes.code_spanned),
                self.envelopes.markdown_escaped,
                self.envelopes.html_escaped,
            )
        stamp: datetime | None = None
        rank: str | None = None
        for layer, envelope in enumerate(self.envelopes.layers):
            found = envelope.pattern.match(text)
            if envelope.alone:
                if found is not None:
                    # the stamp dates the lines under it, up to the next one; the line itself is no record
                    self._above = parse_stamp(found["ts"], envelope.time_formats)
                    return []
                stamp = stamp or self._above
                continue
            if found is None:
                continue  # a line the wrapper left bare (a paste's stray line); inner layers may still apply
            text = json_text(text[found.end() :]) if envelope.json_text else text[found.end() :]
            groups = found.groupdict()
            if stamp is None and groups.get("ts"):
                stamp = parse_stamp(groups["ts"], envelope.time_formats)
            if rank is None and groups.get("rank") and self.envelopes.gives_rank(layer):
                rank = rank_label(groups["rank"], envelope.rank_name)
            if groups.get("partial") is None:
                continue
            held = self._partial.pop(layer, None)
            if held is not None:  # the parts join before the envelopes inside them are read
                number, text, stamp, rank = held.number, held.text + text, held.stamp or stamp, held.rank or rank
            if groups["partial"] == "P":
                self._partial[layer] = Unwrapped(number, text, stamp, rank)  # CRI cut a long line: the rest follows
                return []
        # a span's backtick inside the envelopes comes off with them (one already off leaves its line's paired)
        return [Unwrapped(number, unspan(text, self.envelopes.code_spanned), stamp, rank)]


@dataclass(frozen=True, slots=True)
class Prefix:
    """What every layer of a source's envelopes wrapped one line in: the prefix's length, the rank label
    it gave (with where its digits are) and whether it gave a time."""

    length: int
    rank: str | None
    rank_spans: tuple[tuple[int, int], ...]
    stamped: bool
    # the fractions of its RFC 3339 stamps, where their length varies from line to line (`trimmed`)
    fractions: tuple[tuple[int, int], ...] = ()


def envelope_prefix(envelopes: Envelopes, text: str) -> Prefix | None:
    """The prefix `Unwrapper` removes from a line on its own (as its `_unwrap` reads it); None where a
    layer left the line bare or the line is a part CRI cut (`P`: it joins the next)."""
    position = 0
    rank: str | None = None
    spans: list[tuple[int, int]] = []
    fractions: list[tuple[int, int]] = []
    stamped = False
    for layer, envelope in enumerate(envelopes.layers):
        found = envelope.pattern.match(text[position:])
        if envelope.alone:
            if found is not None:
                return None  # a stamp's own line: no record (the lines under it take its time: the plain path)
            continue
        if found is None:
            return None
        groups = found.groupdict()
        if groups.get("partial") == "P":
            return None
        if envelopes.trimmed and groups.get("ts") and "rfc3339" in envelope.time_formats:
            fraction = _RFC3339_PARTS.match(groups["ts"])
            if fraction is not None and fraction["fraction"]:
                at = position + found.start("ts")
                fractions.append((at + fraction.start("fraction"), at + fraction.end("fraction")))
        if not stamped and groups.get("ts"):
            stamped = parse_stamp(groups["ts"], envelope.time_formats) is not None
        if groups.get("rank"):
            spans.append((position + found.start("rank"), position + found.end("rank")))
            if rank is None and envelopes.gives_rank(layer):
                rank = rank_label(groups["rank"], envelope.rank_name)
        position += found.end()
    return Prefix(position, rank, tuple(spans), stamped, tuple(fractions))


def envelope_time(envelopes: Envelopes, text: str) -> datetime | None:
    """The time the envelopes give a line (what `Unwrapper` gives it as its `stamp`)."""
    position = 0
    for envelope in envelopes.layers:
        found = envelope.pattern.match(text[position:])
        if found is None or envelope.alone:
            continue  # (a stamp on a line of its own dates the lines under it, not its own)
        position += found.end()
        stamp = found.groupdict().get("ts")
        if stamp and (parsed := parse_stamp(stamp, envelope.time_formats)) is not None:
            return parsed
    return None


def parse_stamp(text: str, formats: Sequence[str]) -> datetime | None:
    """An envelope's timestamp as a naive datetime in the zone it was written in; None when no format
    fits (a stamp the pattern admitted but the calendar does not)."""
    for name in formats:
        try:
            if name == "rfc3339":
                if "T" not in text:
                    continue
                return _rfc3339(text)
            if name == "epoch":
                if (epoch := from_epoch(text)) is None:
                    continue
                return epoch
            return in_calendar(datetime.strptime(text, name))
        except (ValueError, OverflowError, OSError):
            continue
    return None


_RFC3339_PARTS = re.compile(r"^(?P<base>[\d-]+T[\d:]+)(?:\.(?P<fraction>\d+))?(?P<zone>Z|[+-]\d\d:?\d\d)$")


def _rfc3339(text: str) -> datetime | None:
    if len(text) == 30 and text[19] == "." and text[29] == "Z" and text[20:29].isdigit():
        return in_calendar(
            datetime.fromisoformat(text[:26])
        )  # docker's and CRI's nanoseconds in UTC: the fast path's clock
    parts = _RFC3339_PARTS.match(text)
    if parts is None:
        return None
    fraction = (parts["fraction"] or "0")[:6].ljust(6, "0")  # nanoseconds: datetime keeps micro
    return in_calendar(datetime.fromisoformat(f"{parts['base']}.{fraction}"))  # strptime is ten times slower
