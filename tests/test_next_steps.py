"""What to do next (`[[next]]` in the packs): an answer for every verdict × phase × system, the most
specific one, its placeholders filled, in every format; bad entries refused at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase.errors import PackError
from logphase.packs import load_packs
from logphase.phases import Phase, Verdict
from tests.conftest import run_cli

PACKS = load_packs()
SYSTEMS = ("sglang", "vllm", "torch", None)  # None: a log no system was recognised in
HEADER = '[pack]\nname = "user"\nschema = 1\nsystems = ["sglang"]\n'
# SGLang's own lines: every rank began its capture, none ended it; the log ends there
CAPTURE_HANG = (
    "[2025-06-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.55 GB\n"
    "[2025-06-01 10:00:00 TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=14.55 GB\n"
)


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_verdict_in_every_phase_of_every_system_has_steps_or_says_why_not(system: str | None) -> None:
    # GIVEN the shipped packs WHEN asked for each verdict in each phase (and in none)
    for verdict in Verdict:
        for phase in (*Phase, None):
            entry = PACKS.next_steps(verdict, phase, system)
            # THEN an entry answers, with steps or with the reason there are none, and names its source
            assert entry is not None, (system, verdict, phase)
            assert bool(entry.steps) != bool(entry.why_none), entry.id
            assert entry.source, entry.id


def test_success_says_there_is_nothing_to_do() -> None:
    assert PACKS.next_steps(Verdict.READY, Phase.READY, "sglang").why_none == "the server is ready: nothing to do"  # type: ignore[union-attr]
    assert PACKS.next_steps(Verdict.FINISHED, None, "torch").why_none == "the job ran to its end: nothing to do"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("verdict", "phase", "system", "cause", "expected"),
    [
        # the cause named beats the system and the phase: an OOM in SGLang's capture
        (Verdict.CRASHED, Phase.CUDA_GRAPH, "sglang", "cuda.oom.out_of_memory", "sglang.next.cuda_graph.oom"),
        # another crash in the capture: nothing says more than the generic pack
        (Verdict.CRASHED, Phase.CUDA_GRAPH, "sglang", "cuda.illegal_memory_access", "python.next.crashed"),
        (Verdict.STALLED, Phase.CUDA_GRAPH, "sglang", None, "sglang.next.cuda_graph.stalled"),
        (Verdict.STALLED, Phase.CUDA_GRAPH, "vllm", None, "vllm.next.cuda_graph.stalled"),
        (Verdict.STALLED, Phase.CUDA_GRAPH, "torch", None, "python.next.stalled"),
        (Verdict.CRASHED, Phase.KV_CACHE, "vllm", "vllm.kv_cache.no_memory", "vllm.next.kv_cache.no_memory"),
        (
            Verdict.CRASHED,
            Phase.KV_CACHE,
            "sglang",
            "sglang.kv_cache.not_enough_memory_error",
            "sglang.next.kv_cache.not_enough",
        ),
        # torch's watchdog in any system's log: NCCL_DEBUG and the flight recorder
        (Verdict.TIMEOUT, Phase.SERVING, "vllm", "torch.watchdog.collective_timeout", "nccl.next.collective_timeout"),
        (Verdict.TIMEOUT, Phase.SERVING, "sglang", "sglang.fail.watchdog_timeout", "sglang.next.watchdog"),
        (Verdict.STALLED, Phase.DIST_INIT, "torch", None, "nccl.next.dist_init_stalled"),
        (Verdict.STALLED, Phase.DIST_INIT, "sglang", None, "sglang.next.dist_init.stalled"),
    ],
)
def test_the_most_specific_entry_answers(
    verdict: Verdict, phase: Phase, system: str, cause: str | None, expected: str
) -> None:
    entry = PACKS.next_steps(verdict, phase, system, cause)
    assert entry is not None and entry.id == expected


def test_the_shipped_steps_name_the_servers_own_flags_and_variables() -> None:
    # GIVEN the entries the issue asks for by name WHEN read THEN each names its server's flag or variable
    def steps(entry_id: str) -> str:
        return " ".join(next(e for p in PACKS.packs for e in p.next_steps if e.id == entry_id).steps)

    assert "`--mem-fraction-static`" in steps("sglang.next.cuda_graph.oom")
    assert "`--cuda-graph-max-bs 8`" in steps("sglang.next.cuda_graph.stalled")
    assert "`--disable-cuda-graph`" in steps("sglang.next.cuda_graph.stalled")
    assert "`--gpu-memory-utilization`" in steps("vllm.next.cuda_graph.oom")
    assert "`--enforce-eager`" in steps("vllm.next.cuda_graph.stalled")
    assert "`NCCL_DEBUG=INFO`" in steps("nccl.next.collective_timeout")
    assert "`TORCH_NCCL_TRACE_BUFFER_SIZE=2000`" in steps("nccl.next.collective_timeout")


def test_a_report_carries_its_steps_with_the_log_and_rank_filled_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an SGLang log that ends inside its capture
    monkeypatch.chdir(tmp_path)
    Path("server.log").write_text(CAPTURE_HANG)
    # WHEN analysed as JSON, as a table and as markdown
    document = json.loads(run_cli("analyze", "--post-mortem", "server.log", "--format", "json").stdout)
    table = run_cli("analyze", "--post-mortem", "server.log").stdout.splitlines()
    markdown = run_cli("analyze", "--post-mortem", "server.log", "--format", "markdown").stdout.splitlines()
    # THEN SGLang's capture entry, in each format, a line a step
    assert document["next"]["id"] == "sglang.next.cuda_graph.stalled"
    assert document["next"]["versions"] == "SGLang 0.5.10"
    assert document["next"]["why_none"] is None
    steps = document["next"]["steps"]
    assert steps[1] == "relaunch with a smaller capture range to confirm: `--cuda-graph-max-bs 8`"
    assert [line for line in table if line.startswith("Next: ")] == [f"Next: {step}" for step in steps]
    assert [line for line in markdown if line.startswith("- **Next:** ")] == [f"- **Next:** {step}" for step in steps]


def test_placeholders_take_the_logs_as_given_and_the_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a log with a space in its name, stalled in weight loading (the generic entry names {log} and {rank})
    monkeypatch.chdir(tmp_path)
    Path("my server.log").write_text(
        "[2025-06-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"
        "[2025-06-01 10:00:00 TP1] Load weight begin. avail mem=78.00 GB\n"
    )
    document = json.loads(run_cli("analyze", "--post-mortem", "my server.log", "--format", "json").stdout)
    assert document["next"]["id"] == "python.next.stalled"
    assert document["next"]["steps"][1] == (
        f"read the last lines of the rank behind: `logphase analyze 'my server.log' --rank "
        f"{document['root_cause']['rank']} --tail 20`"
    )


def test_a_users_pack_answers_where_it_is_more_specific(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a user's pack whose entry names the system, the phase and the verdict (data, no code)
    monkeypatch.chdir(tmp_path)
    Path("server.log").write_text(CAPTURE_HANG)
    Path("mine.toml").write_text(
        HEADER.replace('name = "user"', 'name = "site"')
        + '[[next]]\nid = "site.next.capture"\nverdicts = ["stalled"]\nphases = ["cuda_graph"]\n'
        + 'causes = "^sglang\\\\."\nsteps = ["page the on-call: capture hung on {rank}"]\nsource = "our runbook"\n'
    )
    document = json.loads(
        run_cli("analyze", "--post-mortem", "server.log", "--patterns", "mine.toml", "--format", "json").stdout
    )
    # THEN it answers (it names a cause: the stall's last progress, an SGLang rule)
    assert document["next"]["steps"] == [f"page the on-call: capture hung on {document['root_cause']['rank']}"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'verdicts = ["staled"]\nsteps = ["x"]\n',
            "[[next]] user.next: unknown verdict 'staled' (did you mean 'stalled'?)",
        ),
        (
            'verdicts = ["stalled"]\nphases = ["capture"]\nsteps = ["x"]\n',
            "[[next]] user.next: unknown phase 'capture'",
        ),
        (
            'verdicts = ["stalled"]\nsteps = ["x"]\nwhy_none = "y"\n',
            "[[next]] user.next: give 'steps' (each a non-empty string) or 'why_none', one of the two",
        ),
        ('verdicts = ["stalled"]\n', "[[next]] user.next: give 'steps' (each a non-empty string) or 'why_none'"),
        ('verdicts = ["stalled"]\nsteps = [" "]\n', "[[next]] user.next: give 'steps'"),
        ('verdicts = []\nsteps = ["x"]\n', "[[next]] user.next: 'verdicts' must be a non-empty list of strings"),
    ],
)
def test_a_bad_next_entry_is_refused_with_its_place(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "user.toml"
    path.write_text(HEADER + '[[next]]\nid = "user.next"\nsource = "s"\n' + body)
    with pytest.raises(PackError) as caught:
        load_packs([path], builtin=False)
    assert caught.value.message.startswith(f"{path}: {message}")
    assert caught.value.hint
