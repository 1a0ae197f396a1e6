"""Pattern packs: find, parse and validate the TOML packs; compile their regexes once; check examples."""

from __future__ import annotations

import re as stdlib_re
import string
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import regex

from logphase.errors import PackError
from logphase.phases import EventKind, Phase, Role

SCHEMA = 1
# A user regex that backtracks for longer than this on one line is stopped, not waited for.
MATCH_TIMEOUT_S = 0.5
WORD = stdlib_re.compile(r"[a-z0-9_]+")
# Rules anchored at the message start are indexed by this many leading characters.
LEAD_KEY = 2
# A literal's edge words are indexed by this many characters (the start of its last word, the end
# of its first): they may be glued to more word characters in the line.
EDGE_KEY = 3
CANDIDATE_CACHE = 4096
WORD_CACHE = 65536
RANK_TAG = stdlib_re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP)_?(\d+)")
# Named groups with a meaning to the pipeline; any other group is kept as a plain capture.
PREFIX_GROUPS = frozenset({"ts", "tags", "rank", "pid", "level", "host"})


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


@dataclass(frozen=True)
class PackRegex:
    """A compiled pack regex. Shipped packs are trusted and tested: the stdlib `re` runs them, several
    times faster. A user's pack runs on the `regex` module with a timeout, so a pathological regex
    cannot hang the tool (DESIGN.md §3)."""

    text: str
    compiled: Any  # re.Pattern[str] or regex.Pattern[str]
    timeout: float | None

    @property
    def pattern(self) -> str:
        return self.text

    @property
    def groupindex(self) -> Mapping[str, int]:
        groups: Mapping[str, int] = self.compiled.groupindex
        return groups

    def search(self, string: str) -> Any:
        if self.timeout is None:
            return self.compiled.search(string)
        return self.compiled.search(string, timeout=self.timeout)

    def match(self, string: str, pos: int = 0) -> Any:
        if self.timeout is None:
            return self.compiled.match(string, pos)
        return self.compiled.match(string, pos, timeout=self.timeout)


def rank_from_tags(tags: str) -> str | None:
    """`' DP0 TP3'`, `'TP13_EP13'` → `'DP0 TP3'`, `'TP13 EP13'`; no tag → None."""
    found = RANK_TAG.findall(tags)
    return " ".join(f"{kind}{number}" for kind, number in found) or None


def parse_time(text: str, formats: Sequence[str]) -> tuple[datetime, bool, bool] | None:
    """Parse a prefix timestamp with the first format that fits → (time, has year, has date).

    glog's `E1218 20:27:21.426871257` has its level letter removed by the prefix regex; fractions
    longer than 6 digits are cut to what strptime reads."""
    text = stdlib_re.sub(r"(\.\d{6})\d+", r"\1", text.strip())
    for fmt in formats:
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
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
    _last_time: list[Any] = field(default_factory=list, repr=False, compare=False)

    def _parse_time(self, text: str) -> tuple[datetime, bool, bool] | None:
        # lines come many to the second: the stamp is usually the one just parsed
        cache = self._last_time
        if cache and cache[0] == text:
            remembered: tuple[datetime, bool, bool] | None = cache[1]
            return remembered
        parsed = parse_time(text, self.time_formats)
        cache[:] = [text, parsed]
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
            rank=rank_from_tags(tags) if tags else (f"rank {int(rank)}" if rank else None),
            pid=int(pid) if pid and pid.isdigit() else None,
            level=groups.get("level"),
            prefixes=(self.id,),
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

    def prefilter(self, message: str, lowered: str) -> bool:
        """Cheap test before the regex: the literal the regex cannot match without."""
        if self.literal is None:
            return True
        return self.literal in (lowered if self.ignore_case else message)

    def match(self, message: str, prefixes: tuple[str, ...] = ()) -> dict[str, str] | None:
        if self.after_prefix and not any(prefix in prefixes for prefix in self.after_prefix):
            return None
        if not self.prefilter(message, message.lower() if self.ignore_case else message):
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
    frames no stall signature names with a phase."""

    id: str
    pack: str
    phase: Phase
    pattern: PackRegex  # matched against "function (file)"
    examples: tuple[str, ...]
    counter_examples: tuple[str, ...]


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
    ignores: tuple[IgnoreEntry, ...] = ()


@dataclass(frozen=True)
class PackSet:
    """All packs in use, with their rules in the order the matcher tries them."""

    packs: tuple[Pack, ...]
    prefixes: tuple[PrefixRule, ...] = field(init=False)
    rules: tuple[Rule, ...] = field(init=False)
    signatures: tuple[StallSignature, ...] = field(init=False)
    phase_frames: tuple[tuple[PackRegex, Phase], ...] = field(init=False)
    _rules_by_key: dict[tuple[str, str], tuple[int, ...]] = field(init=False, repr=False)
    _always: tuple[int, ...] = field(init=False, repr=False)
    _candidates: dict[frozenset[tuple[str, str]], tuple[Rule, ...]] = field(init=False, repr=False)
    _word_hits: dict[str, tuple[tuple[str, str], ...]] = field(init=False, repr=False)
    _prefixes_by_first: dict[str, tuple[PrefixRule, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        prefixes = sorted((p for pack in self.packs for p in pack.prefixes), key=lambda p: -p.priority)
        rules = sorted((r for pack in self.packs for r in pack.rules), key=lambda r: -r.priority)
        signatures = sorted((s for pack in self.packs for s in pack.signatures), key=lambda s: -s.priority)
        object.__setattr__(self, "prefixes", tuple(prefixes))
        object.__setattr__(self, "rules", tuple(rules))
        object.__setattr__(self, "signatures", tuple(signatures))
        # frames that tell a traceback's phase: anchors first, then signatures that name a phase
        phase_frames = [(a.pattern, a.phase) for pack in self.packs for a in pack.anchors]
        phase_frames += [(s.pattern, s.phase) for s in signatures if s.phase is not None]
        object.__setattr__(self, "phase_frames", tuple(phase_frames))
        self._index_literals()

    def _index_literals(self) -> None:
        """Index the rules so that a line picks the few worth trying (the per-rule prefilter, done
        once for all rules): by the first two characters of a literal anchored at the message's
        start (`^Load weight begin`); else by a whole word inside the literal (non-word characters
        on both sides: a whole word of any matching line); else by the literal's last word, which
        begins a word of a matching line, or its first, which ends one (three characters of it).
        A rule with none of these is always tried."""
        indexes: dict[tuple[str, str], list[int]] = {}
        always: list[int] = []
        for index, rule in enumerate(self.rules):
            key = _index_key(rule)
            if key is None:
                always.append(index)
            else:
                indexes.setdefault(key, []).append(index)
        object.__setattr__(self, "_rules_by_key", {key: tuple(rules) for key, rules in indexes.items()})
        object.__setattr__(self, "_always", tuple(always))
        object.__setattr__(self, "_candidates", {})
        object.__setattr__(self, "_word_hits", {})
        object.__setattr__(self, "_prefixes_by_first", {})

    def frame_phase(self, key: str) -> Phase | None:
        """The phase a `function (file)` frame proves, if any."""
        for pattern, phase in self.phase_frames:
            if pattern.search(key):
                return phase
        return None

    def candidate_rules(self, lowered: str) -> tuple[Rule, ...]:
        """The rules that may match a (lower-cased) message, in priority order; each still checks
        its literal exactly before its regex. Lines repeat their shape, so the answer is
        remembered per set of index keys the line hit."""
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
        key = frozenset(hits)
        found = self._candidates.get(key)
        if found is None:
            chosen = set(self._always)
            for hit in key:
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

    def split_prefix(self, text: str, depth: int = 4) -> tuple[PrefixFields, str]:
        """Strip stacked prefixes (a Ray actor tag, then `[ts TP0]`; `[rank0]:[E… file:line]`)."""
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
                timed = inner if inner.time else fields
                fields = PrefixFields(
                    time=timed.time,
                    time_has_year=timed.time_has_year,
                    time_has_date=timed.time_has_date,
                    rank=inner.rank or fields.rank,
                    pid=inner.pid or fields.pid,
                    level=inner.level or fields.level,
                    prefixes=(*fields.prefixes, prefix.id),
                )
                break
            else:
                break
        return fields, text

    def matching_rules(self, message: str, prefixes: tuple[str, ...] = ()) -> Iterator[tuple[Rule, dict[str, str]]]:
        for rule in self.rules:
            captures = rule.match(message, prefixes)
            if captures is not None:
                yield rule, captures


# --- loading -------------------------------------------------------------------------------------


def builtin_pack_paths() -> list[Path]:
    root = resources.files("logphase.patterns")
    return sorted(Path(str(entry)) for entry in root.iterdir() if entry.name.endswith(".toml"))


def user_pack_dir(config_home: str | None) -> Path | None:
    """`$XDG_CONFIG_HOME/logphase/patterns` (the CLI passes the environment value in)."""
    if not config_home:
        return None
    directory = Path(config_home) / "logphase" / "patterns"
    return directory if directory.is_dir() else None


def expand_pack_paths(paths: Iterable[Path]) -> list[Path]:
    expanded: list[Path] = []
    for path in paths:
        if path.is_dir():
            expanded.extend(sorted(path.glob("*.toml")))
        elif path.exists():
            expanded.append(path)
        else:
            raise PackError(f"pattern pack {path} does not exist", hint="give a .toml file or a directory of them")
    return expanded


def load_packs(
    extra: Iterable[Path] = (),
    *,
    builtin: bool = True,
    check_examples: bool = True,
    check_builtin: bool = False,
    line_rules: bool = True,
) -> PackSet:
    """Load the shipped packs and `extra` ones. The examples of every extra (user) pack are checked
    as it loads; the shipped packs' examples are checked by `logphase patterns test` and the test
    suite instead (`check_builtin`), since they cannot change after install and checking them costs
    every command a quarter of a second. `line_rules=False` skips prefixes and rules: stack
    snapshots need only the signatures, and compiling 300 regexes is most of the load."""
    builtin_paths = builtin_pack_paths() if builtin else []
    paths = builtin_paths + expand_pack_paths(extra)
    packs = [load_pack(path, trusted=path in builtin_paths, line_rules=line_rules) for path in paths]
    seen: dict[str, str] = {}
    for pack in packs:
        ids = [p.id for p in pack.prefixes] + [r.id for r in pack.rules]
        ids += [s.id for s in pack.signatures] + [a.id for a in pack.anchors]
        for item_id in ids:
            if item_id in seen:
                raise PackError(
                    f"{pack.path}: id {item_id!r} is defined twice (also in {seen[item_id]})",
                    hint="every prefix, rule and signature id must be unique across packs",
                )
            seen[item_id] = pack.path
    pack_set = PackSet(tuple(packs))
    if check_examples:
        shipped = set() if check_builtin else {str(path) for path in builtin_paths}
        failures = [f for f in check_pack_examples(pack_set) if f.split(": ", 1)[0] not in shipped]
        if failures:
            first = failures[0]
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise PackError(
                f"{first}{more}",
                hint="fix the rule or its example; `logphase patterns test` lists every failure",
            )
    return pack_set


def load_pack(path: Path, *, trusted: bool = False, line_rules: bool = True) -> Pack:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PackError(
            f"cannot read pattern pack {path}: {exc.strerror}", hint="check the path and its permissions"
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: not valid TOML: {exc}", hint="regexes belong in TOML literal strings: '...'") from exc
    return parse_pack(data, str(path), trusted=trusted, line_rules=line_rules)


def parse_pack(data: Mapping[str, Any], path: str, *, trusted: bool = False, line_rules: bool = True) -> Pack:
    header = _table(data.get("pack"), path, "[pack]")
    name = _text(header, "name", path, "[pack]")
    if header.get("schema") != SCHEMA:
        raise PackError(f"{path}: [pack] schema must be {SCHEMA}", hint="this logphase reads pack schema 1")
    budgets_raw = _table(header.get("budgets", {}), path, "[pack.budgets]")
    budgets: dict[Phase, float] = {}
    for phase_name, seconds in budgets_raw.items():
        phase = _phase(phase_name, path, "[pack.budgets]")
        if not isinstance(seconds, int | float) or seconds <= 0:
            raise PackError(f"{path}: [pack.budgets] {phase_name} must be a positive number of seconds")
        budgets[phase] = float(seconds)
    prefixes = tuple(_parse_prefix(item, name, path, trusted) for item in _list(data, "prefix", path) if line_rules)
    systems = tuple(str(system) for system in header.get("systems", []))
    # a rule of a single-system pack identifies that system unless it says otherwise
    pack_system = systems[0] if len(systems) == 1 else None
    rules = tuple(
        _parse_rule(item, name, path, pack_system, trusted) for item in _list(data, "rule", path) if line_rules
    )
    implies = header.get("implies")
    if implies is not None:
        if not isinstance(implies, str) or not implies:
            raise PackError(f"{path}: [pack] implies must be a system name", hint='e.g. implies = "torch"')
        rules = tuple(rule if rule.system else replace(rule, implied_system=implies) for rule in rules)
    signatures = tuple(_parse_signature(item, name, path, trusted) for item in _list(data, "signature", path))
    anchors = tuple(_parse_anchor(item, name, path, trusted) for item in _list(data, "anchor", path))
    return Pack(
        name=name,
        path=path,
        systems=systems,
        description=str(header.get("description", "")),
        budgets=budgets,
        prefixes=prefixes,
        rules=rules,
        signatures=signatures,
        anchors=anchors,
        ignores=parse_ignores(data, name, path, systems, trusted),
    )


def parse_ignores(
    data: Mapping[str, Any], pack: str, path: str, systems: tuple[str, ...], trusted: bool
) -> tuple[IgnoreEntry, ...]:
    """The pack's `[[ignore]]` tables: `id`, `regex`, `why` (all required), `levels` (optional)."""
    entries = []
    for item in _list(data, "ignore", path):
        where = f"[[ignore]] {item.get('id', '?')}"
        entries.append(
            IgnoreEntry(
                id=_text(item, "id", path, where),
                pack=pack,
                systems=systems,
                pattern=_compile(_text(item, "regex", path, where), str(item.get("flags", "")), path, where, trusted),
                levels=_strings(item, "levels", path, where),
                why=_text(item, "why", path, where),
            )
        )
    return tuple(entries)


def _parse_anchor(item: Mapping[str, Any], pack: str, path: str, trusted: bool) -> FrameAnchor:
    where = f"[[anchor]] {item.get('id', '?')}"
    return FrameAnchor(
        id=_text(item, "id", path, where),
        pack=pack,
        phase=_phase(item.get("phase"), path, where),
        pattern=_compile(_text(item, "regex", path, where), str(item.get("flags", "")), path, where, trusted),
        examples=_strings(item, "examples", path, where, required=True),
        counter_examples=_strings(item, "counter_examples", path, where),
    )


def _parse_prefix(item: Mapping[str, Any], pack: str, path: str, trusted: bool) -> PrefixRule:
    where = f"[[prefix]] {item.get('id', '?')}"
    pattern_text = _text(item, "regex", path, where)
    if not pattern_text.startswith("^"):
        raise PackError(
            f"{path}: {where}: a prefix regex must start with ^", hint="prefixes are matched at the line start"
        )
    return PrefixRule(
        id=_text(item, "id", path, where),
        pack=pack,
        first_chars=first_characters(pattern_text),
        literal=derive_literal(pattern_text, minimum=2),
        pattern=_compile(pattern_text, "", path, where, trusted),
        time_formats=tuple(item.get("time_formats", [])),
        priority=int(item.get("priority", 50)),
        examples=_strings(item, "examples", path, where, required=True),
        counter_examples=_strings(item, "counter_examples", path, where),
    )


def _parse_rule(item: Mapping[str, Any], pack: str, path: str, pack_system: str | None, trusted: bool) -> Rule:
    where = f"[[rule]] {item.get('id', '?')}"
    rule_id = _text(item, "id", path, where)
    flags = str(item.get("flags", ""))
    pattern_text = _text(item, "regex", path, where)
    ignore_case = "i" in flags
    literal = item.get("literal")
    if literal is None:
        literal = derive_literal(pattern_text)
    elif not isinstance(literal, str) or not literal:
        raise PackError(f"{path}: {where}: literal must be a non-empty string")
    if literal is not None and ignore_case:
        literal = literal.lower()
    kind = _enum(EventKind, item.get("kind"), path, where, "kind")
    phase_name = item.get("phase")
    return Rule(
        id=rule_id,
        pack=pack,
        phase=_phase(phase_name, path, where) if phase_name else None,
        kind=kind,
        role=_enum(Role, item.get("role", "progress"), path, where, "role"),
        priority=int(item.get("priority", 50)),
        literal=literal,
        pattern=_compile(pattern_text, flags, path, where, trusted),
        ignore_case=ignore_case,
        draft=bool(item.get("draft", False)),
        system=item.get("system", pack_system),
        versions=str(item.get("versions", "")),
        after_prefix=tuple(item.get("after_prefix", [])),
        in_block=bool(item.get("in_block", False)),
        opens_block=bool(item.get("opens_block", False)),
        summary=str(item.get("summary", "")),
        examples=_strings(item, "examples", path, where, required=True),
        counter_examples=_strings(item, "counter_examples", path, where),
    )


def _parse_signature(item: Mapping[str, Any], pack: str, path: str, trusted: bool) -> StallSignature:
    where = f"[[signature]] {item.get('id', '?')}"
    phase_name = item.get("phase")
    return StallSignature(
        id=_text(item, "id", path, where),
        pack=pack,
        state=_text(item, "state", path, where),
        pattern=_compile(_text(item, "regex", path, where), str(item.get("flags", "")), path, where, trusted),
        priority=int(item.get("priority", 50)),
        phase=_phase(phase_name, path, where) if phase_name else None,
        summary=str(item.get("summary", "")),
        examples=_strings(item, "examples", path, where, required=True),
        counter_examples=_strings(item, "counter_examples", path, where),
    )


def derive_literal(pattern_text: str, minimum: int = 3) -> str | None:
    """The longest run of plain characters every match must contain, for the prefilter.

    Walks the parsed regex's top-level sequence only: anything under a branch, an optional or a
    repeat may be absent, so it cannot be required. None when nothing is required (or the regex
    uses syntax only the `regex` module knows)."""
    try:
        parsed = stdlib_re._parser.parse(pattern_text)  # type: ignore[attr-defined]
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: no literal is derived, the rule still works
        return None
    best, run = "", []
    for op, argument in parsed:
        if op is constants.LITERAL:
            run.append(chr(argument))
            continue
        if op is constants.SUBPATTERN and argument[3] and all(o is constants.LITERAL for o, _ in argument[3]):
            # a plain capture group such as (?P<x>abc): its text is still required
            run.extend(chr(a) for _, a in argument[3])
            continue
        best = max(best, "".join(run), key=len)
        run = []
    best = max(best, "".join(run), key=len)
    return best if len(best) >= minimum else None


ASCII_CATEGORIES = {
    stdlib_re._constants.CATEGORY_WORD: string.ascii_letters + string.digits + "_",  # type: ignore[attr-defined]
    stdlib_re._constants.CATEGORY_DIGIT: string.digits,  # type: ignore[attr-defined]
}


def leading_literal(pattern_text: str) -> str | None:
    """The text every match starts with, for a regex anchored with `^`: `^Load weight begin\\.` →
    `Load weight begin.`; None when the regex is not anchored or starts with anything else."""
    try:
        parsed = list(stdlib_re._parser.parse(pattern_text))  # type: ignore[attr-defined]
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: not indexed, always tried
        return None
    if not parsed or parsed[0] != (constants.AT, constants.AT_BEGINNING):
        return None
    lead = []
    for op, argument in parsed[1:]:
        if op is not constants.LITERAL:
            break
        lead.append(chr(argument))
    return "".join(lead) or None


def _index_key(rule: Rule) -> tuple[str, str] | None:
    """Where `PackSet.candidate_rules` files a rule (see `_index_literals`)."""
    lead = leading_literal(rule.pattern.text)
    if lead is not None and len(lead) >= LEAD_KEY:
        return ("lead", lead[:LEAD_KEY].lower())
    if rule.literal is None:
        return None
    literal = rule.literal.lower()
    inner = _inner_words(literal)
    if inner:
        return ("word", max(inner, key=len))
    words = [(found.group(), found.start(), found.end()) for found in WORD.finditer(literal)]
    last = [w for w, start, _ in words if start > 0 and len(w) >= EDGE_KEY]
    if last:
        return ("starts", last[-1][:EDGE_KEY])
    first = [w for w, _, end in words if end < len(literal) and len(w) >= EDGE_KEY]
    if first:
        return ("ends", first[0][-EDGE_KEY:])
    return None


def _inner_words(literal: str) -> list[str]:
    """Words of a lower-cased literal that are whole words wherever the literal appears."""
    words = []
    for found in WORD.finditer(literal):
        start, end = found.span()
        if start > 0 and end < len(literal) and len(found.group()) >= 2:
            words.append(found.group())
    return words


def first_characters(pattern_text: str) -> frozenset[str] | None:
    """The characters a match of an anchored regex can start with, or None when that is not a
    small known set (an optional first item, a negated class, syntax only `regex` knows)."""
    try:
        parsed = stdlib_re._parser.parse(pattern_text)  # type: ignore[attr-defined]
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: no gate, the prefix is always tried
        return None

    def first(items: Any) -> set[str] | None:
        for op, argument in items:
            if op is constants.AT:
                continue  # ^
            if op is constants.LITERAL:
                return {chr(argument)}
            if op is constants.IN:
                chars: set[str] = set()
                for kind, value in argument:
                    if kind is constants.LITERAL:
                        chars.add(chr(value))
                    elif kind is constants.RANGE and value[1] - value[0] < 256:
                        chars.update(chr(c) for c in range(value[0], value[1] + 1))
                    elif kind is constants.CATEGORY and value in ASCII_CATEGORIES:
                        chars.update(ASCII_CATEGORIES[value])  # non-ASCII starts are never gated
                    else:
                        return None
                return chars
            if op is constants.SUBPATTERN:
                return first(argument[3])
            if op is constants.BRANCH:
                union: set[str] = set()
                for branch in argument[1]:
                    chars_of = first(branch)
                    if chars_of is None:
                        return None
                    union |= chars_of
                return union
            if op in (constants.MAX_REPEAT, constants.MIN_REPEAT) and argument[0] >= 1:
                return first(argument[2])
            return None
        return None

    items = [item for item in parsed if item[0] is not constants.AT]
    chars = first(items)
    if not chars:
        return None
    if len(items) > 1 and items[0][0] is constants.LITERAL:
        # `^\[rank\d+\]:` and `^\[\d{4}-…`: two characters tell them apart
        second = first(items[1:])
        if second:
            return frozenset(next(iter(chars)) + char for char in second)
    return frozenset(chars)


def check_pack_examples(pack_set: PackSet) -> list[str]:
    """Every example must match its rule after prefix stripping; no counter-example may."""
    failures: list[str] = []
    for pack in pack_set.packs:
        for prefix in pack.prefixes:
            failures += [
                f"{pack.path}: prefix {prefix.id}: example does not match: {e!r}"
                for e in prefix.examples
                if prefix.apply(e) is None
            ]
            failures += [
                f"{pack.path}: prefix {prefix.id}: counter-example matches: {e!r}"
                for e in prefix.counter_examples
                if prefix.apply(e) is not None
            ]
        for rule in pack.rules:
            for example in rule.examples:
                fields, message = pack_set.split_prefix(example)
                if rule.match(message, fields.prefixes) is None:
                    failures.append(f"{pack.path}: rule {rule.id}: example does not match: {example!r}")
            for counter in rule.counter_examples:
                fields, message = pack_set.split_prefix(counter)
                if rule.match(message, fields.prefixes) is not None:
                    failures.append(f"{pack.path}: rule {rule.id}: counter-example matches: {counter!r}")
        frame_patterns: list[StallSignature | FrameAnchor] = [*pack.signatures, *pack.anchors]
        for checked in frame_patterns:
            failures += [
                f"{pack.path}: {checked.id}: example does not match: {e!r}"
                for e in checked.examples
                if checked.pattern.search(e) is None
            ]
            failures += [
                f"{pack.path}: {checked.id}: counter-example matches: {e!r}"
                for e in checked.counter_examples
                if checked.pattern.search(e) is not None
            ]
    return failures


# --- small validators --------------------------------------------------------------------------


def _compile(pattern_text: str, flags: str, path: str, where: str, trusted: bool) -> PackRegex:
    unknown = set(flags) - {"i"}
    if unknown:
        raise PackError(
            f"{path}: {where}: unknown flags {''.join(sorted(unknown))!r}", hint="the only flag is 'i' (ignore case)"
        )
    if trusted:
        try:
            return PackRegex(
                pattern_text, stdlib_re.compile(pattern_text, stdlib_re.IGNORECASE if "i" in flags else 0), None
            )
        except stdlib_re.error:
            pass  # syntax only the regex module knows: compiled below, without a timeout (shipped, tested)
    try:
        compiled = regex.compile(pattern_text, regex.IGNORECASE if "i" in flags else 0)
    except regex.error as exc:
        raise PackError(
            f"{path}: {where}: bad regex: {exc}", hint="test it with `logphase patterns explain LINE`"
        ) from exc
    return PackRegex(pattern_text, compiled, None if trusted else MATCH_TIMEOUT_S)


def _table(value: Any, path: str, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PackError(f"{path}: {where} is missing or not a table", hint="see patterns/FORMAT.md")
    return value


def _list(data: Mapping[str, Any], key: str, path: str) -> list[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise PackError(f"{path}: [[{key}]] must be an array of tables", hint="see patterns/FORMAT.md")
    return value


def _text(item: Mapping[str, Any], key: str, path: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise PackError(f"{path}: {where}: {key!r} is missing or empty", hint="see patterns/FORMAT.md")
    return value


def _strings(item: Mapping[str, Any], key: str, path: str, where: str, *, required: bool = False) -> tuple[str, ...]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PackError(f"{path}: {where}: {key!r} must be a list of strings")
    if required and not value:
        raise PackError(
            f"{path}: {where}: needs at least one example", hint="every rule ships examples that must match"
        )
    return tuple(value)


def _phase(name: Any, path: str, where: str) -> Phase:
    try:
        return Phase(name)
    except ValueError:
        raise PackError(
            f"{path}: {where}: unknown phase {name!r}", hint="phases: " + ", ".join(p.value for p in Phase)
        ) from None


def _enum(enum: Any, value: Any, path: str, where: str, key: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise PackError(
            f"{path}: {where}: unknown {key} {value!r}", hint=f"{key}: " + ", ".join(e.value for e in enum)
        ) from None
