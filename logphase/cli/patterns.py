"""`logphase patterns list|test|explain|inventory|coverage`: inspect and check the pattern packs."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from tabulate import tabulate

from logphase.cli.common import load_all_packs, patterns_option
from logphase.errors import ExitCode, UsageError
from logphase.frames import TRIGGER
from logphase.inventory.coverage import (
    IGNORED,
    RULE,
    UNDECIDED,
    coverage_by_release,
    decide,
    swallowed_by,
    wrongly_ignored,
)
from logphase.inventory.files import SYSTEMS, build_inventory, builtin_inventory_dir, data_path, read_inventory
from logphase.logs.fast.plan import modules_read_one_by_one, plan_for, read_one_by_one
from logphase.logs.matcher import explain as explain_line
from logphase.packs import (
    Rule,
    builtin_pack_paths,
    check_pack_examples,
    check_pack_regexes,
    expand_pack_paths,
    load_packs,
)
from logphase.phases import MAIN_PROCESS_PHASES, EventKind, Phase

REGEX_TABLES = ("prefixes", "rules", "signatures", "anchors", "server_args", "ignores")


@click.group()
def patterns() -> None:
    """The rules logphase matches log lines with."""


@patterns.command("list")
@click.option("--system", "system", metavar="SYSTEM", help="Only the packs of this system (sglang, vllm, torch).")
@click.option("--phase", "phase", type=click.Choice([p.value for p in Phase]), help="Only the rules of this phase.")
@patterns_option
def list_rules(pattern_paths: tuple[Path, ...], system: str | None, phase: str | None) -> None:
    """Every pack and rule: id, phase, kind, role."""
    packs = load_all_packs(pattern_paths)
    chosen = [pack for pack in packs.packs if system is None or system in pack.systems]
    if system is not None and not chosen:
        known = sorted({name for pack in packs.packs for name in pack.systems})
        raise UsageError(f"--system {system!r}: no pack is for it", hint=f"the packs know: {', '.join(known)}")
    for pack in chosen:
        systems = (", ".join(pack.systems) or "generic") + (", job" if pack.job else "")
        click.echo(
            f"{pack.name} ({systems}): {len(pack.prefixes)} prefixes, {len(pack.rules)} rules, "
            f"{len(pack.signatures)} signatures, {len(pack.anchors)} anchors, "
            f"{len(pack.server_args)} server_args — {pack.path}"
        )
    rows = [
        [r.id, r.phase.value if r.phase else "", r.kind.value, r.role.value, r.priority]
        for pack in chosen
        for r in pack.rules
        if phase is None or (r.phase is not None and r.phase.value == phase)
    ]
    click.echo(tabulate(sorted(rows), headers=["rule", "phase", "kind", "role", "priority"]))


@patterns.command("test")
@click.argument("targets", nargs=-1)
def test_packs(targets: tuple[str, ...]) -> None:
    """Run every example and counter-example of the packs (all built-in packs by default), and check
    every regex for repeats that can backtrack without bound.

    TARGET is a built-in pack name (sglang, vllm, …) or a path to a .toml file or folder."""
    builtin = {path.stem: path for path in builtin_pack_paths()}
    paths: list[Path] = []
    for target in targets:
        if target in builtin:
            paths.append(builtin[target])
        else:
            paths.extend(expand_pack_paths([Path(target)]))
    # user packs are checked together with the built-in ones: their prefixes strip each other's lines
    selected = load_packs(paths if targets else (), builtin=True, check_examples=False)
    wanted = {str(p) for p in paths} if targets else {pack.path for pack in selected.packs}
    failures = check_pack_examples(selected, only=wanted) + check_pack_regexes(selected, only=wanted)
    checked = [pack for pack in selected.packs if pack.path in wanted]
    examples = 0
    for pack in checked:
        for examples_of in (pack.prefixes, pack.rules, pack.signatures, pack.anchors, pack.server_args):
            examples += sum(len(item.examples) + len(item.counter_examples) for item in examples_of)
    for failure in failures:
        click.echo(f"FAIL {failure}")
    pack_paths = {pack.name: pack.path for pack in selected.packs}
    for rule, why in read_one_by_one(selected, plan_for(selected, (TRIGGER,))):
        if pack_paths.get(rule.pack) in wanted:  # a cost, not a failure: the rule may be right as it is
            click.echo(f"COST {pack_paths[rule.pack]}: rule {rule.id}: {why}; each of its lines goes to the matcher")
    for hint, why in modules_read_one_by_one(selected):
        if pack_paths.get(hint.pack) in wanted:
            click.echo(f"COST {pack_paths[hint.pack]}: module {hint.id}: {why} by the matcher")
    regexes = sum(len(getattr(pack, kind)) for pack in checked for kind in REGEX_TABLES)
    click.echo(f"{len(checked)} packs, {examples} examples and {regexes} regexes checked, {len(failures)} failed")
    if failures:
        sys.exit(int(ExitCode.CANNOT_RUN))


@patterns.command("explain")
@click.argument("line")
@patterns_option
def explain(line: str, pattern_paths: tuple[Path, ...]) -> None:
    """Which prefix and rules match LINE, and what they capture."""
    packs = load_all_packs(pattern_paths)
    result = explain_line(line, packs)
    prefix = result.prefix
    click.echo(f"prefix:  {', '.join(prefix.prefixes) or '(none)'}")
    click.echo(f"time:    {prefix.time or '-'}")
    click.echo(f"rank:    {prefix.rank or _untagged(result.matches[0][0] if result.matches else None)}")
    click.echo(f"message: {result.message}")
    if not result.matches:
        click.echo("no rule matches")
        ignored = swallowed_by(result, packs)
        if ignored is not None:
            click.echo(f"ignored: {ignored.id} ({', '.join(ignored.levels) or 'any level'}): {ignored.why}")
        sys.exit(int(ExitCode.UNKNOWN))
    for position, (rule, captures) in enumerate(result.matches):
        winner = "*" if position == 0 else " "
        phase = rule.phase.value if rule.phase else "-"
        click.echo(
            f"{winner} {rule.id}  phase={phase} kind={rule.kind.value} role={rule.role.value} priority={rule.priority}"
        )
        for name, value in captures.items():
            click.echo(f"      {name} = {value}")
    if len(result.matches) > 1:
        click.echo("(* wins: the highest priority)")


@patterns.command("inventory")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("patterns/inventory"),
    show_default=True,
    help="Folder of the data files (one per system).",
)
@click.option("--force", is_flag=True, help="Replace the data files that exist (never an input, a folder or a device).")
def inventory(wheels: tuple[Path, ...], out: Path, force: bool) -> None:
    """Rebuild the message inventory from release WHEELS (sglang, vllm, torch).

    A dev command: pass every release of a system at once, its data file is rewritten from them
    (an existing one only with --force; written beside it and renamed into place when complete).
    e.g. `pip download --no-deps vllm==0.11.0 -d /tmp/wheels`, then
    `logphase patterns inventory /tmp/wheels/*.whl --force`.

    Exit: 0 written; 2 a data file exists without --force, or names an input; 3 --out is no
    folder, or a data file's path is a folder or a device, or cannot be written."""
    for system, count in sorted(build_inventory(list(wheels), out, force=force).items()):
        click.echo(f"{system}: {count} templates → {data_path(out, system)}")


@patterns.command("coverage")
@click.option("--system", "systems", multiple=True, type=click.Choice(SYSTEMS), help="Only this system (repeatable).")
@click.option("--release", "releases", multiple=True, help="Only this release (repeatable).")
@click.option("--undecided", is_flag=True, help="List the undecided templates and their synthesised lines.")
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of the inventory data (default: the shipped one).",
)
@patterns_option
def coverage(
    systems: tuple[str, ...],
    releases: tuple[str, ...],
    undecided: bool,
    data_dir: Path | None,
    pattern_paths: tuple[Path, ...],
) -> None:
    """Per release: how many source templates the packs map to each phase / event kind, how many
    they knowingly ignore, and how many are undecided; then the ignored templates that name a signal,
    a death, an exit, a kill, a hang, a wait, a retry, a timeout or a shutdown (there should be none)."""
    packs = load_all_packs(pattern_paths)
    entries = read_inventory(data_dir or builtin_inventory_dir(), systems or SYSTEMS)
    if releases:
        entries = [e for e in entries if set(e.releases) & set(releases)]
    decisions = [decide(entry, packs) for entry in entries]
    rows = []
    for row in coverage_by_release(decisions):
        if releases and row.release not in releases:
            continue
        kinds = ", ".join(f"{label} {count}" for label, count in row.labels.most_common() if "/" in label)
        rows.append(
            [
                row.system,
                row.release,
                row.total,
                row.outcomes[RULE],
                row.outcomes[IGNORED],
                row.outcomes[UNDECIDED],
                f"{100 * row.share_decided:.1f} %",
                kinds,
            ]
        )
    click.echo(
        tabulate(
            rows, headers=["system", "release", "templates", "rule", "ignored", "undecided", "decided", "by phase/kind"]
        )
    )
    wrong = wrongly_ignored(decisions)
    click.echo(f"ignored although they name a signal, an exit, a wait, a timeout or a shutdown: {len(wrong)}")
    for decision in wrong:
        entry, ignored = decision.entry, decision.ignore
        assert ignored is not None
        click.echo(f"{entry.system} {entry.file}:{entry.line} [{entry.level}] {ignored.id}: {decision.line}")
    if undecided:
        for decision in decisions:
            if decision.outcome == UNDECIDED:
                entry = decision.entry
                click.echo(f"{entry.system} {entry.file}:{entry.line} [{entry.level}] {decision.line}")


def _untagged(rule: Rule | None) -> str:
    """Whose a line without a rank tag is, as the timeline gives it (logs/timeline.py): a tqdm bar outside the
    main process's phases is the lowest rank's (rank 0 prints it), any other line the main process's."""
    if rule is not None and rule.kind is EventKind.PROGRESS and rule.phase not in MAIN_PROCESS_PHASES:
        return "(no tag: the lowest rank's, as a progress bar is rank 0's)"
    return "(main process)"
