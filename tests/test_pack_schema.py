"""Strict pack loading: every key of every table is checked against one schema, which FORMAT.md
documents key by key; packs carry the system knowledge (server arguments, which systems are jobs)."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from logphase.baselines.fingerprint import Fingerprint, fingerprint_of_lines
from logphase.errors import PackError
from logphase.logs.matcher import Event
from logphase.logs.reader import Line
from logphase.logs.timeline import TimelineBuilder
from logphase.packs import Rule, load_packs, parse_pack, shipped_packs
from logphase.packs.schema import TABLES, render_reference
from logphase.watch.ingest import Ingest
from tests.conftest import run_cli

FORMAT_MD = Path(__file__).resolve().parent.parent / "patterns" / "FORMAT.md"
HEADER = '[pack]\nname = "user"\nschema = 1\nsystems = []\n'
RULE = """
[[rule]]
id = "user.ready"
phase = "ready"
kind = "ready"
regex = '^All systems go$'
examples = ["All systems go"]
counter_examples = ["All systems stop"]
"""
PREFIX = """
[[prefix]]
id = "user.prefix"
regex = '^(?P<ts>\\d\\d:\\d\\d:\\d\\d) '
time_formats = ["%H:%M:%S"]
examples = ["12:00:00 x"]
"""


def write(directory: Path, text: str, name: str = "user.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> tuple[Path, PackError]:
    path = write(tmp_path, text)
    with pytest.raises(PackError) as caught:
        load_packs([path], builtin=False)
    return path, caught.value


def test_format_md_documents_every_key_of_every_table_as_the_schema_has_it() -> None:
    # GIVEN FORMAT.md's key reference and the schema the loader checks packs against
    text = FORMAT_MD.read_text()
    begin = text.index("<!-- generated from logphase/packs/schema.py")
    section = text[text.index("\n", begin) + 1 : text.index("<!-- end of the generated key reference -->")]
    # THEN the reference is the schema's, word for word (regenerate it with render_reference())
    assert section == render_reference()
    # AND every key of every table has its row
    for table in TABLES:
        for key in table.keys:
            assert f"| `{key.name}` | {key.type.name}" in section, (table.title, key.name)


def test_every_toml_example_in_format_md_is_a_valid_pack() -> None:
    # GIVEN each ```toml block of FORMAT.md (fragments get a one-system [pack] header)
    blocks = re.findall(r"```toml\n(.*?)```", FORMAT_MD.read_text(), re.DOTALL)
    assert len(blocks) == 6
    for index, block in enumerate(blocks):
        header = HEADER.replace("systems = []", 'systems = ["demo"]')
        data = tomllib.loads(block if block.startswith("[pack]") else header + block)
        # WHEN parsed THEN the schema accepts it
        pack = parse_pack(data, f"FORMAT.md block {index + 1}")
        assert pack.rules or pack.signatures or pack.anchors or pack.server_args or pack.ignores or pack.next_steps


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (RULE + "priorty = 60\n", "[[rule]] user.ready: unknown key 'priorty' (did you mean 'priority'?)"),
        (
            RULE.replace("counter_examples", "counter_exmaples"),
            "[[rule]] user.ready: unknown key 'counter_exmaples' (did you mean 'counter_examples'?)",
        ),
        (RULE + 'priority = "high"\n', "[[rule]] user.ready: 'priority' must be an integer, not 'high'"),
        (RULE + "priority = true\n", "[[rule]] user.ready: 'priority' must be an integer, not True"),
        (RULE + "draft = 1\n", "[[rule]] user.ready: 'draft' must be a boolean, not 1"),
        (
            RULE.replace('kind = "ready"', 'kind = "redy"'),
            "[[rule]] user.ready: unknown kind 'redy' (did you mean 'ready'?)",
        ),
        (
            RULE.replace('phase = "ready"', 'phase = "wieght_load"'),
            "[[rule]] user.ready: unknown phase 'wieght_load' (did you mean 'weight_load'?)",
        ),
        (RULE.replace('id = "user.ready"\n', ""), "[[rule]] #1: 'id' is missing"),
        (RULE.replace("'^All systems go$'", "''"), "[[rule]] user.ready: 'regex' must be a non-empty string, not ''"),
        (
            PREFIX.replace('["%H:%M:%S"]', "[1]"),
            "[[prefix]] user.prefix: 'time_formats' must be a list of strings, not [1]",
        ),
        (RULE.replace("[[rule]]", "[[rules]]"), "unknown table 'rules' (did you mean 'rule'?)"),
        (
            "[pack.budgets]\nwieght_load = 60\n",
            "[pack.budgets]: unknown phase 'wieght_load' (did you mean 'weight_load'?)",
        ),
        (
            "[pack.budgets]\nweight_load = -1\n",
            "[pack.budgets]: 'weight_load' must be a positive number of seconds, not -1",
        ),
        ("[[anchor]]\nid = \"a\"\nregex = 'x'\nexamples = ['x']\n", "[[anchor]] a: 'phase' is missing"),
        (
            '[[anchor]]\nid = "a"\nphase = "launch"\nreached = "dist_init"\nregex = \'x\'\nexamples = [\'x\']\n',
            "[[anchor]] a: 'phase' and 'reached' both given",
        ),
    ],
)
def test_a_defect_is_named_with_file_table_id_key_and_nearest_key(tmp_path: Path, body: str, message: str) -> None:
    # GIVEN a pack with one defect WHEN loaded THEN one PackError names file, table/id, key, suggestion
    path, error = refused(tmp_path, HEADER + body)
    assert error.message == f"{path}: {message}"
    assert error.hint


@pytest.mark.parametrize(
    "body",
    [
        RULE + 'closes_from = "kv_cache"\n',  # a `ready`, not an end
        RULE.replace('kind = "ready"', 'kind = "end"').replace('phase = "ready"', 'phase = "kv_cache"')
        + 'closes_from = "cuda_graph"\n',  # the open step would come after the line's own phase
    ],
    ids=["not-an-end", "from-after-phase"],
)
def test_closes_from_needs_an_end_of_a_later_phase(tmp_path: Path, body: str) -> None:
    # GIVEN a rule whose `closes_from` cannot close a step up to its own phase WHEN loaded THEN refused, named
    path, error = refused(tmp_path, HEADER + body)
    assert error.message == f'{path}: [[rule]] user.ready: closes_from needs kind = "end" and a later `phase`'


@pytest.mark.parametrize(
    "body",
    [
        RULE + "engine_work = true\n",  # a ready line is the server's own, not the engine's work
        RULE.replace('phase = "ready"\nkind = "ready"', 'phase = "kv_cache"\nkind = "mark"') + "engine_work = true\n",
    ],
    ids=["not-a-mark", "not-serving"],
)
def test_engine_work_needs_a_serving_mark_or_progress(tmp_path: Path, body: str) -> None:
    # GIVEN a rule called the engine's own work that is no serving step's mark or progress WHEN loaded THEN refused
    path, error = refused(tmp_path, HEADER + body)
    assert error.message == (
        f"{path}: [[rule]] user.ready: engine_work needs"
        ' kind = "mark" or "progress" and phase (or after_ready) "serving"'
    )


def test_ignored_block_needs_a_rule_that_opens_a_block(tmp_path: Path) -> None:
    # GIVEN a rule marked `ignored_block` that opens no block WHEN loaded THEN refused, named
    path, error = refused(tmp_path, HEADER + RULE.replace("kind = ", "ignored_block = true\nkind = "))
    assert error.message == f"{path}: [[rule]] user.ready: ignored_block needs opens_block = true"


def test_header_only_needs_a_rule_that_opens_a_block(tmp_path: Path) -> None:
    # GIVEN a rule marked `header_only` that opens no block WHEN loaded THEN refused, named
    path, error = refused(tmp_path, HEADER + RULE.replace("kind = ", "header_only = true\nkind = "))
    assert error.message == f"{path}: [[rule]] user.ready: header_only needs opens_block = true"


def test_a_job_pack_must_name_its_systems(tmp_path: Path) -> None:
    path, error = refused(tmp_path, HEADER + "job = true\n" + RULE)
    assert error.message == f"{path}: [pack]: job = true needs the systems that are jobs"


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ('"APIServer"', "[pack]: 'process_tags' must be a list of strings, not 'APIServer'"),
        ('["API Server"]', "[pack]: process_tags: 'API Server' is not a process name"),
        ('["(APIServer"]', "[pack]: process_tags: '(APIServer' is not a process name"),
    ],
)
def test_process_tags_must_be_names_as_a_tag_opens_with_them(tmp_path: Path, tags: str, message: str) -> None:
    # GIVEN a pack whose process_tags is not a list of process names WHEN loaded THEN it is refused
    path, error = refused(tmp_path, HEADER + f"process_tags = {tags}\n")
    assert error.message == f"{path}: {message}"
    assert error.hint


def test_server_args_of_a_generic_pack_must_name_their_system(tmp_path: Path) -> None:
    body = "[[server_args]]\nid = \"user.args\"\nregex = 'args: '\nexamples = ['args: model=m']\n"
    path, error = refused(tmp_path, HEADER + body)
    assert error.message == f"{path}: [[server_args]] user.args: 'system' is missing"


def test_a_misspelled_pack_key_is_refused(tmp_path: Path) -> None:
    path, error = refused(tmp_path, '[pack]\nname = "user"\nschema = 1\nsytems = []\n' + RULE)
    assert error.message == f"{path}: [pack]: unknown key 'sytems' (did you mean 'systems'?)"
    assert error.hint.startswith("the keys of [pack]: name, schema, systems, implies, job")


def test_an_unknown_key_without_a_near_one_has_no_suggestion(tmp_path: Path) -> None:
    path, error = refused(tmp_path, HEADER + RULE + "colour = 'blue'\n")
    assert error.message == f"{path}: [[rule]] user.ready: unknown key 'colour'"


def test_two_packs_of_one_name_are_refused_naming_both_files(tmp_path: Path) -> None:
    # GIVEN two files that both say [pack] name = "user"
    first = write(tmp_path, HEADER + RULE, "a.toml")
    second = write(tmp_path, HEADER + RULE.replace("user.ready", "user.other"), "b.toml")
    # WHEN loaded together THEN the second is refused, naming the first
    with pytest.raises(PackError) as caught:
        load_packs([first, second], builtin=False)
    assert caught.value.message == f"{second}: pack name 'user' is taken by {first}"


def test_a_user_pack_named_like_a_shipped_one_is_refused(tmp_path: Path) -> None:
    clash = write(tmp_path, HEADER.replace('"user"', '"sglang"') + RULE)
    with pytest.raises(PackError, match=r"pack name 'sglang' is taken by .*patterns/sglang\.toml$"):
        load_packs([clash])


def test_patterns_test_of_a_bad_pack_exits_3_with_the_error(tmp_path: Path) -> None:
    # GIVEN a pack with a misspelled key WHEN `logphase patterns test BAD.toml`
    bad = write(tmp_path, HEADER + RULE + "priorty = 60\n")
    result = run_cli("patterns", "test", str(bad))
    # THEN exit 3, and the one-line error names it
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (
        f"logphase: error: {bad}: [[rule]] user.ready: unknown key 'priorty' (did you mean 'priority'?)"
    )


def test_a_bad_pack_in_the_user_pack_dir_stops_every_command_with_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN $XDG_CONFIG_HOME/logphase/patterns/user.toml with a wrong type
    user_dir = tmp_path / "config" / "logphase" / "patterns"
    user_dir.mkdir(parents=True)
    bad = write(user_dir, HEADER + RULE + 'priority = "high"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    log = write(tmp_path, "All systems go\n", "x.log")
    # WHEN analyze runs THEN it refuses with exit 3 instead of a traceback
    result = run_cli("analyze", str(log))
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (
        f"logphase: error: {bad}: [[rule]] user.ready: 'priority' must be an integer, not 'high'"
    )


def test_patterns_test_of_a_shipped_pack_by_name_checks_it_once() -> None:
    result = run_cli("patterns", "test", "torch")
    assert result.exit_code == 0, result.output
    # (a COST line may come before the summary: a module entry of the pack whose lines are each read)
    assert result.output.splitlines()[-1].startswith("1 packs, ")


def test_the_shipped_packs_say_torch_is_a_job_and_sglang_tgi_vllm_print_server_args() -> None:
    packs = shipped_packs()
    # Ray too: its lines mostly sit inside vLLM / SGLang / LMDeploy logs (patterns/ray.toml, `job = true`); and the
    # nccl-tests benchmarks and LLM benchmark clients, which end (patterns/nccl_tests.toml, patterns/bench.toml)
    assert packs.job_systems == frozenset({"torch", "ray", "nccl-tests", "bench"})
    assert [(f.id, f.system, f.repeats) for f in packs.server_args] == [
        ("sglang.server_args", "sglang", False),
        ("tgi.server_args", "tgi", False),
        ("vllm.server_args", "vllm", True),
    ]


def test_a_job_system_names_a_log_only_without_server_lines() -> None:
    # GIVEN a timeline builder told that "trainer" is a job, fed events of both systems
    packs = load_packs(check_examples=False)
    torch_rule = next(r for r in packs.rules if r.system == "torch")
    sglang_rule = next(r for r in packs.rules if r.system == "sglang")

    def event(rule: Rule, line: int) -> Event:
        return Event(source=0, line=line, time=None, rank=None, rule=rule, captures={}, text="x", message="x")

    builder = TimelineBuilder(job_systems=frozenset({"sglang"}))
    for line, rule in enumerate([torch_rule, torch_rule, sglang_rule]):
        builder.add(event(rule, line))
    timeline = builder.finish()
    # THEN the server (here torch, since the builder was told sglang is a job) names the log
    assert (timeline.system, timeline.system_is_server) == ("torch", True)


def test_a_user_pack_teaches_the_fingerprint_a_new_servers_arguments(tmp_path: Path) -> None:
    # GIVEN a pack for a server that prints `launch config: ckpt=/m/llama tp=4 draft={algo: medusa}`
    pack = write(
        tmp_path,
        '[pack]\nname = "myserve"\nschema = 1\nsystems = ["myserve"]\n'
        "[[server_args]]\n"
        "id = \"myserve.args\"\nregex = '^launch config: '\n"
        'model_path = ["ckpt"]\ntp_size = ["tp"]\nspeculative_algorithm = ["draft.algo"]\n'
        'examples = ["launch config: ckpt=/m tp=1"]\n',
    )
    formats = load_packs([pack], builtin=False).server_args
    # WHEN its head is read with the pack's formats
    found = fingerprint_of_lines(["launch config: ckpt=/m/llama tp=4 draft={algo: medusa}"], formats=formats)
    # THEN the facts come from the keys the pack names; unprinted sizes are 1
    assert found == Fingerprint(
        system="myserve",
        model_path="/m/llama",
        tp_size=4,
        pp_size=1,
        dp_size=1,
        ep_size=1,
        speculative_algorithm="MEDUSA",
    )


def test_patterns_list_shows_job_packs_and_their_server_args_formats() -> None:
    lines = run_cli("patterns", "list").output.splitlines()
    torch_line = next(line for line in lines if line.startswith("torch "))
    vllm_line = next(line for line in lines if line.startswith("vllm "))
    assert torch_line.startswith("torch (torch, job): ")
    assert vllm_line.startswith("vllm (vllm): ") and " 1 server_args — " in vllm_line


def test_runs_add_and_watch_use_a_user_packs_server_args(tmp_path: Path) -> None:
    # GIVEN the same user pack, and a log of that server with one phase line a rule of the pack knows
    pack = write(
        tmp_path,
        '[pack]\nname = "myserve"\nschema = 1\nsystems = ["myserve"]\n'
        "[[server_args]]\n"
        "id = \"myserve.args\"\nregex = '^launch config: '\n"
        'model_path = ["ckpt"]\ntp_size = ["tp"]\n'
        'examples = ["launch config: ckpt=/m tp=1"]\n'
        "[[rule]]\n"
        'id = "myserve.weights"\nphase = "weight_load"\nkind = "begin"\nregex = \'^loading weights$\'\n'
        'examples = ["loading weights"]\ncounter_examples = ["loading weights done"]\n',
    )
    log = tmp_path / "serve.log"
    log.write_text("launch config: ckpt=/m/llama tp=4\nloading weights\n")
    db = tmp_path / "runs.db"
    # WHEN the log is recorded with the pack
    assert run_cli("runs", "add", str(log), "--db", str(db), "--patterns", str(pack)).exit_code == 0
    # THEN the recorded setup is the one the pack's server_args read
    (run,) = json.loads(run_cli("runs", "list", "--db", str(db), "--format", "json").stdout)["runs"]
    assert (run["fingerprint"]["model_path"], run["fingerprint"]["tp_size"]) == ("/m/llama", 4)
    # AND watch's ingest reads it the same way
    ingest = Ingest(load_packs([pack]), reference=datetime(2026, 1, 1))
    ingest.feed([Line(1, "launch config: ckpt=/m/llama tp=4", 0)], arrived=0.0)
    assert ingest.fingerprint.fingerprint().tp_size == 4
