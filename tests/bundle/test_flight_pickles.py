"""Flight-recorder pickles in a bundle: secrets planted by the class generator in a dump's frames, process
group names and env-like entries are masked in place at their byte length (the pickle still reads), a
dump with nothing to redact stays byte for byte, and what cannot be masked in place becomes redacted JSON."""

from __future__ import annotations

import gzip
import json
import pickle
import random
import tarfile
from pathlib import Path
from typing import Any

import pytest

from logphase.bundle.pickles import MASK, redact_dump, secret_values
from logphase.bundle.redact import ASSIGNMENT, SECRET_CLASSES, Redactor
from logphase.flight_recorder import judge_dumps, load_plain, parse_dump
from tests.conftest import FIXTURES, run_cli
from tests.hostile.test_redaction_classes import LOG, SECRET_KEYS, planted

REAL_DUMPS = sorted((FIXTURES / "real").rglob("*fr-rank-*"))


def entry(seq: int, frame_name: str, filename: str) -> dict[str, Any]:
    return {
        "collective_seq_id": seq,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "profiling_name": "nccl:all_reduce",
        "state": "completed",
        "input_sizes": [[4]],
        "frames": [{"name": frame_name, "filename": filename, "line": 7}],
        "is_p2p": False,
    }


def planted_dump(rng: random.Random, protocol: int = 2) -> tuple[bytes, list[str]]:
    """A dump holding one secret of each class in frames (as a frame's name and in its file's path), in
    process groups' descriptions, and env-like name/value entries; and the secret values."""
    lines, values = planted(rng, 1)
    entries = [entry(n + 1, line, f"/home/alice/{n}/{line}.py") for n, line in enumerate(lines)]
    env_values = [f"v{rng.randrange(10**9)}-{rng.randrange(10**9)}" for _ in range(3)]
    document = {
        "version": "2.10",
        "pg_config": {str(n): {"name": str(n), "desc": line, "ranks": "[0, 1]"} for n, line in enumerate(lines)},
        "pg_status": {"0": {"last_enqueued_collective": len(lines), "last_completed_collective": len(lines)}},
        "entries": entries,
        "env": [{"name": rng.choice(SECRET_KEYS), "value": value} for value in env_values[:2]],
        "credentials": {"user": env_values[2], "retries": 3},
    }
    return pickle.dumps(document, protocol=protocol), [*values, *env_values, "alice"]


def _strings(document: Any) -> str:
    return json.dumps(document, default=repr)


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("seed", range(40))
def test_no_planted_secret_survives_a_dump(seed: int, protocol: int) -> None:
    # GIVEN a dump holding a secret of every class in frames, group names and env-like entries
    data, values = planted_dump(random.Random(seed), protocol)
    redactor = Redactor()
    # WHEN redacted
    dump = redact_dump(data, "fr-rank-0", redactor)
    # THEN it stays a pickle of the same length that the reader reads, with no secret and no user name left
    assert (dump.suffix, dump.note) == ("", None)
    assert dump.data is not None and len(dump.data) == len(data)
    document = load_plain(dump.data, "fr-rank-0")
    assert [value for value in values if value in _strings(document) or value.encode() in dump.data] == []
    # AND the dump is still judged as before, every class was counted, the env values masked whole
    assert judge_dumps([parse_dump(dump.data, "r0")]).summary == judge_dumps([parse_dump(data, "r0")]).summary
    assert set(redactor.secret_classes()) == set(SECRET_CLASSES)
    assert [item["value"] for item in document["env"]] == [MASK * len(v) for v in values[-4:-2]]
    assert document["credentials"] == {"user": MASK * len(values[-2]), "retries": 3}


@pytest.mark.parametrize("path", REAL_DUMPS, ids=lambda path: path.name)
def test_a_dump_without_secrets_stays_byte_for_byte(path: Path) -> None:
    # GIVEN a real dump (paths under /work and /opt, no user's home, no credential) WHEN redacted
    data = path.read_bytes()
    redactor = Redactor()
    dump = redact_dump(data, str(path), redactor)
    # THEN its bytes are unchanged and nothing was counted
    assert (dump.data, dump.masked, dump.note) == (data, 0, None)
    assert redactor.summary() == {}


def test_a_protocol_0_dump_with_a_secret_becomes_redacted_json() -> None:
    # GIVEN a protocol-0 dump (escaped, newline-ended strings: no length to keep) holding a password
    data = pickle.dumps({"entries": [], "pg_config": {"0": {"desc": "PGPASSWORD=pa55-w0rd!x"}}}, protocol=0)
    # WHEN redacted
    dump = redact_dump(data, "fr-rank-0", Redactor())
    # THEN the bundle gets its decoded form as JSON, redacted, with a note saying why
    assert dump.suffix == ".json" and dump.data is not None
    assert json.loads(dump.data) == {"entries": [], "pg_config": {"0": {"desc": "PGPASSWORD=[secret-1]"}}}
    assert dump.note is not None and "protocol 0" in dump.note


def test_bytes_after_the_pickle_are_not_carried() -> None:
    # GIVEN a dump with text appended after its STOP (the unpickler never reads it)
    data = pickle.dumps({"entries": [], "version": "2.10"}, protocol=2) + b"\nHF_TOKEN=s3cr3t-appended\n"
    # WHEN redacted THEN the bundle gets the decoded form, without what followed the pickle
    dump = redact_dump(data, "fr-rank-0", Redactor())
    assert dump.suffix == ".json" and dump.data is not None
    assert json.loads(dump.data) == {"entries": [], "version": "2.10"}
    assert b"s3cr3t" not in dump.data


def test_a_dump_past_the_stack_is_left_out_with_a_note() -> None:
    # GIVEN a protocol-0 dump (not masked in place) nested far deeper than Python's stack, holding a secret
    data = b"(l" * 5001 + b"VHF_TOKEN=s3cr3t-deep-value\n" + b"a" * 5001 + b"."
    assert isinstance(load_plain(data, "x"), list)
    # WHEN redacted THEN the bundle carries nothing of it, and says so
    dump = redact_dump(data, "fr-rank-0", Redactor())
    assert dump.data is None and dump.note is not None and "left out" in dump.note


def test_structure_names_the_secret_values() -> None:
    # GIVEN values under secret keys, in name/value entries, and under a secret key's object
    document = {
        "HF_TOKEN": "abc12345",
        "api_key": None,
        "env": [{"name": "PGPASSWORD", "value": "pw-1"}, {"name": "PATH", "value": "/usr/bin"}],
        "frames": [{"name": "get_token", "filename": "auth.py", "line": 3}],
        "credentials": {"user": "bob", "nested": ["x1", 2]},
        "tokens_per_second": "12.5",
    }
    # WHEN read THEN exactly the credentials' values are named
    assert secret_values(document) == {"abc12345", "pw-1", "bob", "x1"}


def _bundled(folder: Path) -> dict[str, bytes]:
    with tarfile.open(folder / "b.tar.gz") as archive:
        files = {member.name: archive.extractfile(member) for member in archive.getmembers()}
        return {name.split("/", 1)[1]: handle.read() for name, handle in files.items() if handle is not None}


@pytest.mark.parametrize("compressed", [False, True])
def test_a_bundle_carries_the_dump_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compressed: bool) -> None:
    # GIVEN a log and a (gzipped) dump holding a secret of every class
    monkeypatch.chdir(tmp_path)
    data, values = planted_dump(random.Random(f"bundle-{compressed}"))
    name = "fr-rank-0.gz" if compressed else "fr-rank-0"
    (tmp_path / name).write_bytes(gzip.compress(data) if compressed else data)
    (tmp_path / "server.log").write_text(LOG)
    # WHEN bundled
    result = run_cli("bundle", "server.log", name, "-o", "b.tar.gz", "--post-mortem")
    assert result.exit_code == 0, result.output
    files = _bundled(tmp_path)
    # THEN the dump is in it decompressed, a pickle of its length, and no secret is in any file
    assert len(files["dumps/fr-rank-0"]) == len(data)
    load_plain(files["dumps/fr-rank-0"], "x")
    assert [(value, n) for value in values for n, content in files.items() if value.encode() in content] == []
    # AND the README lists it as masked in place and counts the assignments it held
    readme = files["README.md"].decode()
    assert "| dumps/fr-rank-0 |" in readme and "redacted in place;" in readme
    row = next(line for line in readme.splitlines() if line.startswith(f"| {ASSIGNMENT} |"))
    assert int(row.split("|")[2]) >= 4, row
