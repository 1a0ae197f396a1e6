"""The pack model: prefix rules, line rules, stall signatures and frame anchors as loaded, and the
PackSet that orders and indexes them for the matcher."""

from __future__ import annotations

import re as stdlib_re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from logphase.bounded import in_calendar, rank_label, read_int, read_rank
from logphase.errors import PackError
from logphase.packs.regex_facts import EDGE_KEY, LEAD_KEY, WORD, any_of_literals, index_key, start_characters
from logphase.packs.stamp_text import read_stamp
from logphase.phases import EventKind, Phase, Role, Verdict

# Ray's log monitor folds a line many actors printed alike into one, ending it with ` [repeated 7x across cluster]`
# (ray/_private/ray_logging/__init__.py, 2.40.0 :230): not the message's own text, so a rule that reads the
# message to its end (`…\.$`) still reads it.
RAY_DEDUP_SUFFIX = stdlib_re.compile(r" \[repeated \d+x across cluster\]$")

CANDIDATE_CACHE = 4096
PREFIX_DEPTH = 4  # prefixes stacked on one line, at most
# Splits remembered (PackSet.split_prefix): a 500-line head is split three times or more over; lines
# longer than SPLIT_TEXT are split afresh (the memory stays under a few MB).
SPLIT_CACHE = 1024
SPLIT_TEXT = 1024
WORD_CACHE = 65536
STAMP_CACHE = 256  # stamps remembered per prefix rule (PrefixRule._parse_time)
RANK_TAG = stdlib_re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)_?([0-9]+)")
LONG_FRACTION = stdlib_re.compile(r"(\.\d{6})\d+")  # digits past the microseconds strptime reads


@dataclass(frozen=True)
class PrefixFields:
    """What a line prefix told: when, which rank, which process."""

    time: datetime | None = None
    time_has_year: bool = True  # False: a year-less stamp (vLLM, glog); the matcher supplies it
    time_has_date: bool = True  # False: time of day only (SGLang 0.3.0)
    rank: str | None = None
    pid: int | None = None
    level: str | None = None
    prefixes: tuple[str, ...] = ()
    module: str | None = None  # the logger's source file a prefix named (`kv_cache_utils.py`), without its folder


@dataclass(frozen=True)
class PackRegex:
    """A pack regex, compiled on first use: a run tries only the few rules its lines pick (the rule
    index, the fast path), and compiling all ~400 is most of a small log's load. Shipped packs are
    trusted and tested (`timeout` None): the stdlib `re` runs them, several times faster. A user's
    pack runs on the `regex` module with a timeout, so a pathological regex cannot hang the tool
    (docs/design.md §3); its regexes are compiled as it loads, to refuse a bad one at once."""

    text: str
    ignore_case: bool
    timeout: float | None
    owner: str = ""  # `file: rule id`: named when the regex runs past its timeout
    groups: frozenset[str] | None = None  # its named groups, when read without compiling it

    @property
    def pattern(self) -> str:
        return self.text

    @cached_property
    def compiled(self) -> Any:  # re.Pattern[str] or regex.Pattern[str]
        if self.timeout is None:
            code = self.__dict__.get("code")  # kept by the pack cache (keep_code): no parse, no assembly
            if code is not None:
                from logphase.packs.sre_code import pattern_from

                pattern = pattern_from(self.text, code)
                if pattern is not None:
                    return pattern
            try:
                return stdlib_re.compile(self.text, stdlib_re.IGNORECASE if self.ignore_case else 0)
            except stdlib_re.error:
                pass  # syntax only the regex module knows: compiled below, without a timeout (shipped, tested)
        import regex  # only user packs need it (~5 ms of import)

        return regex.compile(self.text, regex.IGNORECASE if self.ignore_case else 0)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (the pack cache, worker processes) as its text, and its code where kept: compiled
        again where it is used."""
        return {name: value for name, value in self.__dict__.items() if name != "compiled"}

    def keep_code(self) -> None:
        """Keep a shipped regex's compiled form as data (logphase/packs/sre_code.py), pickled with it:
        the pack cache stores it, and a run that reads the cache back builds the pattern from it."""
        if self.timeout is None and "code" not in self.__dict__:
            from logphase.packs.sre_code import compile_code

            flags = stdlib_re.IGNORECASE if self.ignore_case else 0
            self.__dict__["code"] = compile_code(self.text, flags)  # as cached_property keeps `compiled`

    def _too_slow(self) -> PackError:
        """One line that took the regex past its timeout: the pack is broken, said at once (a
        per-line bound alone let 200 such lines cost a minute)."""
        return PackError(
            f"{self.owner or self.text}: the regex ran past {self.timeout:g} s on one line "
            "(catastrophic backtracking: nested or overlapping repeats such as (a|a)*)",
            hint="rewrite it without repeats that can match the same text two ways; "
            "`logphase patterns test FILE` checks a pack",
        )

    @property
    def group_names(self) -> frozenset[str]:
        """Its named groups: from its parse where the stdlib read it (no compile), else compiled."""
        if self.groups is not None:
            return self.groups
        return frozenset(self.groupindex)

    @property
    def groupindex(self) -> Mapping[str, int]:
        groups: Mapping[str, int] = self.compiled.groupindex
        return groups

    def search(self, string: str) -> Any:
        if self.timeout is None:
            return self.compiled.search(string)
        try:
            return self.compiled.search(string, timeout=self.timeout)
        except TimeoutError:
            raise self._too_slow() from None

    def match(self, string: str, pos: int = 0) -> Any:
        if self.timeout is None:
            return self.compiled.match(string, pos)
        try:
            return self.compiled.match(string, pos, timeout=self.timeout)
        except TimeoutError:
            raise self._too_slow() from None


def rank_from_tags(tags: str) -> str | None:
    """`' DP0 TP3'`, `'TP13_EP13'` → `'DP0 TP3'`, `'TP13 EP13'`; no tag → None."""
    found = RANK_TAG.findall(tags)
    return " ".join(f"{kind}{number}" for kind, number in found if read_rank(number) is not None) or None


def parse_time(text: str, formats: Sequence[str]) -> tuple[datetime, bool, bool] | None:
    """Parse a prefix timestamp with the first format that fits → (time, has year, has date).

    glog's `E1218 20:27:21.426871257` has its level letter removed by the prefix regex; fractions
    longer than 6 digits are cut to what strptime reads."""
    text = text.strip()
    if "." in text:
        text = LONG_FRACTION.sub(r"\1", text)
    for fmt in formats:
        parsed = in_calendar(read_stamp(text, fmt))
        if parsed is not None:
            return parsed, "%Y" in fmt or "%y" in fmt, "%d" in fmt or "%j" in fmt
    return None


@dataclass(frozen=True)
class PrefixRule:
    """Strips one layer of line prefix and reads the timestamp, rank tags and pid it carries."""

    id: str
    pack: str
    pattern: PackRegex
    time_formats: tuple[str, ...]
    priority: int
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]
    first_chars: frozenset[str] | None = None  # what a match can start with (1 or 2 characters), if known
    literal: str | None = None  # text every match contains (` NCCL `, `| `): checked before the regex
    _stamps: dict[str, tuple[datetime, bool, bool] | None] = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_stamps": {}}  # pickled without the memo of the stamps read

    def _parse_time(self, text: str) -> tuple[datetime, bool, bool] | None:
        # lines come many to the second, and ranks interleave theirs: a stamp read lately is
        # remembered (STAMP_CACHE of them; parsing one is most of a prefix's cost)
        cache = self._stamps
        if text in cache:
            return cache[text]
        parsed = parse_time(text, self.time_formats)
        if len(cache) >= STAMP_CACHE:
            cache.clear()
        cache[text] = parsed
        return parsed

    def may_start(self, start: str) -> bool:
        """Whether a text beginning with `start` can match: most lines' first one or two characters
        rule most prefixes out without a regex call. Non-ASCII starts are never ruled out."""
        gate = self.first_chars
        if gate is None or not start.isascii():
            return True
        width = len(next(iter(gate)))
        return start[:width] in gate if len(start) >= width else any(g.startswith(start) for g in gate)

    def apply(self, text: str) -> tuple[PrefixFields, str] | None:
        if not self.may_start(text[:2]):
            return None
        return self.apply_gated(text)

    def apply_gated(self, text: str) -> tuple[PrefixFields, str] | None:
        """`apply` for a caller that already checked `may_start`."""
        if self.literal is not None and self.literal not in text:
            return None
        found = self.pattern.match(text)
        if found is None:
            return None
        groups = found.groupdict()
        ts, tags, rank, pid = groups.get("ts"), groups.get("tags"), groups.get("rank"), groups.get("pid")
        parsed = self._parse_time(ts) if ts else None
        fields = PrefixFields(
            time=parsed[0] if parsed else None,
            time_has_year=parsed[1] if parsed else True,
            time_has_date=parsed[2] if parsed else True,
            rank=rank_from_tags(tags) if tags else rank_label(rank),
            pid=read_int(pid),
            level=groups.get("level"),
            prefixes=(self.id,),
            module=_module_name(groups.get("file")),
        )
        return fields, text[found.end() :]


@dataclass(frozen=True)
class Rule:
    """One line pattern: which phase it proves, what kind of event it is, how much it explains."""

    id: str
    pack: str
    phase: Phase | None
    kind: EventKind
    role: Role
    priority: int
    literal: str | None
    pattern: PackRegex
    ignore_case: bool
    draft: bool
    system: str | None
    versions: str
    after_prefix: tuple[str, ...]
    in_block: bool
    opens_block: bool
    summary: str
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]
    implied_system: str | None = None  # the system a log of only generic lines like this one is
    reached: Phase | None = None  # a phase the line proves was reached, without being in it
    closes_from: Phase | None = None  # an end closing the rank's open step from this phase up to `phase`
    header_only: bool = False  # says only that the traceback after it was raised: its exception line says what
    trailer_only: bool = False  # only ends a dump whose head says what failed: no root where a line says it
    first_failure: bool = False  # heads a failure table's first observed failure: its entry's lines say how
    ignored_block: bool = False  # the block it opens holds an exception the program went on from: no failure
    ambient: bool = False  # printed by whatever step uses the phase's machinery: unranked, in the step around it
    after_ready: Phase | None = None  # the phase of a line of it after the run's ready line (a request's: serving)
    engine_work: bool = False  # the engine's own serving work, printed offline too: serving, not a server's answer
    main_returned: bool = False  # an exit printed after the program's main returned: what fails after it is teardown

    @cached_property
    def past_ready(self) -> Rule:
        """The rule as it reads a line after the run's ready line: in its `after_ready` phase (itself without one)."""
        return self if self.after_ready is None else replace(self, phase=self.after_ready, after_ready=None)

    def _after(self, prefixes: tuple[str, ...]) -> bool:
        """Whether the line was split off one of the prefixes the rule follows (a loop: this runs for
        every candidate rule of every line read, where `any` over a generator cost twice as much)."""
        for prefix in self.after_prefix:  # noqa: SIM110 - a loop: `any` over a generator is the cost
            if prefix in prefixes:
                return True
        return False

    def prefilter(self, message: str, lowered: str) -> bool:
        """Cheap test before the regex: the literal the regex cannot match without."""
        if self.literal is None:
            return True
        return self.literal in (lowered if self.ignore_case else message)

    def match(self, message: str, prefixes: tuple[str, ...] = ()) -> dict[str, str] | None:
        if not self.prefilter(message, message.lower() if self.ignore_case else message):
            return None
        return self.match_prefiltered(message, prefixes)

    def match_prefiltered(self, message: str, prefixes: tuple[str, ...]) -> dict[str, str] | None:
        """`match` for a caller that checked the literal itself (the matcher's loop over a line's
        candidate rules, which lower-cases the line once for all of them)."""
        if self.after_prefix and not self._after(prefixes):
            return None
        found = self.pattern.search(message)
        if found is None:
            return None
        return {name: value for name, value in found.groupdict().items() if value is not None}


@dataclass(frozen=True)
class StallSignature:
    """A frame pattern of `patterns/stacks.toml` that names the state a waiting rank is in."""

    id: str
    pack: str
    state: str
    pattern: PackRegex  # matched against "function (file)"
    priority: int
    phase: Phase | None
    summary: str
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]


@dataclass(frozen=True)
class FrameAnchor:
    """A frame that places a traceback in a phase (`maybe_init_draft_worker` → draft_init), for
    frames no stall signature names with a phase; or, `reached`, proves a phase was reached without placing the
    stack in it (a process group's collective runs in every step after its set-up)."""

    id: str
    pack: str
    phase: Phase | None
    pattern: PackRegex  # matched against "function (file)"
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]
    reached: Phase | None = None


@dataclass(frozen=True)
class ModuleHint:
    """A fallback for a line of a known system no rule reads: the logger's source file its prefix names (and, for a
    file that logs in several steps, a word of the message) places it in a start-up phase (`[[module]]`)."""

    id: str
    pack: str
    system: str | None
    prefixes: tuple[str, ...]
    file: str
    phase: Phase
    words: tuple[str, ...]  # lower case: the message must hold one (none: any message of the file)
    source: str

    def places(self, module: str, prefixes: tuple[str, ...], lowered: str) -> bool:
        """Whether this entry places a message (in lower case) whose prefixes named `module`."""
        return (
            module == self.file
            and any(p in self.prefixes for p in prefixes)
            and (not self.words or any(word in lowered for word in self.words))
        )


def _module_name(path: str | None) -> str | None:
    """A prefix's source file without its folder (vLLM 0.10+ may print `compilation/backends.py`)."""
    if not path:
        return None
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ServerArgsFormat:
    """Where a server prints the arguments it started with, and which printed keys give the setup
    (`model_path`, `tp_size`, …) that baselines compare."""

    id: str
    pack: str
    system: str
    pattern: PackRegex  # searched in a head line; the arguments follow the match
    repeats: bool  # printed more than once (vLLM: CLI args, then the engine config): each adds keys
    keys: Mapping[str, tuple[str, ...]]  # fact → printed keys, first found wins; `config.key`: nested
    expert_parallel_flag: str | None  # `True` with no EP size printed: EP spans TP × DP
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]

    @property
    def nested(self) -> tuple[str, ...]:
        """The nested configs some of the keys read (`speculative_config`), in order of mention."""
        names = [key.split(".", 1)[0] for keys in self.keys.values() for key in keys if "." in key]
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class IgnoreEntry:
    """Messages a pack leaves unmatched on purpose (`[[ignore]]`), with the reason: the source
    inventory counts them as decided. The matcher never reads them."""

    id: str
    pack: str
    systems: tuple[str, ...]  # the pack's systems; () for a generic pack: every system
    pattern: PackRegex  # searched in the message, like a rule's
    levels: tuple[str, ...]  # only templates logged at these levels (inventory levels); () any
    why: str

    def ignores(self, system: str, level: str, message: str) -> bool:
        if self.systems and system not in self.systems:
            return False
        if self.levels and level not in self.levels:
            return False
        return self.pattern.search(message) is not None


@dataclass(frozen=True)
class NextSteps:
    """What to do next for some verdicts in some phases of a system (`[[next]]`): steps, or why none."""

    id: str
    pack: str
    verdicts: frozenset[Verdict]
    phases: frozenset[Phase]  # empty: any phase, or none
    system: str | None  # None: any system
    causes: PackRegex | None  # searched in the root cause's rule id
    steps: tuple[str, ...]
    why_none: str
    versions: str
    source: str

    def specificity(self, verdict: Verdict, phase: Phase | None, system: str | None, cause: str | None) -> int | None:
        """How closely it answers (higher: closer), None when it does not: a cause named outweighs a
        system, a system a phase."""
        if verdict not in self.verdicts:
            return None
        if self.phases and phase not in self.phases:
            return None
        if self.system is not None and self.system != system:
            return None
        if self.causes is not None and (cause is None or self.causes.search(cause) is None):
            return None
        return 4 * (self.causes is not None) + 2 * (self.system is not None) + bool(self.phases)

    def filled(self, *, log: str, rank: str | None, phase: Phase | None) -> tuple[str, ...]:
        """The steps with the report's own log, rank and phase where they name them (`{log}`, `{rank}`, `{phase}`)."""
        values = {"{log}": log, "{rank}": rank or "RANK", "{phase}": phase.value if phase else "PHASE"}
        out = []
        for step in self.steps:
            for placeholder, value in values.items():
                step = step.replace(placeholder, value)
            out.append(step)
        return tuple(out)


@dataclass(frozen=True)
class Pack:
    name: str
    path: str
    systems: tuple[str, ...]
    description: str
    budgets: Mapping[Phase, float]
    prefixes: tuple[PrefixRule, ...]
    rules: tuple[Rule, ...]
    signatures: tuple[StallSignature, ...]
    anchors: tuple[FrameAnchor, ...] = ()
    server_args: tuple[ServerArgsFormat, ...] = ()
    job: bool = False  # the pack's systems are jobs that end, not servers
    comment_lines: bool = False  # the pack's systems print `#` lines of their own (never a person's note)
    process_tags: tuple[str, ...] = ()  # `(Name pid=N) ` tags the system prints itself (not a Ray envelope)
    ignores: tuple[IgnoreEntry, ...] = ()  # `[[ignore]]`: read only by the source inventory
    next_steps: tuple[NextSteps, ...] = ()  # `[[next]]`: what to do after a verdict
    modules: tuple[ModuleHint, ...] = ()  # `[[module]]`: where a line no rule reads goes, by its logger's file


def _whole(fields: PrefixFields) -> bool:
    """Whether a layer's fields merged onto none are themselves: none of them empty but not None (the merge
    reads `rank or …`, so a rank of "" or a pid of 0 becomes None)."""
    return fields.rank != "" and fields.pid != 0 and fields.level != "" and fields.module != ""


def rule_starts(rule: Rule) -> frozenset[str] | None:
    """The lower-cased first characters a rule's match can begin with (`start_characters`), for a rule
    the stdlib runs; None: any."""
    if rule.pattern.timeout is not None:
        return None
    return start_characters(rule.pattern.text, rule.pattern.ignore_case)


def rule_keys(rule: Rule) -> tuple[tuple[str, str], ...]:
    """The index keys of the texts one of which every match of a rule holds (`any_of_literals`), where each
    text has one; () where not. Only a case-sensitive rule the stdlib runs: under IGNORECASE a text's
    letter matches characters whose lower case is another (`s` matches `ſ`), which the lower-cased line
    the index reads no longer shows as that text."""
    if rule.pattern.timeout is not None or rule.pattern.ignore_case:
        return ()
    texts = any_of_literals(rule.pattern.text)
    keys = [index_key("", text) for text in texts or ()]
    if not keys or any(key is None for key in keys):
        return ()
    return tuple(sorted({key for key in keys if key is not None}))


@dataclass(frozen=True)
class PackSet:
    """All packs in use, with their rules in the order the matcher tries them."""

    packs: tuple[Pack, ...]
    # the pack cache's key of the files and versions it was loaded from ("" when loaded without
    # it): what a cache of facts derived from the packs alone (the fast path's plan) is keyed by
    digest: str = field(default="", compare=False, repr=False)
    prefixes: tuple[PrefixRule, ...] = field(init=False)
    rules: tuple[Rule, ...] = field(init=False)
    signatures: tuple[StallSignature, ...] = field(init=False)
    phase_frames: tuple[tuple[PackRegex, Phase | None], ...] = field(init=False)
    floor_frames: tuple[tuple[PackRegex, Phase], ...] = field(init=False)  # anchors' `reached`
    module_hints: dict[str, tuple[ModuleHint, ...]] = field(init=False, repr=False)  # `[[module]]` by file name
    _rules_by_key: dict[tuple[str, str], tuple[int, ...]] = field(init=False, repr=False)
    _always: tuple[int, ...] = field(init=False, repr=False)
    _gated: tuple[int, ...] = field(init=False, repr=False)  # unindexed rules anchored at the message's start
    _gated_by_start: dict[str, tuple[int, ...]] = field(init=False, repr=False)  # those, by a first character
    _candidates: dict[tuple[frozenset[tuple[str, str]], str], tuple[Rule, ...]] = field(init=False, repr=False)
    _word_hits: dict[str, tuple[tuple[str, str], ...]] = field(init=False, repr=False)
    _prefixes_by_first: dict[str, tuple[PrefixRule, ...]] = field(init=False, repr=False)
    _splits: dict[str, tuple[PrefixFields, str]] = field(init=False, repr=False, compare=False)
    # the fast path's scan plans of this pack set, by trigger patterns (logs/fast/plan.py)
    plans: dict[tuple[str, ...], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prefixes = sorted((p for pack in self.packs for p in pack.prefixes), key=lambda p: -p.priority)
        rules = sorted((r for pack in self.packs for r in pack.rules), key=lambda r: -r.priority)
        signatures = sorted((s for pack in self.packs for s in pack.signatures), key=lambda s: -s.priority)
        object.__setattr__(self, "prefixes", tuple(prefixes))
        object.__setattr__(self, "rules", tuple(rules))
        object.__setattr__(self, "signatures", tuple(signatures))
        # frames that tell a traceback's phase: anchors first, then signatures that name a phase, by priority as
        # the stack classifier takes them. An idle signature that names none (an inductor compile worker waiting
        # for jobs, an event loop) stands in its place and proves nothing: a helper thread's wait is no step of
        # start-up, though a broader signature below it (any frame in torch/_inductor is compile) matches too. An
        # anchor with only `reached` is a floor (floor_frames), never a place.
        anchors = [a for pack in self.packs for a in pack.anchors]
        phase_frames: list[tuple[PackRegex, Phase | None]] = [
            (a.pattern, a.phase) for a in anchors if a.phase is not None
        ]
        phase_frames += [(s.pattern, s.phase) for s in signatures if s.phase is not None or s.state == "idle"]
        object.__setattr__(self, "phase_frames", tuple(phase_frames))
        object.__setattr__(self, "floor_frames", tuple((a.pattern, a.reached) for a in anchors if a.reached))
        by_file: dict[str, list[ModuleHint]] = {}
        for pack in self.packs:
            for hint in pack.modules:
                by_file.setdefault(hint.file, []).append(hint)
        object.__setattr__(self, "module_hints", {file: tuple(hints) for file, hints in by_file.items()})
        self._index_literals()

    def module_hint(self, module: str, prefixes: tuple[str, ...], message: str) -> ModuleHint | None:
        """The first `[[module]]` entry that places a message no rule read, by the logger's file its prefixes named."""
        hints = self.module_hints.get(module)
        if not hints:
            return None
        lowered = message.lower()
        return next((hint for hint in hints if hint.places(module, prefixes, lowered)), None)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (the pack cache) with its rule index, without the memos that lines fill in."""
        memos: dict[str, dict[Any, Any]] = {
            "_candidates": {},
            "_word_hits": {},
            "_prefixes_by_first": {},
            "_splits": {},
            "plans": {},
        }
        return {**self.__dict__, **memos}

    def _index_literals(self) -> None:
        """Index the rules so that a line picks the few worth trying (the per-rule prefilter, done
        once for all rules): by the first two characters of a literal anchored at the message's
        start (`^Load weight begin`); else by a whole word inside the literal (non-word characters
        on both sides: a whole word of any matching line); else by the literal's last word, which
        begins a word of a matching line, or its first, which ends one (three characters of it).
        A rule with none of these whose every match holds one of a few texts (`any_of_literals`:
        `^(?:build model|Building Model|…)`) is filed under the key of each, where each has one. Else
        a rule anchored at the message's start is tried on messages that begin with a character its
        match can begin with (`start_characters`: every branch's); any other rule is always tried."""
        indexes: dict[tuple[str, str], list[int]] = {}
        always: list[int] = []
        gated: list[int] = []
        by_start: dict[str, list[int]] = {}
        for index, rule in enumerate(self.rules):
            key = index_key(rule.pattern.text, rule.literal)
            if key is not None:
                indexes.setdefault(key, []).append(index)
                continue
            keys = rule_keys(rule)
            for found in keys:
                indexes.setdefault(found, []).append(index)
            starts = None if keys else rule_starts(rule)
            if starts is not None:
                gated.append(index)
                for char in starts:
                    by_start.setdefault(char, []).append(index)
            elif not keys:
                always.append(index)
        object.__setattr__(self, "_rules_by_key", {key: tuple(rules) for key, rules in indexes.items()})
        object.__setattr__(self, "_always", tuple(always))
        object.__setattr__(self, "_gated", tuple(gated))
        object.__setattr__(self, "_gated_by_start", {char: tuple(rules) for char, rules in by_start.items()})
        object.__setattr__(self, "_candidates", {})
        object.__setattr__(self, "_word_hits", {})
        object.__setattr__(self, "plans", {})
        object.__setattr__(self, "_prefixes_by_first", {})
        object.__setattr__(self, "_splits", {})

    @property
    def job_systems(self) -> frozenset[str]:
        """Systems that are jobs that end (torchrun), not servers (`job = true` packs)."""
        return frozenset(system for pack in self.packs if pack.job for system in pack.systems)

    @property
    def comment_systems(self) -> frozenset[str]:
        """Systems that print `#` lines of their own (`comment_lines = true` packs): nccl-tests."""
        return frozenset(system for pack in self.packs if pack.comment_lines for system in pack.systems)

    @property
    def process_tags(self) -> frozenset[str]:
        """Names of `(Name pid=N) ` tags the systems print themselves, which a Ray envelope is not."""
        return frozenset(name for pack in self.packs for name in pack.process_tags)

    @property
    def server_args(self) -> tuple[ServerArgsFormat, ...]:
        return tuple(found for pack in self.packs for found in pack.server_args)

    @cached_property
    def dump_patterns(self) -> tuple[PackRegex, ...]:
        """Where the systems print the arguments they started with (`[[server_args]]`): a line of one dumps them."""
        return tuple(found.pattern for found in self.server_args)

    def next_steps(
        self, verdict: Verdict, phase: Phase | None, system: str | None, cause: str | None = None
    ) -> NextSteps | None:
        """The `[[next]]` entry that answers most closely (the first loaded among equals); None when none does."""
        best: tuple[int, NextSteps] | None = None
        for pack in self.packs:
            for entry in pack.next_steps:
                score = entry.specificity(verdict, phase, system, cause)
                if score is not None and (best is None or score > best[0]):
                    best = (score, entry)
        return best[1] if best is not None else None

    def frame_phase(self, key: str) -> Phase | None:
        """The phase a `function (file)` frame proves, if any."""
        for pattern, phase in self.phase_frames:
            if pattern.search(key):
                return phase
        return None

    def frame_floor(self, key: str) -> Phase | None:
        """The phase a `function (file)` frame proves reached without placing the stack in it, if any."""
        for pattern, phase in self.floor_frames:
            if pattern.search(key):
                return phase
        return None

    def candidate_rules(self, lowered: str) -> tuple[Rule, ...]:
        """The rules that may match a (lower-cased) message, in priority order; each still checks
        its literal exactly before its regex. Lines repeat their shape, so the answer is
        remembered per set of index keys the line hit and its first character. A message that begins
        with a character that is not ASCII (or is empty) tries every start-gated rule: their sets of
        starts are read over ASCII (`start_characters`)."""
        index = self._rules_by_key
        lead = ("lead", lowered[:LEAD_KEY])
        hits = [lead] if lead in index else []
        words = self._word_hits
        for word in set(WORD.findall(lowered)):
            found_hits = words.get(word)
            if found_hits is None:
                keys = (("word", word), ("starts", word[:EDGE_KEY]), ("ends", word[-EDGE_KEY:]))
                found_hits = tuple(hit for hit in keys if hit in index)
                if len(words) < WORD_CACHE:
                    words[word] = found_hits
            hits.extend(found_hits)
        start = lowered[:1]
        if not start.isascii():
            start = ""
        key = (frozenset(hits), start)
        found = self._candidates.get(key)
        if found is None:
            chosen = set(self._always)
            chosen.update(self._gated_by_start.get(start, ()) if start else self._gated)
            for hit in key[0]:
                chosen.update(index[hit])
            found = tuple(self.rules[i] for i in sorted(chosen))
            if len(self._candidates) < CANDIDATE_CACHE:
                self._candidates[key] = found
        return found

    def budgets(self, system: str | None) -> dict[Phase, float]:
        """Default stall budgets (seconds per phase): generic packs first, the system's pack wins."""
        merged: dict[Phase, float] = {}
        for pack in sorted(self.packs, key=lambda p: system in p.systems if system else False):
            merged.update(pack.budgets)
        return merged

    def _prefixes_for(self, start: str) -> tuple[PrefixRule, ...]:
        """The prefix rules a text beginning with `start` (two characters) can match, by priority."""
        chosen = self._prefixes_by_first.get(start)
        if chosen is None:
            chosen = tuple(p for p in self.prefixes if p.may_start(start))
            if len(self._prefixes_by_first) < CANDIDATE_CACHE:
                self._prefixes_by_first[start] = chosen
        return chosen

    def split_prefix(self, text: str, depth: int = PREFIX_DEPTH) -> tuple[PrefixFields, str]:
        """Strip stacked prefixes (a Ray actor tag, then `[ts TP0]`; `[rank0]:[E… file:line]`). The
        head of a log is split by several passes (its dates, its clocks, unread templates, the
        matcher): the split of its recent lines is remembered (the same text, the same split)."""
        remember = depth == PREFIX_DEPTH and len(text) <= SPLIT_TEXT
        if remember:
            known = self._splits.get(text)
            if known is not None:
                return known
        split = self._split(text, depth)
        if remember:
            if len(self._splits) >= SPLIT_CACHE:
                self._splits.clear()
            self._splits[text] = split
        return split

    def _split(self, text: str, depth: int) -> tuple[PrefixFields, str]:
        fields = PrefixFields()
        used: set[str] = set()
        for _ in range(depth):
            for prefix in self._prefixes_for(text[:2]):
                if prefix.id in used:
                    continue
                applied = prefix.apply_gated(text)
                if applied is None:
                    continue
                inner, text = applied
                used.add(prefix.id)
                if not fields.prefixes and _whole(inner):
                    fields = inner  # the first layer: what the merge below would build from it, field by field
                    break
                timed = inner if inner.time else fields
                fields = PrefixFields(
                    time=timed.time,
                    time_has_year=timed.time_has_year,
                    time_has_date=timed.time_has_date,
                    rank=inner.rank or fields.rank,
                    pid=inner.pid or fields.pid,
                    level=inner.level or fields.level,
                    prefixes=(*fields.prefixes, prefix.id),
                    module=inner.module or fields.module,
                )
                break
            else:
                break
        if text.endswith(" across cluster]"):
            text = RAY_DEDUP_SUFFIX.sub("", text)
        return fields, text

    def matching_rules(self, message: str, prefixes: tuple[str, ...] = ()) -> Iterator[tuple[Rule, dict[str, str]]]:
        for rule in self.rules:
            captures = rule.match(message, prefixes)
            if captures is not None:
                yield rule, captures
