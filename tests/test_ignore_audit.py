"""Issue 24: what a pack never knowingly ignores, and how the three kinds of end it named read."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from logphase.inventory.coverage import IGNORED, RULE, Decision, decide
from logphase.inventory.files import builtin_inventory_dir, read_inventory
from logphase.inventory.store import InventoryEntry, encode
from logphase.logs.matcher import explain
from logphase.packs import IgnoreEntry, load_packs, parse_pack
from tests.conftest import FIXTURES, run_cli, run_json

# The list: a message about one of these is never ignored; it gets a rule with a kind and a role.
# (Spellings of the same word: `shut down`, `shutting down`, `timed out`, `retries`; `hang` covers `hanging`.)
NEVER_IGNORED = re.compile(
    r"\b(?:signal|death|exit|kill|hang|stall|timeout|timed out|waiting|wait for|retry|retries\b|not called"
    r"|not registered|heartbeat|no available|shutdown|shut down|shutting down)",
    re.IGNORECASE,
)
FIELD = re.compile(r"\{[^{}]*\}")  # a template's placeholder: code, not words it prints


def positive_text(regex: str) -> str:
    """The regex without its negative lookaheads `(?!...)`: what an entry asks a message to say."""
    out, i = [], 0
    while i < len(regex):
        if regex.startswith("(?!", i):
            depth, i = 1, i + 3
            while i < len(regex) and depth:
                if regex[i] == "\\":
                    i += 1
                elif regex[i] == "(":
                    depth += 1
                elif regex[i] == ")":
                    depth -= 1
                i += 1
            continue
        out.append(regex[i])
        i += 1
    return "".join(out)


def names_what_is_never_ignored(entry: IgnoreEntry) -> bool:
    return NEVER_IGNORED.search(positive_text(entry.pattern.text)) is not None


def test_no_ignore_entry_of_the_shipped_packs_asks_for_those_words() -> None:
    # GIVEN every [[ignore]] entry of the shipped packs
    entries = [entry for pack in load_packs(check_examples=False).packs for entry in pack.ignores]
    # WHEN their regexes are read without the lookaheads that exclude the words
    # THEN none asks a message to name a signal, an exit, a wait, a timeout or a shutdown
    assert entries
    assert [entry.id for entry in entries if names_what_is_never_ignored(entry)] == []


def test_the_check_catches_an_entry_that_would_swallow_a_death_signal() -> None:
    # GIVEN a pack that ignores torchrun's death-signal line, and one that ignores everything but such words
    pack = {
        "pack": {"name": "demo", "schema": 1, "systems": ["torch"]},
        "ignore": [
            {"id": "demo.ignore.signal", "regex": r"^Received \S+ death signal", "why": "x"},
            {"id": "demo.ignore.rest", "regex": r"^(?!.*(?:signal|exit|shut ?down))", "why": "x"},
        ],
    }
    swallowing, excluding = parse_pack(pack, "demo.toml").ignores
    # THEN only the first is flagged
    assert names_what_is_never_ignored(swallowing)
    assert not names_what_is_never_ignored(excluding)


@pytest.fixture(scope="module")
def decisions() -> list[Decision]:
    packs = load_packs(check_examples=False)
    return [decide(entry, packs) for entry in read_inventory(builtin_inventory_dir())]


def test_every_inventory_template_that_names_them_is_read_by_a_rule(decisions: list[Decision]) -> None:
    # GIVEN every source template whose printed words name a signal, a death, an exit, a kill, a hang, a
    # stall, a timeout, a wait, a retry, a call not made, a registration missing, a heartbeat, nothing
    # available or a shutdown
    named = [d for d in decisions if NEVER_IGNORED.search(FIELD.sub("", d.entry.text))]
    assert len(named) > 200
    # THEN no ignore entry swallows one, and a rule with a kind and a role reads each
    assert [f"{d.entry.file}:{d.entry.line} {d.line}" for d in named if d.outcome == IGNORED] == []
    assert [f"{d.entry.file}:{d.entry.line} {d.line}" for d in named if d.outcome != RULE] == []
    assert all(d.rule is not None and d.rule.kind and d.rule.role for d in named)


# --- the three kinds, line by line (exact strings from the sources cited in the packs) ------------------

PACKS = load_packs(check_examples=False)


@pytest.mark.parametrize(
    ("line", "rule_id", "kind", "role"),
    [
        # torch 2.13 elastic/agent/server/api.py:753 on Python 3.11+ (a Signals prints its number)
        (
            "W0309 22:46:01.102000 61 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
            "shutting down workers",
            "torch.elastic.death_signal",
            "fatal",
            "root",
        ),
        (
            "W0309 22:46:01.102000 61 torch/distributed/elastic/agent/server/api.py:753] Received 1 death signal, "
            "shutting down workers",
            "torch.elastic.death_signal",
            "fatal",
            "root",
        ),
        # Python 3.10 and before: `Signals.SIGQUIT`; torch <= 2.0's logger format `LEVEL:name:`
        (
            "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGQUIT death signal, shutting "
            "down workers",
            "torch.elastic.death_signal",
            "fatal",
            "root",
        ),
        # api.py:1005, the same signal during the exit barrier
        (
            "W0309 22:46:01.102000 61 torch/distributed/elastic/agent/server/api.py:1005] Got termination signal: 15",
            "torch.elastic.death_signal",
            "fatal",
            "root",
        ),
        # SIGINT is Ctrl-C: a person stopped it (docs/design.md §4.2)
        (
            "W0309 22:46:01.102000 61 torch/distributed/elastic/agent/server/api.py:753] Received 2 death signal, "
            "shutting down workers",
            "torch.elastic.death_signal_interrupt",
            "interrupt",
            "lifecycle",
        ),
        (
            "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGINT death signal, shutting down "
            "workers",
            "torch.elastic.death_signal_interrupt",
            "interrupt",
            "lifecycle",
        ),
        # ProcessGroupNCCL.cpp ~ProcessGroupNCCL, 2.6+ and 2.4-2.5 wordings, behind c10's `[rankN]:[W...]`
        (
            "[rank3]:[W224 14:21:40.118203311 ProcessGroupNCCL.cpp:1553] Warning: WARNING: destroy_process_group() "
            "was not called before program exit, which can leak resources. For more info, please see "
            "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
            "torch.exit.process_group_not_destroyed",
            "exit",
            "lifecycle",
        ),
        (
            "[rank1]:[W601 09:04:24.554861212 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT "
            "been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should "
            "call destroy_process_group to ensure that any pending NCCL operations have finished in this process. "
            "(function operator())",
            "torch.exit.process_group_not_destroyed",
            "exit",
            "lifecycle",
        ),
        # vLLM 0.11.0 shm_broadcast.py:466 (INFO, the reader's wording) and 0.8.5 :430 (DEBUG)
        (
            "(EngineCore_DP0 pid=274) INFO 10-21 09:12:29 [shm_broadcast.py:466] No available shared memory "
            "broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing "
            "some time-consuming work (e.g. compilation).",
            "vllm.shm_broadcast.no_block",
            "mark",
            "root",
        ),
        (
            "(EngineCore_0 pid=441) DEBUG 05-10 16:05:15 [shm_broadcast.py:430] No available shared memory "
            "broadcast block found in 60 second.",
            "vllm.shm_broadcast.no_block",
            "mark",
            "root",
        ),
    ],
)
def test_each_wording_reads_as_its_kind(line: str, rule_id: str, kind: str, role: str) -> None:
    # GIVEN a line as the program prints it WHEN explained THEN the winning rule gives its kind and role
    rule, _ = explain(line, PACKS).matches[0]
    assert (rule.id, rule.kind.value, rule.role.value) == (rule_id, kind, role)


def test_the_not_destroyed_warning_names_the_rank_that_exited() -> None:
    result = explain(
        "[rank3]:[W224 14:21:40.118203311 ProcessGroupNCCL.cpp:1553] Warning: WARNING: destroy_process_group() was "
        "not called before program exit, which can leak resources.",
        PACKS,
    )
    assert result.prefix.rank == "rank 3"


# --- the three kinds, whole logs (the golden fixtures hold two logs of each; these vary them) -----------

SIGHUP_LOG = FIXTURES / "logs" / "torch" / "torchrun-sighup-two-ranks-py310.log"
DDP_DONE_LOG = FIXTURES / "logs" / "torch" / "ddp-finished-without-destroy-nccl-info.log"
SHM_START_LOG = FIXTURES / "logs" / "vllm" / "v1-shm-broadcast-stuck-weight-load.log"


def test_ctrl_c_in_torchruns_terminal_is_an_interrupt_not_an_abort(tmp_path: Path) -> None:
    # GIVEN the SIGHUP fixture (Python 3.10 wording) as it reads when Ctrl-C (SIGINT) reached torchrun instead
    text = SIGHUP_LOG.read_text()
    assert text.count("SIGHUP") == 4
    log = tmp_path / "torchrun-ctrl-c.log"
    log.write_text(text.replace("SIGHUP", "SIGINT"))
    # WHEN analysed post-mortem
    exit_code, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a person stopped it: stalled where it was, the interrupt in the reason, not aborted
    assert (exit_code, report["verdict"]) == (4, "stalled")
    assert report["reason"].startswith("interrupted")


def test_a_job_is_finished_only_when_every_rank_exited(tmp_path: Path) -> None:
    # GIVEN the two-rank job that ended without destroy_process_group(), with rank 1's warning cut off
    lines = DDP_DONE_LOG.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not (line.startswith("[rank1]:[W") and "destroy_process_group" in line)]
    assert len(kept) == len(lines) - 1
    log = tmp_path / "ddp-rank1-silent.log"
    log.write_text("".join(kept))
    # WHEN analysed post-mortem THEN rank 1 never said it ended: not finished
    exit_code, report = run_json("analyze", "--post-mortem", str(log))
    assert (exit_code, report["verdict"]) == (4, "stalled")


def test_a_crash_before_the_not_destroyed_warnings_is_still_a_crash(tmp_path: Path) -> None:
    # GIVEN the finished two-rank job with a rank-0 traceback before both ranks' exit warnings
    text = DDP_DONE_LOG.read_text()
    crash = '[rank0]: Traceback (most recent call last):\n[rank0]:   File "/workspace/train.py", line 88, in <module>\n'
    crash += "[rank0]: RuntimeError: checkpoint directory /ckpt/run-0117 is not writable\n"
    at = text.index("[rank0]:training done")
    log = tmp_path / "ddp-crash-then-exit.log"
    log.write_text(text[:at] + crash + text[at:])
    # WHEN analysed THEN the failure wins over the exits (docs/design.md §4.1)
    exit_code, report = run_json("analyze", "--post-mortem", str(log))
    assert (exit_code, report["verdict"]) == (4, "crashed")
    assert "is not writable" in report["root_cause"]["text"]


def test_hang_reports_during_start_up_wait_for_the_budget(tmp_path: Path) -> None:
    # GIVEN vLLM's engine core reporting every minute that TP3 does not answer while it loads weights,
    # read live 30 s after its last line (12 min after the last progress, within weight_load's 20 min)
    as_of = "2026-02-03 14:33:54"
    # WHEN judged THEN it may still be slow work (the message says so: compilation, quantisation): progressing
    exit_code, report = run_json("analyze", "--as-of", as_of, str(SHM_START_LOG))
    assert (exit_code, report["verdict"], report["root_cause"]) == (5, "progressing", None)
    # AND read past the budget (21 min after the last progress) it is stalled, the first report since being why
    exit_code, report = run_json("analyze", "--as-of", "2026-02-03 14:42:30", str(SHM_START_LOG))
    assert (exit_code, report["verdict"]) == (4, "stalled")
    first = next(n for n, line in enumerate(SHM_START_LOG.read_text().splitlines(), 1) if "No available" in line)
    assert report["root_cause"]["line"] == first


# --- patterns explain / coverage ---------------------------------------------------------------------


def test_explain_names_the_ignore_entry_that_swallows_a_line() -> None:
    # GIVEN a vLLM configuration note no rule reads
    line = (
        "(APIServer pid=1) INFO 09-22 12:15:30 [scheduler.py:222] Chunked prefill is enabled with "
        "max_num_batched_tokens=8192."
    )
    # WHEN explained THEN it says no rule matches and which entry ignores it, at which levels and why
    result = run_cli("patterns", "explain", line)
    assert result.exit_code == 6
    assert result.output == textwrap.dedent(
        """\
        prefix:  vllm.prefix.proc, vllm.prefix.log
        time:    1900-09-22 12:15:30
        rank:    (main process)
        message: Chunked prefill is enabled with max_num_batched_tokens=8192.
        no rule matches
        """
    ) + (
        "ignored: vllm.ignore.notes (info, print, progress): configuration notes, fallbacks and status that name no "
        "start-up step, wait, timeout or failure\n"
    )


def test_explain_of_a_line_no_pack_knows_names_no_ignore_entry() -> None:
    result = run_cli("patterns", "explain", "nothing to see here")
    assert result.exit_code == 6
    assert result.output.endswith("message: nothing to see here\nno rule matches\n")


def test_explain_reads_torchruns_death_signal_with_its_rule() -> None:
    line = (
        "W0309 22:46:01.102000 61 torch/distributed/elastic/agent/server/api.py:753] Received 15 death signal, "
        "shutting down workers"
    )
    result = run_cli("patterns", "explain", line)
    assert result.exit_code == 0
    assert "message: Received 15 death signal, shutting down workers\n" in result.output
    assert "* torch.elastic.death_signal  phase=- kind=fatal role=root priority=64\n" in result.output
    assert "      signal = 15\n" in result.output


def test_coverage_lists_an_ignored_template_that_names_a_retry(tmp_path: Path) -> None:
    # GIVEN an inventory of two vLLM templates and a user pack that ignores both, one of them a retry
    entries = [
        InventoryEntry("vllm", "log", "info", "Reticulating splines, retrying in {:d}s", "vllm/x.py", 7, ("9.9",)),
        InventoryEntry("vllm", "log", "info", "Reticulating splines done", "vllm/x.py", 9, ("9.9",)),
    ]
    data = tmp_path / "data"
    data.mkdir()
    (data / "vllm.jsonl.gz").write_bytes(encode(entries))
    pack = tmp_path / "user.toml"
    pack.write_text(
        '[pack]\nname = "user"\nschema = 1\nsystems = ["vllm"]\n\n'
        '[[ignore]]\nid = "user.ignore.splines"\nregex = \'^Reticulating splines\'\nwhy = "demo"\n'
    )
    # WHEN its coverage is asked for
    result = run_cli("patterns", "coverage", "--data", str(data), "--patterns", str(pack))
    # THEN the row counts 0 by rule, 2 ignored, 0 undecided, and the retry is listed as wrongly ignored
    assert result.exit_code == 0, result.output
    assert ["vllm", "9.9", "2", "0", "2", "0", "100.0", "%"] in [line.split() for line in result.output.splitlines()]
    assert result.output.endswith(
        "ignored although they name a signal, an exit, a wait, a timeout or a shutdown: 1\n"
        "vllm vllm/x.py:7 [info] user.ignore.splines: INFO 01-01 10:00:00 [x.py:7] Reticulating splines, "
        "retrying in 2s\n"
    )


def test_coverage_of_the_shipped_packs_lists_none() -> None:
    result = run_cli("patterns", "coverage", "--system", "torch", "--release", "2.13.0")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("ignored although they name a signal, an exit, a wait, a timeout or a shutdown: 0\n")
