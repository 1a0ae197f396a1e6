"""The source inventory: templates from source text, their merge across releases, the lines synthesised
from them, the `[[ignore]]` table, and how the shipped packs read every shipped template."""

from __future__ import annotations

import re
import textwrap
import zipfile
from pathlib import Path

import pytest

from logphase.errors import PackError
from logphase.inventory.coverage import IGNORED, RULE, UNDECIDED, coverage_by_release, decide
from logphase.inventory.files import builtin_inventory_dir, native_templates, read_inventory
from logphase.inventory.store import InventoryEntry, decode, encode, merge_releases, release_key
from logphase.inventory.synthesis import synthesise
from logphase.inventory.templates import Template, extract_templates, percent_to_format
from logphase.logs.matcher import explain
from logphase.packs import load_packs, parse_pack
from tests.conftest import run_cli

SOURCE = textwrap.dedent(
    """
    import logging
    from tqdm import tqdm
    logger = logging.getLogger(__name__)

    def start(n, elapsed, path):
        logger.info("Waiting for %d core engine proc(s) to start: %s", n, path)
        logger.warning(f"Loading took {elapsed:.2f} s from {path!r}")
        logger.exception("Engine {} failed".format(n))
        print("Server is fired up and ready to roll!")
        for _ in tqdm(range(n), desc="Capturing batches"):
            pass
        cache.info("not a logger")
        logger.debug(message)
        raise TimeoutError(f"Timed out after {elapsed} s")
    """
)


def test_templates_from_logger_calls_prints_raises_and_tqdm_bars() -> None:
    # GIVEN a module that logs, prints, raises and shows a bar WHEN extracted
    found = sorted(extract_templates(SOURCE, "pkg/engine.py"), key=lambda t: t.line)
    # THEN each message is one template with its level and place; `cache.info` is no logger and a
    # message held in a variable has no text of its own
    assert found == [
        Template("log", "info", "Waiting for {:d} core engine proc(s) to start: {}", "pkg/engine.py", 7),
        Template("log", "warning", "Loading took {elapsed:.2f} s from {path!r}", "pkg/engine.py", 8),
        Template("log", "error", "Engine {} failed", "pkg/engine.py", 9),
        Template("print", "print", "Server is fired up and ready to roll!", "pkg/engine.py", 10),
        Template("tqdm", "progress", "Capturing batches", "pkg/engine.py", 11),
        Template("raise", "TimeoutError", "Timed out after {elapsed} s", "pkg/engine.py", 15),
    ]


def test_a_field_chosen_between_literals_is_the_else_branch() -> None:
    # GIVEN SGLang 0.5.3's capture line, whose graph name is chosen by device
    source = (
        "logger.info(f\"Capture {'cpu graph' if self.device == 'cpu' else 'cuda graph'} begin. avail mem={m:.2f} GB\")"
    )
    # THEN the template holds the common path's words
    (template,) = extract_templates(source, "model_runner.py")
    assert template.text == "Capture cuda graph begin. avail mem={m:.2f} GB"


def test_library_strings_cut_by_a_chunk_end_are_carried_into_the_next() -> None:
    # GIVEN a library read in two chunks that cut a ProcessGroupNCCL message in two
    message = b"[PG ID 0 PG GUID 0 Rank 1] Watchdog caught collective operation timeout"
    data = b"\0\x01junk\0" + message + b"\0Some other plain string here\0"
    cut = data.index(b"Watchdog") + 4
    # WHEN its strings are read
    found = list(native_templates([data[:cut], data[cut:]], "torch/lib/libtorch_cuda.so"))
    # THEN the message is one template; a string naming nothing of the distributed runtime is not kept
    assert [t.text for t in found] == [message.decode()]


def test_percent_fields_become_format_fields_and_braces_are_kept_literal() -> None:
    assert percent_to_format("took %.2f s (%s) rank=%d %r 100%% {x}") == "took {:.2f} s ({}) rank={:d} {!r} 100% {{x}}"


def test_a_file_that_does_not_parse_yields_nothing() -> None:
    assert list(extract_templates("def broken(:\n", "x.py")) == []


def test_releases_merge_into_one_entry_per_template_placed_in_the_newest() -> None:
    # GIVEN one template in two releases (moved between them) and one only in the older
    old = [Template("log", "info", "Load weight begin.", "a.py", 10), Template("log", "info", "Gone", "a.py", 20)]
    new = [Template("log", "info", "Load weight begin.", "b.py", 99)]
    # WHEN merged
    entries = merge_releases("sglang", {"0.4.10.post2": new, "0.4.6.post5": old})
    # THEN the shared template lists both releases in version order, placed where the newest has it
    assert entries == [
        InventoryEntry("sglang", "log", "info", "Gone", "a.py", 20, ("0.4.6.post5",)),
        InventoryEntry("sglang", "log", "info", "Load weight begin.", "b.py", 99, ("0.4.6.post5", "0.4.10.post2")),
    ]
    # AND the data file round-trips
    assert decode("sglang", encode(entries)) == entries


def test_releases_order_as_versions() -> None:
    releases = ["0.5.10", "0.5.0rc1", "0.4.10.post2", "0.5.0", "0.4.6.post5"]
    assert sorted(releases, key=release_key) == ["0.4.6.post5", "0.4.10.post2", "0.5.0rc1", "0.5.0", "0.5.10"]


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        (
            InventoryEntry("sglang", "log", "info", "Load weight begin. avail mem={:.2f} GB", "m.py", 5, ("0.5.1",)),
            "[2025-01-01 10:00:00 TP0] Load weight begin. avail mem=1.50 GB",
        ),
        (
            InventoryEntry(
                "vllm", "log", "warning", "{}Compiling a graph for world_size={world_size}", "v/b.py", 7, ()
            ),
            "WARNING 01-01 10:00:00 [b.py:7] Compiling a graph for world_size=2",
        ),
        (
            InventoryEntry("torch", "log", "error", "Rendezvous timed out", "torch/distributed/run.py", 9, ()),
            "E1201 10:00:00.000000 1234 distributed/run.py:9] Rendezvous timed out",
        ),
        (InventoryEntry("vllm", "raise", "TimeoutError", "Timed out\nmore", "x.py", 1, ()), "TimeoutError: Timed out"),
        (
            InventoryEntry("sglang", "tqdm", "progress", "Capturing batches ({bs=})", "c.py", 1, ()),
            "Capturing batches (x): 100%|██████████| 2/2 [00:01<00:00,  1.50it/s]",
        ),
    ],
)
def test_each_template_becomes_the_line_its_system_prints(entry: InventoryEntry, line: str) -> None:
    assert synthesise(entry) == line


IGNORING_PACK = {
    "pack": {"name": "demo", "schema": 1, "systems": ["vllm"]},
    "ignore": [{"id": "demo.ignore.debug", "levels": ["debug"], "regex": "^Poller", "why": "not printed"}],
}


def test_ignore_entries_name_messages_of_their_system_and_levels() -> None:
    # GIVEN a pack that ignores a DEBUG message of vLLM
    (entry,) = parse_pack(IGNORING_PACK, "demo.toml").ignores
    # THEN only that system's message at that level is ignored
    assert entry.ignores("vllm", "debug", "Poller timed out")
    assert not entry.ignores("vllm", "info", "Poller timed out")
    assert not entry.ignores("sglang", "debug", "Poller timed out")
    assert not entry.ignores("vllm", "debug", "Something else")


def test_an_ignore_entry_without_a_reason_does_not_load() -> None:
    pack = {**IGNORING_PACK, "ignore": [{"id": "demo.ignore", "regex": "."}]}
    with pytest.raises(PackError, match="'why' is missing"):
        parse_pack(pack, "demo.toml")


ENGINE_WAITS = [
    "DEBUG 01-10 09:00:00 core.py:193] Waiting for EngineCoreProc to startup.",  # 0.6.6
    "DEBUG 05-16 13:12:16 [core_client.py:425] Waiting for 1 core engine proc(s) to start: {0}",  # 0.8.5
    "(APIServer pid=1) DEBUG 09-13 16:16:40 [utils.py:1444] Waiting for 1 local, 0 remote core engine proc(s) to start",
    "DEBUG 09-13 16:16:40 [utils.py:1443] Waiting for 2 local, 2 remote core engine proc(s) to connect.",
]


@pytest.mark.parametrize("line", ENGINE_WAITS)
def test_every_vllm_wording_of_the_engine_core_wait_is_launch(line: str) -> None:
    # wrong answer 5 of issue 12: the V1 engine-core start-up wait was in no pack
    rule, _ = explain(line, load_packs(check_examples=False)).matches[0]
    assert (rule.id, rule.phase, rule.kind.value) == ("vllm.launch.waiting_for_engine", "launch", "mark")


@pytest.mark.parametrize(
    "line",
    [
        # 0.9.2-0.11.0 v1/engine/core_client.py (`send` and `initial` glued in the source)
        "TimeoutError: Timed out waiting for engines to sendinitial message on input socket.",
        # 0.33.0 v1/engine/utils.py, after VLLM_ENGINE_READY_TIMEOUT_S
        "TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow weight"
        " loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S).",
    ],
)
def test_every_vllm_wording_of_the_engine_start_up_timeout_is_a_launch_timeout(line: str) -> None:
    rule, _ = explain(line, load_packs(check_examples=False)).matches[0]
    assert (rule.phase, rule.kind.value, rule.role.value) == ("launch", "timeout", "root")


@pytest.mark.parametrize("wording", ENGINE_WAITS[:3])
def test_a_log_of_engine_core_waits_is_stalled_at_launch_not_unknown(tmp_path: Path, wording: str) -> None:
    # GIVEN a vLLM log that only waits for its engine core, ten seconds apart
    prefix, _, message = wording.partition("] ")
    lines = [
        f"{prefix.replace('09:00:00', f'09:00:{s:02d}').replace('13:12:16', f'13:12:{s:02d}')}] {message}"
        for s in (10, 20, 30, 40)
    ]
    log = tmp_path / "engine-wait.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN analysed post-mortem THEN it stalled during launch (exit 4), not UNKNOWN (exit 6)
    result = run_cli("analyze", "--post-mortem", "--format", "json", str(log))
    assert result.exit_code == 4, result.output
    assert '"verdict": "stalled"' in result.output
    assert '"phase": "launch"' in result.output


# --- the shipped inventory, read by the shipped packs ---------------------------------------------

# The releases whose wheels the shipped inventory was built from (issue 12's list, and issue 25's releases people
# still paste: vLLM 0.4-0.6.5, SGLang 0.2-0.3.5; torch: the PyPI CUDA wheels, whose libtorch_cuda.so holds
# ProcessGroupNCCL's messages).
RELEASES = {
    "sglang": [
        "0.2.15",
        "0.3.0",
        "0.3.6.post3",
        "0.4.0",
        "0.4.3.post4",
        "0.4.6.post5",
        "0.4.10.post2",
        "0.5.1",
        "0.5.3",
        "0.5.6",
        "0.5.10",
        "0.5.15",
        "0.5.23",
    ],
    "vllm": ["0.4.3", "0.5.5", "0.6.3.post1", "0.6.6.post1", "0.7.3", "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.33.0"],
    "torch": ["2.4.1", "2.6.0", "2.9.1", "2.13.0", "2.14.1"],
}


@pytest.fixture(scope="module")
def decisions() -> list:  # type: ignore[type-arg]
    packs = load_packs(check_examples=False)
    return [decide(entry, packs) for entry in read_inventory(builtin_inventory_dir())]


@pytest.mark.slow
def test_the_inventory_holds_every_listed_release_in_version_order(decisions: list) -> None:  # type: ignore[type-arg]
    found: dict[str, list[str]] = {}
    for row in coverage_by_release(decisions):
        found.setdefault(row.system, []).append(row.release)
    assert found == RELEASES


def test_every_template_of_every_release_is_decided(decisions: list) -> None:  # type: ignore[type-arg]
    # GIVEN every message the releases print on their start-up, health, distributed and shutdown paths
    # THEN each is read by a rule or ignored by a pack with its reason: 100 % decided per release
    undecided = [
        f"{d.entry.system} {d.entry.file}:{d.entry.line} {d.line}" for d in decisions if d.outcome == UNDECIDED
    ]
    assert undecided == []
    assert all(row.share_decided == 1.0 for row in coverage_by_release(decisions))


def test_an_error_or_raised_message_is_never_read_as_progress_or_readiness(decisions: list) -> None:  # type: ignore[type-arg]
    # GIVEN every template logged at ERROR / CRITICAL or raised WHEN a rule reads its line
    # THEN the rule tells a failure, a mark or a diagnostic: never a phase step or readiness
    wrong = [
        (d.entry.file, d.entry.line, d.rule.id)
        for d in decisions
        if d.rule is not None
        and (d.entry.level in ("error", "critical") or d.entry.kind == "raise")
        and d.rule.kind.value in ("begin", "end", "progress", "ready")
    ]
    assert wrong == []


def test_an_error_or_raise_that_speaks_of_a_timeout_is_read_as_a_failure(decisions: list) -> None:  # type: ignore[type-arg]
    # GIVEN every template logged at ERROR / CRITICAL or raised whose text names a timeout
    # THEN a rule reads it as a timeout, an error or a fatal end: no pack ignores a timeout
    timeout = re.compile(r"timed? ?out|timeout", re.IGNORECASE)
    missed = [
        (d.entry.system, d.entry.file, d.entry.line, d.label)
        for d in decisions
        if (d.entry.level in ("error", "critical") or d.entry.kind == "raise")
        and timeout.search(d.entry.text)
        and (d.rule is None or d.rule.kind.value not in ("timeout", "error", "fatal"))
    ]
    assert missed == []


def test_a_decision_is_a_rule_an_ignore_entry_with_its_reason_or_undecided(decisions: list) -> None:  # type: ignore[type-arg]
    for decision in decisions:
        if decision.outcome == RULE:
            assert decision.rule is not None and "/" in decision.label
        elif decision.outcome == IGNORED:
            assert decision.ignore is not None and decision.ignore.why
        else:
            assert decision.outcome == UNDECIDED and decision.ignore is None and decision.label == UNDECIDED


def test_coverage_command_prints_one_row_per_release() -> None:
    result = run_cli("patterns", "coverage", "--system", "vllm", "--release", "0.8.5")
    assert result.exit_code == 0, result.output
    *table, wrongly_ignored = result.output.splitlines()
    rows = [line.split()[:2] for line in table[2:]]
    assert rows == [["vllm", "0.8.5"]]
    # AND the last line counts the ignored templates that name a signal, an exit, a wait, ... (none)
    assert wrongly_ignored == "ignored although they name a signal, an exit, a wait, a timeout or a shutdown: 0"


def write_wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in members.items():
            wheel.writestr(name, text)
    return path


def test_inventory_command_keeps_the_in_scope_files_of_each_release(tmp_path: Path) -> None:
    # GIVEN two SGLang wheels: a scheduler message in both, a request handler's only in the older
    scheduler = 'logger.info("Load weight begin. avail mem=%.2f GB", mem)\n'
    old = write_wheel(
        tmp_path / "sglang-0.4.0-py3-none-any.whl",
        {
            "sglang/srt/managers/scheduler.py": scheduler,
            "sglang/srt/entrypoints/openai/serving_chat.py": 'logger.error("Error in request: %s", e)\n',
        },
    )
    new = write_wheel(tmp_path / "sglang-0.5.1-py3-none-any.whl", {"sglang/srt/managers/scheduler.py": scheduler})
    out = tmp_path / "inventory"
    # WHEN the inventory is rebuilt from them
    result = run_cli("patterns", "inventory", str(old), str(new), "--out", str(out))
    # THEN the data file holds the scheduler's template with both releases, and nothing of the handler
    assert result.exit_code == 0, result.output
    assert read_inventory(out) == [
        InventoryEntry(
            "sglang",
            "log",
            "info",
            "Load weight begin. avail mem={:.2f} GB",
            "sglang/srt/managers/scheduler.py",
            1,
            ("0.4.0", "0.5.1"),
        )
    ]


def test_coverage_lists_the_undecided_templates_with_their_lines(tmp_path: Path) -> None:
    # GIVEN an inventory with one message no pack knows, naming a wait (never ignored by the broad entries)
    entry = InventoryEntry(
        "vllm", "log", "info", "Reticulating splines: waiting for {:d} peers", "vllm/v1/engine/core.py", 7, ("9.9",)
    )
    (tmp_path / "vllm.jsonl.gz").write_bytes(encode([entry]))
    # WHEN its coverage is asked for with --undecided
    result = run_cli("patterns", "coverage", "--data", str(tmp_path), "--undecided")
    # THEN the release is 0 % decided and the template is listed with the line synthesised from it
    assert result.exit_code == 0, result.output
    assert ["vllm", "9.9", "1", "0", "0", "1", "0.0", "%"] in [line.split() for line in result.output.splitlines()]
    assert (
        "vllm vllm/v1/engine/core.py:7 [info] INFO 01-01 10:00:00 [core.py:7] Reticulating splines: waiting for 2 peers"
        in result.output
    )
