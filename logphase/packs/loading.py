"""Loading packs: find the shipped, user and given pack files, check them against the schema,
refuse duplicate names and ids, and check every user pack's regexes and examples (shipped regexes
compile on first use); with a cache folder, a load of the same files is read back from it."""

from __future__ import annotations

import importlib
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from logphase.errors import PackError
from logphase.packs.cache import PackCache, PackFile
from logphase.packs.model import (
    FrameAnchor,
    IgnoreEntry,
    ModuleHint,
    NextSteps,
    Pack,
    PackRegex,
    PackSet,
    PrefixRule,
    Rule,
    ServerArgsFormat,
    StallSignature,
)
from logphase.packs.regex_facts import derive_literal, first_characters, group_names
from logphase.packs.regex_safety import MAX_REGEX_CHARS, MAX_REGEX_NESTING, PROBE_SECONDS, REWRITES, hazards, nesting
from logphase.packs.schema import (
    ANCHOR,
    IGNORE,
    MODULE,
    NEXT,
    PACK,
    PREFIX,
    RULE,
    SERVER_ARGS,
    SERVER_ARGS_FACTS,
    SIGNATURE,
    Table,
    check_top_level,
    checked,
    checked_budgets,
    did_you_mean,
    where,
)
from logphase.phases import EventKind, Phase, Role, Verdict

SCHEMA = 1
# A user regex that backtracks for longer than this on one line is stopped, not waited for.
MATCH_TIMEOUT_S = 0.5


def builtin_pack_paths() -> list[Path]:
    # the package's own folder, not importlib.resources (its readers import zipfile: ~3 ms a run)
    shipped = importlib.import_module("logphase.patterns")
    return sorted(Path(shipped.__path__[0]).glob("*.toml"))


def user_pack_dir(config_home: str | None) -> Path | None:
    """`$XDG_CONFIG_HOME/logphase/patterns` (the CLI passes the environment value in)."""
    if not config_home:
        return None
    directory = Path(config_home) / "logphase" / "patterns"
    try:
        return directory if directory.is_dir() else None
    except PermissionError:  # `sudo -u other` with HOME kept: the config folder is someone else's
        raise PackError(
            f"{directory}: permission denied (your pattern packs folder)",
            hint="make it readable (chmod -R u+rX), or point XDG_CONFIG_HOME elsewhere",
        ) from None


def expand_pack_paths(paths: Iterable[Path]) -> list[Path]:
    expanded: list[Path] = []
    for path in paths:
        found = [path]
        if path.is_dir():
            if not os.access(path, os.R_OK | os.X_OK):  # glob would find nothing, silently
                raise PackError(
                    f"{path}: permission denied (a folder of pattern packs)",
                    hint="make it readable (chmod -R u+rX), or leave it out",
                )
            found = sorted(path.glob("*.toml"))
        for file in found:
            if file.exists():
                expanded.append(file)
            elif file.is_symlink():  # a loop, or a target gone: resolving it later raises RuntimeError
                raise PackError(
                    f"pattern pack {file} is a symbolic link that leads nowhere (a loop, or a missing target)",
                    hint="point the link at a .toml file, or remove it",
                )
            else:
                raise PackError(f"pattern pack {file} does not exist", hint="give a .toml file or a directory of them")
    return expanded


def load_packs(
    extra: Iterable[Path] = (),
    *,
    builtin: bool = True,
    check_examples: bool = True,
    check_builtin: bool = False,
    line_rules: bool = True,
    cache_folder: Path | None = None,
) -> PackSet:
    """Load the shipped packs and `extra` ones. The examples of every extra (user) pack are checked
    as it loads; the shipped packs' examples are checked by `logphase patterns test` and the test
    suite instead (`check_builtin`), since they cannot change after install and checking them costs
    every command a quarter of a second. `line_rules=False` skips prefixes and rules: stack
    snapshots need only the signatures.

    With a `cache_folder` (the CLI's `$XDG_CACHE_HOME/logphase/packs`), a set of pack files loaded
    before with the same bytes and options is read back from there (`logphase.packs.cache`)."""
    builtin_paths = builtin_pack_paths() if builtin else []
    # a file named twice (`patterns test sglang` names a shipped pack) is one pack, loaded once
    paths: list[Path] = []
    seen: set[Path] = set()  # each path resolved once (a pair of resolves per pair of packs was ~3 ms a run)
    for path in [*builtin_paths, *expand_pack_paths(extra)]:
        resolved = path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            paths.append(path)
    if cache_folder is None:
        return _checked_packs(paths, builtin_paths, {}, check_examples, check_builtin, line_rules, digest="")
    cache = PackCache(cache_folder)
    files = [PackFile(path, path in builtin_paths, _read_bytes(path)) for path in paths]
    key = cache.key(files, f"examples={check_examples} builtin={check_builtin} line_rules={line_rules}")
    cached = cache.load(key)
    if cached is not None:
        return cached
    # a user pack is parsed from the bytes its key was made of: an edit meanwhile is another key
    read = {file.path: file.data for file in files if not file.trusted}
    pack_set = _checked_packs(paths, builtin_paths, read, check_examples, check_builtin, line_rules, digest=key)
    cache.store(key, pack_set)
    return pack_set


def _checked_packs(
    paths: list[Path],
    builtin_paths: list[Path],
    read: Mapping[Path, bytes],
    check_examples: bool,
    check_builtin: bool,
    line_rules: bool,
    digest: str,
) -> PackSet:
    """The packs of `paths` (user packs from `read` where given), their names, ids and examples checked."""
    packs = []
    for path in paths:
        if path in builtin_paths:
            packs.append(load_pack(path, trusted=True, line_rules=line_rules))
        else:
            data = _parse_toml(path, read[path]) if path in read else _read(path)
            packs.append(parse_pack(data, str(path), line_rules=line_rules))
    named: dict[str, str] = {}
    for pack in packs:
        if pack.name in named:
            raise PackError(
                f"{pack.path}: pack name {pack.name!r} is taken by {named[pack.name]}",
                hint="every pack needs its own [pack] name; rename one, or load only one of the two",
            )
        named[pack.name] = pack.path
    seen: dict[str, str] = {}
    for pack in packs:
        ids = [p.id for p in pack.prefixes] + [r.id for r in pack.rules]
        ids += [s.id for s in pack.signatures] + [a.id for a in pack.anchors] + [f.id for f in pack.server_args]
        ids += [i.id for i in pack.ignores] + [n.id for n in pack.next_steps] + [m.id for m in pack.modules]
        for item_id in ids:
            if item_id in seen:
                raise PackError(
                    f"{pack.path}: id {item_id!r} is defined twice (also in {seen[item_id]})",
                    hint="every prefix, rule, signature, anchor, server_args, ignore, next and module id must be "
                    "unique across packs",
                )
            seen[item_id] = pack.path
    pack_set = PackSet(tuple(packs), digest=digest)
    if check_examples:
        shipped = set() if check_builtin else {str(path) for path in builtin_paths}
        failures = check_pack_examples(pack_set, only={pack.path for pack in packs} - shipped)
        if failures:
            first = failures[0]
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise PackError(
                f"{first}{more}",
                hint="fix the rule or its example; `logphase patterns test` lists every failure",
            )
    return pack_set


@cache
def shipped_packs() -> PackSet:
    """The shipped packs without their line rules (stall signatures, server-argument formats, which
    systems are jobs), read once: the default of the stages that take these facts when a caller
    passes no PackSet of its own."""
    return load_packs(check_examples=False, line_rules=False)


def load_pack(path: Path, *, trusted: bool = False, line_rules: bool = True) -> Pack:
    """One pack file; a shipped (`trusted`) one is read and parsed once per process."""
    data = _read_shipped(path) if trusted else _read(path)
    return parse_pack(data, str(path), trusted=trusted, line_rules=line_rules)


def _read(path: Path) -> dict[str, Any]:
    return _parse_toml(path, _read_bytes(path))


# A pack is a few hundred KB of TOML at most; `--patterns /dev/zero` is not read whole.
MAX_PACK_BYTES = 8 << 20


def _read_bytes(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_PACK_BYTES + 1)
        if len(data) > MAX_PACK_BYTES:
            raise PackError(
                f"pattern pack {path}: over {MAX_PACK_BYTES >> 20} MB, too big for a pack",
                hint="give the pack's .toml file, or a directory of them",
            )
        return data
    except OSError as exc:
        raise PackError(
            f"cannot read pattern pack {path}: {exc.strerror}", hint="check the path and its permissions"
        ) from exc


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    import tomllib  # only where a pack is parsed: a run that finds its packs in the cache does not (~3 ms)

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: not valid TOML: {exc}", hint="regexes belong in TOML literal strings: '...'") from exc
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise PackError(
            f"{path}: its arrays or tables nest too deeply to read", hint="a pack nests a few levels at most"
        ) from None


@cache
def _read_shipped(path: Path) -> dict[str, Any]:
    # parsing the shipped TOML is most of a load: the CLI's packs and `shipped_packs` share it
    return _read(path)


def parse_pack(data: Mapping[str, Any], path: str, *, trusted: bool = False, line_rules: bool = True) -> Pack:
    """A pack from its parsed TOML, every table checked against the schema (`logphase.packs.schema`)."""
    check_top_level(data, path)
    if "pack" not in data:
        raise PackError(f"{path}: [pack] is missing", hint="a pack starts with [pack] name = …, schema = 1")
    header = checked(PACK, data["pack"], path)
    if header["schema"] != SCHEMA:
        raise PackError(f"{path}: [pack]: schema must be {SCHEMA}", hint=f"this logphase reads pack schema {SCHEMA}")
    name: str = header["name"]
    systems = tuple(header["systems"])
    if header["job"] and not systems:
        raise PackError(f"{path}: [pack]: job = true needs the systems that are jobs", hint='e.g. systems = ["torch"]')
    # a rule of a single-system pack identifies that system unless it says otherwise
    pack_system = systems[0] if len(systems) == 1 else None
    prefixes = tuple(_parse_prefix(item, name, path, trusted) for item in _items(data, PREFIX, path) if line_rules)
    rules = tuple(
        _parse_rule(item, name, path, pack_system, trusted) for item in _items(data, RULE, path) if line_rules
    )
    implies = header["implies"]
    if implies is not None:
        if not implies:
            raise PackError(f"{path}: [pack]: implies must be a system name", hint='e.g. implies = "torch"')
        rules = tuple(rule if rule.system else replace(rule, implied_system=implies) for rule in rules)
    return Pack(
        name=name,
        path=path,
        systems=systems,
        description=header["description"],
        budgets=checked_budgets(header["budgets"], path),
        prefixes=prefixes,
        rules=rules,
        signatures=tuple(_parse_signature(item, name, path, trusted) for item in _items(data, SIGNATURE, path)),
        anchors=tuple(_parse_anchor(item, name, path, trusted) for item in _items(data, ANCHOR, path)),
        server_args=tuple(
            _parse_server_args(item, name, path, pack_system, trusted) for item in _items(data, SERVER_ARGS, path)
        ),
        job=header["job"],
        comment_lines=header["comment_lines"],
        process_tags=_process_tags(header["process_tags"], path),
        ignores=tuple(_parse_ignore(item, name, path, systems, trusted) for item in _items(data, IGNORE, path)),
        next_steps=tuple(_parse_next(item, name, path, pack_system, trusted) for item in _items(data, NEXT, path)),
        modules=tuple(
            _parse_module(item, name, path, pack_system, prefixes) for item in _items(data, MODULE, path) if line_rules
        ),
    )


def _process_tags(names: list[str], path: str) -> tuple[str, ...]:
    for name in names:
        if not name.isidentifier():
            raise PackError(
                f"{path}: [pack]: process_tags: {name!r} is not a process name",
                hint='a name as it opens the tag, letters, digits and `_`: `(APIServer pid=1) ` → "APIServer"',
            )
    return tuple(names)


def _parse_next(
    entry: tuple[str, dict[str, Any]], pack: str, path: str, pack_system: str | None, trusted: bool
) -> NextSteps:
    place, item = entry
    verdicts = _names(item["verdicts"], Verdict, "verdict", path, place)
    phases = _names(item["phases"], Phase, "phase", path, place)
    steps, why_none = tuple(item["steps"]), item["why_none"]
    if bool(steps) == bool(why_none) or any(not step.strip() for step in steps):
        raise PackError(
            f"{path}: {place}: give 'steps' (each a non-empty string) or 'why_none', one of the two",
            hint="steps: what to do next, in order; why_none: why there is nothing to do",
        )
    system = item["system"] if item["system"] is not None else pack_system
    causes = item["causes"]
    return NextSteps(
        id=item["id"],
        pack=pack,
        verdicts=frozenset(Verdict(v) for v in verdicts),
        phases=frozenset(Phase(p) for p in phases),
        system=system or None,
        causes=_compile(causes, "", path, place, trusted) if causes else None,
        steps=steps,
        why_none=why_none,
        versions=item["versions"],
        source=item["source"],
    )


def _names(values: list[str], enum: type[Verdict] | type[Phase], what: str, path: str, place: str) -> list[str]:
    """Enum values given by name (`stalled`, `cuda_graph`), each checked."""
    known = [str(member.value) for member in enum]
    for value in values:
        if value not in known:
            raise PackError(
                f"{path}: {place}: unknown {what} {value!r}{did_you_mean(value, known)}",
                hint=f"{what}s: " + ", ".join(known),
            )
    return values


def _parse_ignore(
    entry: tuple[str, dict[str, Any]], pack: str, path: str, systems: tuple[str, ...], trusted: bool
) -> IgnoreEntry:
    place, item = entry
    return IgnoreEntry(
        id=item["id"],
        pack=pack,
        systems=systems,
        pattern=_compile(item["regex"], item["flags"], path, place, trusted),
        levels=tuple(item["levels"]),
        why=item["why"],
    )


def _items(data: Mapping[str, Any], table: Table, path: str) -> list[tuple[str, dict[str, Any]]]:
    """Each item of an array of tables, checked, with the name errors give it."""
    value = data.get(table.title.strip("[]"), [])
    if not isinstance(value, list):
        raise PackError(f"{path}: {table.title} must be an array of tables", hint="write each item as " + table.title)
    return [(where(table, item, index), checked(table, item, path, index)) for index, item in enumerate(value)]


# the source files a logger prefix may name: Python's, and the C/C++ files c10's and glog's prefixes name
# (`[I ProcessGroupNCCL.cpp:842]`, Ray's native `gcs_server.cc:58:`)
SOURCE_SUFFIXES = (".py", ".cpp", ".cc", ".h", ".hpp")


def _parse_module(
    entry: tuple[str, dict[str, Any]], pack: str, path: str, pack_system: str | None, prefixes: tuple[PrefixRule, ...]
) -> ModuleHint:
    place, item = entry
    own = {prefix.id: prefix for prefix in prefixes}
    for prefix_id in item["prefixes"]:
        prefix = own.get(prefix_id)
        if prefix is None:
            raise PackError(
                f"{path}: {place}: prefixes: {prefix_id!r} is no [[prefix]] of this pack",
                hint="name a prefix of the same pack: " + (", ".join(sorted(own)) or "this pack has none"),
            )
        if "file" not in prefix.pattern.group_names:
            raise PackError(
                f"{path}: {place}: prefixes: {prefix_id!r} has no `file` group",
                hint="a module entry reads the logger's source file a prefix captures as (?P<file>…)",
            )
    file: str = item["file"]
    if "/" in file or not file.endswith(SOURCE_SUFFIXES):
        raise PackError(
            f"{path}: {place}: file {file!r} is not a source file's name",
            hint="the name alone: `weight_utils.py`, `ProcessGroupNCCL.cpp`",
        )
    return ModuleHint(
        id=item["id"],
        pack=pack,
        system=pack_system,
        prefixes=tuple(item["prefixes"]),
        file=file,
        phase=Phase(item["phase"]),
        words=tuple(word.lower() for word in item["words"]),
        source=item["source"],
    )


def _parse_anchor(entry: tuple[str, dict[str, Any]], pack: str, path: str, trusted: bool) -> FrameAnchor:
    place, item = entry
    if not item["phase"] and not item["reached"]:
        raise PackError(f"{path}: {place}: 'phase' is missing", hint="name the phase the frame places a stack in")
    if item["phase"] and item["reached"]:
        raise PackError(
            f"{path}: {place}: 'phase' and 'reached' both given",
            hint="an anchor places the stack in a phase (`phase`) or proves one reached (`reached`), not both",
        )
    return FrameAnchor(
        id=item["id"],
        pack=pack,
        phase=Phase(item["phase"]) if item["phase"] else None,
        reached=Phase(item["reached"]) if item["reached"] else None,
        pattern=_compile(item["regex"], item["flags"], path, place, trusted),
        examples=tuple(item["examples"]),
        counter_examples=tuple(item["counter_examples"]),
    )


def _parse_prefix(entry: tuple[str, dict[str, Any]], pack: str, path: str, trusted: bool) -> PrefixRule:
    place, item = entry
    pattern_text: str = item["regex"]
    if not pattern_text.startswith("^"):
        raise PackError(
            f"{path}: {place}: a prefix regex must start with ^", hint="prefixes are matched at the line start"
        )
    return PrefixRule(
        id=item["id"],
        pack=pack,
        first_chars=first_characters(pattern_text),
        literal=derive_literal(pattern_text, minimum=2),
        pattern=_compile(pattern_text, "", path, place, trusted),
        time_formats=tuple(item["time_formats"]),
        priority=item["priority"],
        examples=tuple(item["examples"]),
        counter_examples=tuple(item["counter_examples"]),
    )


def _parse_rule(
    entry: tuple[str, dict[str, Any]], pack: str, path: str, pack_system: str | None, trusted: bool
) -> Rule:
    place, item = entry
    flags: str = item["flags"]
    pattern_text: str = item["regex"]
    ignore_case = "i" in flags
    literal: str | None = item["literal"]
    if literal is None:
        literal = derive_literal(pattern_text)
    elif not literal:
        raise PackError(f"{path}: {place}: literal must be a non-empty string", hint=RULE.key("literal").doc)
    if literal is not None and ignore_case:
        literal = literal.lower()
    system: str | None = item["system"]
    closes_from = item["closes_from"]
    if closes_from is not None and (
        item["kind"] != "end" or not item["phase"] or Phase(closes_from).order >= Phase(item["phase"]).order
    ):
        raise PackError(
            f'{path}: {place}: closes_from needs kind = "end" and a later `phase`',
            hint=RULE.key("closes_from").doc,
        )
    if item["header_only"] and not item["opens_block"]:
        raise PackError(f"{path}: {place}: header_only needs opens_block = true", hint=RULE.key("header_only").doc)
    if item["ignored_block"] and not item["opens_block"]:
        raise PackError(f"{path}: {place}: ignored_block needs opens_block = true", hint=RULE.key("ignored_block").doc)
    if item["ambient"] and (item["kind"] not in ("mark", "progress") or not item["phase"]):
        raise PackError(
            f'{path}: {place}: ambient needs kind = "mark" or "progress" and a `phase`',
            hint=RULE.key("ambient").doc,
        )
    if item["engine_work"] and (
        item["kind"] not in ("mark", "progress") or "serving" not in (item["phase"], item["after_ready"])
    ):
        raise PackError(
            f'{path}: {place}: engine_work needs kind = "mark" or "progress" and phase (or after_ready) "serving"',
            hint=RULE.key("engine_work").doc,
        )
    if item["main_returned"] and item["kind"] != "exit":
        raise PackError(f'{path}: {place}: main_returned needs kind = "exit"', hint=RULE.key("main_returned").doc)
    after_ready = item["after_ready"]
    if after_ready is not None and (
        item["kind"] not in ("mark", "progress")
        or not item["phase"]
        or Phase(after_ready).order <= Phase(item["phase"]).order
    ):
        raise PackError(
            f'{path}: {place}: after_ready needs kind = "mark" or "progress" and an earlier `phase`',
            hint=RULE.key("after_ready").doc,
        )
    return Rule(
        id=item["id"],
        pack=pack,
        phase=Phase(item["phase"]) if item["phase"] else None,
        kind=EventKind(item["kind"]),
        role=Role(item["role"]),
        priority=item["priority"],
        literal=literal,
        pattern=_compile(pattern_text, flags, path, place, trusted),
        ignore_case=ignore_case,
        draft=item["draft"],
        system=pack_system if system is None else system,
        versions=item["versions"],
        after_prefix=tuple(item["after_prefix"]),
        in_block=item["in_block"],
        opens_block=item["opens_block"],
        ignored_block=item["ignored_block"],
        header_only=item["header_only"],
        trailer_only=item["trailer_only"],
        first_failure=item["first_failure"],
        summary=item["summary"],
        examples=tuple(item["examples"]),
        counter_examples=tuple(item["counter_examples"]),
        reached=Phase(item["reached"]) if item["reached"] else None,
        closes_from=Phase(item["closes_from"]) if item["closes_from"] else None,
        ambient=item["ambient"],
        engine_work=item["engine_work"],
        main_returned=item["main_returned"],
        after_ready=Phase(after_ready) if after_ready else None,
    )


def _parse_signature(entry: tuple[str, dict[str, Any]], pack: str, path: str, trusted: bool) -> StallSignature:
    place, item = entry
    return StallSignature(
        id=item["id"],
        pack=pack,
        state=item["state"],
        pattern=_compile(item["regex"], item["flags"], path, place, trusted),
        priority=item["priority"],
        phase=Phase(item["phase"]) if item["phase"] else None,
        summary=item["summary"],
        examples=tuple(item["examples"]),
        counter_examples=tuple(item["counter_examples"]),
    )


def _parse_server_args(
    entry: tuple[str, dict[str, Any]], pack: str, path: str, pack_system: str | None, trusted: bool
) -> ServerArgsFormat:
    place, item = entry
    system: str | None = item["system"] or pack_system
    if system is None:
        raise PackError(
            f"{path}: {place}: 'system' is missing",
            hint="a pack with other than one system names it per [[server_args]]",
        )
    return ServerArgsFormat(
        id=item["id"],
        pack=pack,
        system=system,
        pattern=_compile(item["regex"], "", path, place, trusted),
        repeats=item["repeats"],
        keys={fact: tuple(item[fact]) for fact, _ in SERVER_ARGS_FACTS},
        expert_parallel_flag=item["expert_parallel_flag"],
        examples=tuple(item["examples"]),
        counter_examples=tuple(item["counter_examples"]),
    )


def check_pack_examples(pack_set: PackSet, only: Collection[str] | None = None) -> list[str]:
    """Every example must match its rule after prefix stripping; no counter-example may. `only`: the
    paths of the packs to check (the others still strip their prefixes)."""
    failures: list[str] = []
    for pack in pack_set.packs:
        if only is not None and pack.path not in only:
            continue
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
        frame_patterns: list[StallSignature | FrameAnchor | ServerArgsFormat] = [
            *pack.signatures,
            *pack.anchors,
            *pack.server_args,
        ]
        for searched in frame_patterns:
            failures += [
                f"{pack.path}: {searched.id}: example does not match: {e!r}"
                for e in searched.examples
                if searched.pattern.search(e) is None
            ]
            failures += [
                f"{pack.path}: {searched.id}: counter-example matches: {e!r}"
                for e in searched.counter_examples
                if searched.pattern.search(e) is not None
            ]
    return failures


def check_pack_regexes(pack_set: PackSet, only: Collection[str] | None = None) -> list[str]:
    """Every regex that can backtrack without bound (`logphase.packs.regex_safety`), with the way to
    rewrite it: the static check alone, so a shipped regex is held to it whatever engine runs it."""
    failures: list[str] = []
    for pack in pack_set.packs:
        if only is not None and pack.path not in only:
            continue
        regexes: list[PrefixRule | Rule | StallSignature | FrameAnchor | ServerArgsFormat | IgnoreEntry] = [
            *pack.prefixes,
            *pack.rules,
            *pack.signatures,
            *pack.anchors,
            *pack.server_args,
            *pack.ignores,
        ]
        searched = [(item.id, item.pattern) for item in regexes]
        searched += [(entry.id, entry.causes) for entry in pack.next_steps if entry.causes is not None]
        for item_id, pattern in searched:
            failures += [
                f"{pack.path}: {item_id}: the regex can backtrack without bound: {hazard.describe()}"
                for hazard in hazards(pattern.text, pattern.ignore_case)
            ]
    return failures


def _compile(pattern_text: str, flags: str, path: str, place: str, trusted: bool) -> PackRegex:
    unknown = set(flags) - {"i"}
    if unknown:
        raise PackError(
            f"{path}: {place}: unknown flags {''.join(sorted(unknown))!r}", hint="the only flag is 'i' (ignore case)"
        )
    if len(pattern_text) > MAX_REGEX_CHARS:  # parsing and compiling a 1 MB regex took a minute
        raise PackError(
            f"{path}: {place}: the regex is {len(pattern_text):,} characters long (at most {MAX_REGEX_CHARS:,})",
            hint="match the part of the line that tells the event, not the whole text",
        )
    if nesting(pattern_text) > MAX_REGEX_NESTING:  # every reader of a regex's parse recurses
        raise PackError(
            f"{path}: {place}: the regex nests its groups over {MAX_REGEX_NESTING} deep",
            hint="a regex needs a few levels of groups at most",
        )
    pattern = PackRegex(
        pattern_text,
        "i" in flags,
        None if trusted else MATCH_TIMEOUT_S,
        owner=f"{path}: {place}",
        groups=group_names(pattern_text),
    )
    if not trusted:
        import regex  # user packs run on it (see PackRegex)

        try:
            _ = pattern.compiled  # a user's bad regex is refused as its pack loads, not on first use
        except regex.error as exc:
            raise PackError(
                f"{path}: {place}: bad regex: {exc}", hint="test it with `logphase patterns explain LINE`"
            ) from exc
        _refuse_backtracking(pattern, path, place)
    return pattern


def _refuse_backtracking(pattern: PackRegex, path: str, place: str) -> None:
    """A user regex that the static check suspects is run on the line built for it: one that takes
    longer than PROBE_SECONDS there would take as long on such a line of a log, so its pack is
    refused as it loads (the `regex` module's own guards make many suspects fast: those load)."""
    for hazard in hazards(pattern.text, pattern.ignore_case):
        line = hazard.line
        try:
            pattern.compiled.search(line, timeout=PROBE_SECONDS)
        except TimeoutError:
            raise PackError(
                f"{path}: {place}: the regex backtracks without bound: a line of {len(line):,} characters "
                f"({hazard.prefix[:20]!r} then {hazard.pump!r} repeated) took it past {PROBE_SECONDS:g} s",
                hint=f"{hazard.kind} repeats: {REWRITES[hazard.kind]}",
            ) from None
