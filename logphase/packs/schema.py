"""The pack schema: every key of every pack table with its type, whether it is required, its default
and its meaning; the one check of a table against it; FORMAT.md's key reference is rendered from it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from logphase.errors import PackError
from logphase.phases import EventKind, Phase, Role

FORMAT_HINT = "see patterns/FORMAT.md"


@dataclass(frozen=True)
class ValueType:
    """What a key's value must be, in the words an error message and FORMAT.md use."""

    name: str
    accepts: Callable[[Any], bool]
    choices: tuple[str, ...] = ()  # an enum's values: a string outside them is refused by name


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # TOML `true` is not a priority


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _enum_type(name: str, enum: type[Enum]) -> ValueType:
    return ValueType(name, lambda value: isinstance(value, str), tuple(str(member.value) for member in enum))


STRING = ValueType("string", lambda value: isinstance(value, str))
INTEGER = ValueType("integer", _is_int)
BOOLEAN = ValueType("boolean", lambda value: isinstance(value, bool))
STRINGS = ValueType("list of strings", _is_strings)
TABLE = ValueType("table", lambda value: isinstance(value, Mapping))
PHASE = _enum_type("phase", Phase)
KIND = _enum_type("kind", EventKind)
ROLE = _enum_type("role", Role)
SECONDS = ValueType("positive number", lambda value: (_is_int(value) or isinstance(value, float)) and value > 0)


@dataclass(frozen=True)
class Key:
    """One key of a pack table. A required string must not be empty; an optional key's absence
    reads as `default`."""

    name: str
    type: ValueType
    required: bool
    doc: str
    default: Any = None


@dataclass(frozen=True)
class Table:
    """One TOML table of a pack (`[pack]`) or array of tables (`[[rule]]`)."""

    title: str
    keys: tuple[Key, ...]
    doc: str

    def key(self, name: str) -> Key:
        return next(key for key in self.keys if key.name == name)


def _examples(what: str) -> tuple[Key, Key]:
    return (
        Key(
            "examples",
            STRINGS,
            True,
            f"{what} that must match (at least one); checked as a user pack loads and by `patterns test`",
        ),
        Key("counter_examples", STRINGS, False, f"{what} that must not match", default=[]),
    )


ID = Key("id", STRING, True, "unique across packs")
FLAGS = Key("flags", STRING, False, '`"i"`: ignore case (the only flag)', default="")
FRAME_REGEX = Key("regex", STRING, True, "searched in one frame written `function (file)`")

SERVER_ARGS_FACTS = (
    ("model_path", "the model served"),
    ("tp_size", "tensor-parallel size"),
    ("pp_size", "pipeline-parallel size"),
    ("dp_size", "data-parallel size"),
    ("ep_size", "expert-parallel size"),
    ("speculative_algorithm", "speculative decoding algorithm (shown upper-case)"),
    ("draft_model_path", "speculative draft model"),
    ("node_rank", "node's rank in a multi-node server whose ranks are numbered across its nodes"),
)

PACK = Table(
    "[pack]",
    (
        Key("name", STRING, True, "unique across all packs loaded together"),
        Key("schema", INTEGER, True, "the pack format version: 1"),
        Key("systems", STRINGS, False, "systems a rule of this pack identifies; `[]` for generic packs", default=[]),
        Key("implies", STRING, False, "generic packs: the system a log with only this pack's lines is"),
        Key(
            "job",
            BOOLEAN,
            False,
            "true: the pack's systems are jobs that end (a torchrun script), not servers: their lines also "
            "appear in servers' logs, so they name the system only of a log without a server's lines, and "
            "a job whose every rank exits cleanly is `finished`",
            default=False,
        ),
        Key(
            "process_tags",
            STRINGS,
            False,
            "names the systems print their own processes under as a `(Name pid=N) ` line prefix (vLLM's "
            "`(APIServer pid=1) `): a tag whose name starts with one is the system's log format, read by its "
            "prefix rule, not a Ray actor's envelope",
            default=[],
        ),
        Key(
            "comment_lines",
            BOOLEAN,
            False,
            "true: the pack's systems print `#` lines of their own (nccl-tests' header and summary): in a log of "
            "theirs a `#` line is the program's, never a person's note (logs/annotations.py)",
            default=False,
        ),
        Key("description", STRING, False, "one line, shown by `patterns list`", default=""),
        Key("budgets", TABLE, False, "`[pack.budgets]`: stall budgets, below", default={}),
    ),
    "The pack itself (required, first).",
)
BUDGETS_DOC = (
    "Keys are phase names, values a positive number of seconds without progress before `stalled` when "
    "no baseline says better. Generic packs' budgets apply first; the log's system's pack wins."
)
PREFIX = Table(
    "[[prefix]]",
    (
        ID,
        Key("regex", STRING, True, "must start with `^`; named groups below; the message is what follows the match"),
        Key("time_formats", STRINGS, False, "`strptime` formats for the `ts` group, tried in order", default=[]),
        Key("priority", INTEGER, False, "higher is tried first", default=50),
        *_examples("whole lines"),
    ),
    "Strips one layer of line prefix; layers stack (a Ray actor tag, then `[ts TP0]`).",
)
RULE = Table(
    "[[rule]]",
    (
        ID,
        Key("kind", KIND, True, "what the line is (below)"),
        Key("regex", STRING, True, "searched in the message"),
        Key("phase", PHASE, False, "the phase the line proves; optional for failures"),
        Key(
            "reached",
            PHASE,
            False,
            "a phase the line proves the run had reached, without placing the line in it: a collective's "
            "timeout proves a process group was up (`dist_init`), wherever the job was when it fired",
        ),
        Key(
            "closes_from",
            PHASE,
            False,
            "an `end` that closes the step open on its rank, from this phase up to its own `phase`: a line that "
            "ends a sequence whose last steps a server may skip (CUDA graphs disabled) claims only what ran",
        ),
        Key(
            "after_ready",
            PHASE,
            False,
            "the phase a line of this rule is in once the run's ready line came before it: the warmup request's "
            "lines that every later request prints alike (SGLang's `Prefill batch`, `POST /generate`: the server "
            "sends its warmup before it prints ready) are real traffic after it, `serving`",
        ),
        Key(
            "ambient",
            BOOLEAN,
            False,
            "a `mark` or `progress` line that any process prints whenever it uses its phase's machinery (NCCL's "
            "setup lines: a communicator a capture or a collective sets up): a line of it without a rank is in the "
            "step around it once the run's newest phase line is of a later step, never its phase's progress",
            default=False,
        ),
        Key(
            "engine_work",
            BOOLEAN,
            False,
            "a `serving` line the engine prints for its own work whoever drives it (SGLang's scheduler batches: an "
            "offline `Engine.generate` in a script prints them too, with no HTTP server and no ready line): it places "
            "the run in `serving`, not a server answering; with no line of the server's own it is no `ready`",
            default=False,
        ),
        Key(
            "main_returned",
            BOOLEAN,
            False,
            "an `exit` line the program prints after its main returned, the last thing it does (ms-swift's `End time "
            "of running main`): the run finished; what fails after it (an atexit hook, a destructor, a signal at the "
            "interpreter's exit, the launcher's report of that signal) is its teardown, not the run's failure",
            default=False,
        ),
        Key("role", ROLE, False, "how much the line explains (below)", default="progress"),
        Key(
            "priority",
            INTEGER,
            False,
            "when several rules match one line the highest wins (ties: load order)",
            default=50,
        ),
        Key("literal", STRING, False, "text every match contains, a prefilter; derived from the regex when absent"),
        FLAGS,
        Key("draft", BOOLEAN, False, "the line is the speculative draft worker's", default=False),
        Key(
            "system",
            STRING,
            False,
            'the system the line identifies; default the pack\'s one system; `""`: none (a generic line in a '
            "system's pack)",
        ),
        Key("after_prefix", STRINGS, False, "only on lines whose prefix was one of these prefix ids", default=[]),
        Key("in_block", BOOLEAN, False, "only matches inside a traceback / faulthandler block", default=False),
        Key("opens_block", BOOLEAN, False, "the line opens a multi-line block", default=False),
        Key(
            "header_only",
            BOOLEAN,
            False,
            "the line only says that the traceback after it was raised (a `logger.exception` header): with the "
            "traceback's exception line cut away it is no root where another line states the failure; needs "
            "`opens_block`",
            default=False,
        ),
        Key(
            "trailer_only",
            BOOLEAN,
            False,
            "the line only ends a dump whose head states the failure (faulthandler's `Extension modules: …` after "
            "the stacks): no root where another line states a failure; the cause only where nothing else is",
            default=False,
        ),
        Key(
            "first_failure",
            BOOLEAN,
            False,
            "the line heads the entry of the first observed failure in a failure table that a traceback's exception "
            "prints as its message (torchrun's `Root Cause (first observed failure):`): that entry's failure lines, "
            "just below it, say how the run failed, over the exception line and the table's other entries",
            default=False,
        ),
        Key(
            "ignored_block",
            BOOLEAN,
            False,
            "the block it opens is an exception the program printed and went on from (CPython's `Exception ignored "
            "in:`): nothing in it is a failure; needs `opens_block`",
            default=False,
        ),
        Key("versions", STRING, False, "the system versions that print the line (documentation)", default=""),
        Key("summary", STRING, False, "shown by `patterns list/explain`", default=""),
        *_examples("whole lines, prefix included"),
    ),
    "One line pattern: the phase it proves, the kind of event, how much it explains.",
)
SIGNATURE = Table(
    "[[signature]]",
    (
        ID,
        Key("state", STRING, True, "the state a thread waiting in this frame is in (below)"),
        FRAME_REGEX,
        FLAGS,
        Key("priority", INTEGER, False, "the highest-priority match among a stack's frames wins", default=50),
        Key("phase", PHASE, False, "the startup phase a stack in this frame is in"),
        Key("summary", STRING, False, "shown by `patterns list`", default=""),
        *_examples("frames `function (file)`"),
    ),
    "A frame that names the state a waiting rank is in (`stacks.toml`).",
)
ANCHOR = Table(
    "[[anchor]]",
    (
        ID,
        Key("phase", PHASE, False, "the phase a traceback through this frame failed in (or `reached`)"),
        Key(
            "reached",
            PHASE,
            False,
            "a phase a frame proves the run had reached, without placing the stack in it (instead of `phase`): a "
            "method of a process group that exists only once that group was built runs in every later step",
        ),
        FRAME_REGEX,
        FLAGS,
        *_examples("frames `function (file)`"),
    ),
    "A frame that places a traceback in a phase, or proves one reached, for frames no signature names with a phase.",
)
SERVER_ARGS = Table(
    "[[server_args]]",
    (
        ID,
        Key("regex", STRING, True, "searched in a head line; the printed arguments are what follows the match"),
        Key("system", STRING, False, "the system that prints them; default the pack's one system"),
        Key(
            "repeats",
            BOOLEAN,
            False,
            "the system prints its arguments more than once (vLLM: CLI args, then the engine config): "
            "every such line adds the keys not seen yet",
            default=False,
        ),
        *(
            Key(
                fact,
                STRINGS,
                False,
                f"printed keys that give the {meaning}, first found wins; `config.key` reads a key of a "
                "nested config (whose keys then never count as top-level ones)",
                default=[],
            )
            for fact, meaning in SERVER_ARGS_FACTS
        ),
        Key(
            "expert_parallel_flag",
            STRING,
            False,
            "a key that, `True` with no expert-parallel size printed, means EP spans TP × DP",
        ),
        *_examples("whole lines"),
    ),
    "Where a server prints its arguments, and which printed keys give the setup a baseline compares.",
)
IGNORE = Table(
    "[[ignore]]",
    (
        ID,
        Key("regex", STRING, True, "searched in the message of the line synthesised from a source template"),
        Key("why", STRING, True, "the reason the pack leaves these messages unmatched"),
        Key(
            "levels",
            STRINGS,
            False,
            "only templates logged at these levels (`debug` … `critical`, `print`, `progress` for tqdm bars, "
            "`native` for torch's library strings, an exception class for raised messages); any when empty",
            default=[],
        ),
        FLAGS,
    ),
    "Messages of the source inventory the pack knowingly leaves unmatched (`patterns coverage`); never "
    "read by the matcher.",
)
# what a step may name, filled in from the report: the logs as given, the rank it is about, the phase
NEXT_PLACEHOLDERS = ("{log}", "{rank}", "{phase}")
NEXT = Table(
    "[[next]]",
    (
        ID,
        Key("verdicts", STRINGS, True, "the verdicts it answers (`stalled`, `crashed`, …)"),
        Key("phases", STRINGS, False, "the phases it answers; any phase (or none) when empty", default=[]),
        Key(
            "system",
            STRING,
            False,
            "the system it answers; default the pack's one system; `\"\"`: any system (a generic pack's default)",
        ),
        Key(
            "causes",
            STRING,
            False,
            "a regex searched in the root cause's rule id (`^cuda\\.oom\\.`): it answers only such a cause",
        ),
        Key(
            "steps",
            STRINGS,
            False,
            "what to do next, in order, each naming the server's own flag or variable; "
            + ", ".join(f"`{p}`" for p in NEXT_PLACEHOLDERS)
            + " are filled in from the report",
            default=[],
        ),
        Key("why_none", STRING, False, "instead of steps: why there is nothing to do", default=""),
        Key("versions", STRING, False, "the versions whose flags and variables the steps name", default=""),
        Key("source", STRING, True, "where the flags and variables are defined (the server's source file)"),
    ),
    "What an operator does next for a verdict in a phase of a system: the most specific entry answers "
    "(a cause, then a system, then a phase named beats none).",
)
# the phases a logger's module may place a line no rule read in: start-up steps only. A fallback never says the server
# is up (http_start and later are the main process's, said by its own lines) nor that anything ended
MODULE_PHASES = (
    "launch",
    "tokenizer",
    "dist_init",
    "weight_load",
    "kv_cache",
    "draft_init",
    "compile",
    "cuda_graph",
)
MODULE = Table(
    "[[module]]",
    (
        ID,
        Key("prefixes", STRINGS, True, "the pack's prefixes whose `file` group names the logger's source file"),
        Key("file", STRING, True, "the source file's name, without its folder (`weight_utils.py`, `socket.cpp`)"),
        Key(
            "phase",
            ValueType("start-up phase", lambda value: isinstance(value, str), MODULE_PHASES),
            True,
            "the start-up step the file logs in (never http_start or later: a fallback never says the server is up)",
        ),
        Key(
            "words",
            STRINGS,
            False,
            "for a file that logs in several steps: the message must hold one of these (caseless) for this entry; "
            "entries of one file are tried in order, the first that fits places the line. Each line of the file "
            "holding one is read by the matcher (never summarised as a run: `patterns test` names the cost), where "
            "a file's one entry without words has its runs summarised",
            default=[],
        ),
        Key("source", STRING, True, "the releases and the calls the file logs the step from (the released source)"),
    ),
    "A fallback for a line of a known system that no rule reads: the logger's source file in its prefix (and, for a "
    "file of several steps, words of the message) places it in a start-up phase, at low confidence; never a "
    "failure, an end or a ready server.",
)
ARRAYS = (PREFIX, RULE, SIGNATURE, ANCHOR, SERVER_ARGS, IGNORE, NEXT, MODULE)
TABLES = (PACK, *ARRAYS)
TOP_LEVEL = ("pack", *(table.title.strip("[]") for table in ARRAYS))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'priority'?)` for a close misspelling, else nothing."""
    import difflib  # only for a misspelt key

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def where(table: Table, item: Mapping[str, Any], index: int) -> str:
    """How an error names an item: `[[rule]] sglang.ready`, or `[[rule]] #3` before its id is known."""
    if table is PACK:
        return PACK.title
    item_id = item.get("id")
    return f"{table.title} {item_id}" if isinstance(item_id, str) and item_id else f"{table.title} #{index + 1}"


def check_top_level(data: Mapping[str, Any], path: str) -> None:
    for name in data:
        if name not in TOP_LEVEL:
            tables = ", ".join(f"[{n}]" if n == "pack" else f"[[{n}]]" for n in TOP_LEVEL)
            raise PackError(
                f"{path}: unknown table {name!r}{did_you_mean(name, TOP_LEVEL)}", hint=f"a pack has {tables}"
            )


def checked(table: Table, item: Any, path: str, index: int = 0) -> dict[str, Any]:
    """The item's keys checked against the table (unknown keys, missing required ones, wrong types,
    enum values), with defaults filled in for the absent optional ones."""
    if not isinstance(item, Mapping):
        raise PackError(f"{path}: {table.title} must be a table", hint=FORMAT_HINT)
    place = where(table, item, index)
    names = [key.name for key in table.keys]
    for name in item:
        if name not in names:
            raise PackError(
                f"{path}: {place}: unknown key {name!r}{did_you_mean(name, names)}",
                hint=f"the keys of {table.title}: {', '.join(names)}",
            )
    values: dict[str, Any] = {}
    for key in table.keys:
        if key.name not in item:
            if key.required:
                raise PackError(f"{path}: {place}: {key.name!r} is missing", hint=f"{key.name}: {key.doc}")
            values[key.name] = key.default
            continue
        value = item[key.name]
        if not key.type.accepts(value) or (key.required and value in ("", [])):
            expected = f"non-empty {key.type.name}" if key.required else key.type.name
            article = "an" if expected[0] in "aeiou" else "a"
            raise PackError(
                f"{path}: {place}: {key.name!r} must be {article} {expected}, not {value!r}",
                hint=f"{key.name}: {key.doc}",
            )
        if key.type.choices and value not in key.type.choices:
            raise PackError(
                f"{path}: {place}: unknown {key.type.name} {value!r}{did_you_mean(value, key.type.choices)}",
                hint=f"{key.type.name}: " + ", ".join(key.type.choices),
            )
        values[key.name] = value
    return values


def checked_budgets(value: Mapping[str, Any], path: str) -> dict[Phase, float]:
    phases = [phase.value for phase in Phase]
    budgets: dict[Phase, float] = {}
    for name, seconds in value.items():
        if name not in phases:
            raise PackError(
                f"{path}: [pack.budgets]: unknown phase {name!r}{did_you_mean(name, phases)}",
                hint="phases: " + ", ".join(phases),
            )
        if not SECONDS.accepts(seconds):
            raise PackError(
                f"{path}: [pack.budgets]: {name!r} must be a positive number of seconds, not {seconds!r}",
                hint=BUDGETS_DOC,
            )
        budgets[Phase(name)] = float(seconds)
    return budgets


def render_reference() -> str:
    """FORMAT.md's key reference, from the tables above (a test keeps FORMAT.md equal to it)."""
    lines: list[str] = []
    for table in TABLES:
        lines += [f"### `{table.title}`", "", table.doc, "", "| key | type | required | default | meaning |"]
        lines.append("|---|---|---|---|---|")
        for key in table.keys:
            default = "" if key.required or key.default is None else f"`{_toml(key.default)}`"
            kind = key.type.name + (": " + " \\| ".join(key.type.choices) if key.type.choices else "")
            lines.append(f"| `{key.name}` | {kind} | {'yes' if key.required else ''} | {default} | {key.doc} |")
        lines.append("")
        if table is PACK:
            lines += ["### `[pack.budgets]`", "", BUDGETS_DOC, ""]
    return "\n".join(lines)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, Mapping):
        return "{}"
    return str(value)
