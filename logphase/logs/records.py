"""Step records: a line no rule reads that still reports a step, told by its structure (an INFO record, a bar)."""

from __future__ import annotations

import re

# fixtures/realworld/README.md, `root_cause_line`: an open log's cause is its last progress line, "the last line in
# which the server reports doing a step", counted over every line of the paste, not only those a rule reads. A line no
# rule knows still says a step where its structure does: a record of a logger's layout at INFO level whose message is
# words (not a dump, a table, advice or a failure), or a tqdm bar's tick. Bare text says nothing by its structure (a
# person's prose, a script's print): it is passed over, as the README passes over the reporter's notes.

# The level of an INFO record, as the loggers of these servers print it: logging's `INFO` (vLLM's `INFO 03-08 …`,
# Ray's `… INFO worker.py:1636 -- `, LMDeploy's `- INFO -`, loguru/FastChat's `| INFO |`, tracing-subscriber's `  INFO
# target: `), bracketed (`[INFO]`, lighteval's `[    INFO]`, TensorRT-LLM's `[TensorRT-LLM][INFO]` and `[TRT-LLM]
# [I]`). Not inside a word or a path (`INFO_LEVEL`, `/INFO/`).
_LEVEL = re.compile(r"(?<![\w/.-])(?:\[\s*(?:INFO|I)\s*\]|INFO)(?![\w/.-])")
# What may stand before the level in a record's prefix: stamps (digits and their punctuation), bracketed or
# parenthesised tags (`[Router (Rust)]`, `(RayWorkerWrapper pid=3, ip=10.0.0.1)`), a logger's name between dashes
# (`- lmdeploy -`) and a rank tag (`rank:  0 |`). A word of prose before it (`the INFO line`) is no prefix.
_HEAD = re.compile(
    r"(?:[\d\s\-:.,/TZ+|]|\[[^\[\]]{0,60}(?:\[[^\[\]]*\][^\[\]]*)?\]|\([^()]{0,80}\)|-\s*[\w.]+\s*-|\w+:)*"
)
# A logger's name before the level (KServe's `2025-05-14 17:41:26.328 1645354 kserve INFO [server.py:start():70] `):
# one name right before the level, after a clock (`12:59:52`): prose before a level word is words, not a stamp.
_NAMED_HEAD = re.compile(r"(?:[\d\s\-:.,/TZ+|]|\[[^\[\]]{0,60}\]|\([^()]{0,80}\))*[A-Za-z_][\w.\-]*\s+")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")
# glog's layout (c10, Triton, abseil, JAX): `I0507 12:59:52.544807 3426 logging.cc:46] message`, a host before it
_GLOG = re.compile(r"(?:^|\s)I\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.\-]+:\d+\]\s?")
# The level token must stand near the line's start: a prefix is short.
_HEAD_MAX = 100
# What follows the level before the message: a stamp (vLLM's `INFO 03-08 16:44:29 `, Ray Serve's `INFO 2025-06-13
# 15:17:03,098 `), the logger's file in brackets or closed by one (`[kv_cache_utils.py:634] `, `__init__.py:190] `,
# `[real_accelerator.py:222:get_accelerator] `, KServe's `[server.py:start():70] `), a logger's name or target with a
# module's punctuation (`shard-manager:`, `vllm.engine:`, `- turbomind.py:190 -`), and Ray's `serve 89291 -- ` /
# `proxy 172.31.7.228 -- `.
_FIELD = re.compile(
    r"[\s|:\-]*(?:\d[\d\-:.,/TZ+]*(?=\s)|\[?[\w.\-/]+\.\w+:\d+(?::\w+)?\]|\[[\w.\-/]+\.py:[^\]\s]{1,60}\]|"
    r"[\w\-]*[._:\-][\w.:\-/<>]*?(?::\d+)?(?::|\s+-(?=\s)|\s*\|)(?=\s))\s*"
)
_RAY_PID = re.compile(r"^[\w.:\-]+(?: [\w.:\-]+)? -- ")
_FIELDS_MAX = 4
_SEPARATORS = re.compile(r"^[\s|:\-\]]+")
# A message that still says words: a whole word before whatever the paste cut (`Loaded e`, `Worker st`), not a first
# word cut inside itself (`TRITONBA`): README, a cut line counts where its message's first words are left.
_WORDS = re.compile(r"[A-Za-z][\w'’-]*[,.:;!]?\s+\S")
# A tqdm tick: `desc: 42%|███▍ | 5/12 [00:03<00:04, 1.9it/s]`, or a bar with no description (`  0%|`).
_BAR = re.compile(r"^\s*(?:[^|%\n]{0,120}?:?\s*)?\d{1,3}%\|")
# What reports no step (README: dumps, tables, advice and warnings, plugin and transport notes, settings). A dump or a
# table: a message that opens one (ends with `:`), a table's or a list's row (`|`, box-drawing, a list's repr), a run of
# `key=value` settings or a value that is a repr (`Namespace(`, `ServerArgs(`, `: [`, a dict), a run of `;`-separated
# figures, a setting's value after its name (`Reduce bucket size 500000000`; not
# `Loaded engine size: 63 MiB`, a step and what it made), a command or code shown to the person (`ray.init()`,
# `import ray`, `--address=`), a request refused (an access line's 4xx/5xx: the health route's 503 while it starts).
_DUMP = re.compile(
    r"[:=]\s*$|^\s*(?:[{(|│┃╭╰├+=#*]|\[\s*['\"\d\]])|\w+\s*[=:]\s*\w*\(|\b\w+=\S.*\b\w+=\S|[:=]\s*[\[{(]|"
    r"(?:;[^;]+){2}|\w\(\)|^(?:import|from) \w|\s--?\w[\w-]*[= ]|"
    r"\b(?:size|count|limit|threshold|capacity|interval|timeout)\s+[\d,.]+\s*\w{0,3}$|"
    r"\sHTTP/[\d.]+\"? [45]\d\d\b"
)
# A note: advice (`please`, `consider`, `deprecated`, `can`/`may`: README's `CUDA graphs can take additional …`, Ray's
# `Next steps`, `To connect …, run`), a failure's or a negation's words (a step not done: `not installed`), a plugin or
# library note, a setting stated (`Using …`, `… is enabled`, `Setting … to …`, `Defaulting to …`, `… version …`,
# `cache_config_info`), a signal received.
_NOTE = re.compile(
    r"\b(?:warn\w*|deprecat\w*|please|consider|recommend\w*|tip|hint|note|should|error\w*|fail\w*|exception|unable|"
    r"cannot|can't|could not|invalid|not|can|may|might|next steps|^to|"
    r"plugin\w*|librar(?:y|ies)|version|using|enabled|disabled|detected|set to|setting|default\w*|"
    r"\w*config\w*|options?|(?:got|received|caught) signal)\b",
    re.IGNORECASE,
)


def info_message(text: str) -> str | None:
    """The message of `text` where it is a logger's INFO record (module comment), else None."""
    glog = _GLOG.search(text[:_HEAD_MAX])
    if glog is not None and _HEAD.fullmatch(text[: glog.start()]):
        return text[glog.end() :].strip().strip('"')
    for level in _LEVEL.finditer(text[:_HEAD_MAX]):
        head = text[: level.start()]
        if not _HEAD.fullmatch(head) and not (_CLOCK.search(head) and _NAMED_HEAD.fullmatch(head)):
            return None
        rest = text[level.end() :]
        for _ in range(_FIELDS_MAX):
            ray = _RAY_PID.match(rest.lstrip())
            if ray is not None:
                rest = rest.lstrip()[ray.end() :]
                break
            field = _FIELD.match(rest)
            if field is None or not field.group():
                break
            rest = rest[field.end() :]
        return _SEPARATORS.sub("", rest).strip()
    return None


def is_bar_tick(text: str) -> bool:
    """Whether `text` is a tqdm tick (a step of a bar, 0 % included: README, a bar at 0 % is a step begun)."""
    return _BAR.match(text) is not None


def reports_step(text: str) -> bool:
    """Whether `text`, a line no rule read, reports a step by its structure (module comment)."""
    if is_bar_tick(text):
        return True
    message = info_message(text)
    if message is None or _WORDS.search(message) is None:
        return False
    return _DUMP.search(message) is None and _NOTE.search(message) is None
