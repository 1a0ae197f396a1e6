"""Redaction by class: secrets of every class, planted by a generator in every form a line can hold
them (env, YAML, JSON, escaped JSON, CLI, argv lists, URLs, headers, PEM blocks) and in every input a
bundle takes (plain, .gz, a tar member, CRLF, ANSI colours, a cut excerpt, a --from dump, a file's
name), never survive; ordinary log words that look like them stay."""

from __future__ import annotations

import gzip
import io
import json
import random
import string
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.bundle.redact import (
    API_TOKEN,
    ASSIGNMENT,
    BEARER_TOKEN,
    PRIVATE_KEY,
    SECRET_CLASSES,
    URL_CREDENTIALS,
    Redactor,
)
from tests.conftest import FIXTURES, run_cli

LOG = (FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log").read_text()
ALNUM = string.ascii_letters + string.digits
# Characters a password may hold that no form below uses as a delimiter
PASSWORD_CHARACTERS = ALNUM + "!#%*+=~^"

# Keys of the assignment class, spelt as env, config and code spell them
SECRET_KEYS = [
    "PGPASSWORD",
    "MYSQL_PWD",
    "DB_PASSWD",
    "db_password",
    "dbPassword",
    "AWS_SECRET_ACCESS_KEY",
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",
    "MY_APP_SECRET",
    "client_secret",
    "SECRETKEY",
    "APIKEY",
    "apiKey",
    "x-api-key",
    "api_key",
    "auth_token",
    "WANDB_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS_JSON",
    "keystore_passphrase",
]
ASSIGNMENT_FORMS: list[Callable[[str, str], str]] = [
    lambda key, value: f"{key}={value}",
    lambda key, value: f"export {key}='{value}'",
    lambda key, value: f'+ export {key}="{value}"',
    lambda key, value: f"{key}: {value}",
    lambda key, value: f'{{"{key}": "{value}", "port": 30000}}',
    lambda key, value: f"{{'{key}': '{value}'}}",
    lambda key, value: f'msg="{{\\"{key}\\": \\"{value}\\"}}"',
    lambda key, value: f"Namespace(model='x', {key}='{value}', port=1)",
    lambda key, value: f'"Env": ["PATH=/usr/bin", "{key}={value}"]',
    lambda key, value: f"https://api.example.com/v1?{key}={value}&stream=true",
    lambda key, value: f"--{key.lower().replace('_', '-')} {value} --port 30000",
    lambda key, value: f"--{key.lower().replace('_', '-')}={value} --tp 8",
    lambda key, value: f"['python', '-m', 'sglang.launch_server', '--{key.lower().replace('_', '-')}', '{value}']",
    # name/value entries: Kubernetes' env in JSON and YAML, py-spy's --locals
    lambda key, value: f'"env": [{{"name": "{key}", "value": "{value}"}}]',
    lambda key, value: f"      - name: {key}\n        value: {value}",
    lambda key, value: f'{{\n  "name": "{key}",\n  "addr": 140,\n  "arg": true,\n  "repr": "\'{value}\'"\n}}',
    # across lines: pretty-printed JSON with the value under its key, a structure under a secret key
    # (whatever its own keys), a name/value entry with its value first, YAML blocks
    lambda key, value: f'{{\n  "{key}":\n    "{value}",\n  "port": 30000\n}}',
    lambda key, value: f'{{\n  "{key}": {{\n    "id": "svc-7",\n    "data": "{value}"\n  }},\n  "port": 30000\n}}',
    lambda key, value: f'"config": {{\n  "{key}": [\n    "{value}"\n  ]\n}}',
    lambda key, value: f"{{'{key}': {{'id': 'svc-7', 'data': '{value}'}}, 'port': 30000}}",
    lambda key, value: f'"env": [\n  {{\n    "value": "{value}",\n    "name": "{key}"\n  }}\n]',
    lambda key, value: f'"env": [{{"name": "PATH", "value": "/bin"}}, {{"value": "{value}", "name": "{key}"}}]',
    lambda key, value: f"{key}:\n  id: svc-7\n  data: {value}\nport: 30000",
    lambda key, value: f"{key}: |\n  {value}\nport: 30000",
    lambda key, value: f"{key}:\n  - {value}\nport: 30000",
]
URL_SCHEMES = ["postgresql", "mysql", "redis", "rediss", "mongodb+srv", "amqp", "https", "jdbc:postgresql", "s3", "ftp"]


def _text(rng: random.Random, length: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _url(rng: random.Random) -> tuple[str, str]:
    password = _text(rng, rng.randint(10, 30), PASSWORD_CHARACTERS)
    user = rng.choice(["", "admin", "svc-" + _text(rng, 5).lower()])
    return f"connecting to {rng.choice(URL_SCHEMES)}://{user}:{password}@db-main:5432/app", password


def _assignment(rng: random.Random) -> tuple[str, str]:
    value = _text(rng, rng.randint(10, 40), PASSWORD_CHARACTERS.replace("=", ""))
    return rng.choice(ASSIGNMENT_FORMS)(rng.choice(SECRET_KEYS), value), value


def _bearer(rng: random.Random) -> tuple[str, str]:
    value = _text(rng, rng.randint(16, 60), ALNUM + "._-")
    form = rng.choice(
        [
            "Authorization: Bearer {}",
            "curl -H 'Authorization: Basic {}' http://x",
            "authorization: token {}",
            '"authorization": "Bearer {}"',
        ]
    )
    return form.format(value), value


def _api_token(rng: random.Random) -> tuple[str, str]:
    shapes: list[Callable[[], str]] = [
        lambda: "hf_" + _text(rng, 34),
        lambda: "sk-" + _text(rng, 48),
        lambda: "sk-proj-" + _text(rng, 40, ALNUM + "_-"),
        lambda: "AKIA" + _text(rng, 16, string.ascii_uppercase + string.digits),
        lambda: "ASIA" + _text(rng, 16, string.ascii_uppercase + string.digits),
        lambda: rng.choice(["ghp_", "gho_", "ghs_"]) + _text(rng, 36),
        lambda: "github_pat_" + _text(rng, 22) + "_" + _text(rng, 59),
        lambda: rng.choice(["xoxb-", "xoxp-"]) + f"{rng.randint(10**9, 10**10)}-" + _text(rng, 24),
    ]
    token = rng.choice(shapes)()
    return f"using credentials {token} for the download", token


def _private_key(rng: random.Random) -> tuple[str, str]:
    body = [_text(rng, 64, ALNUM + "+/") for _ in range(rng.randint(2, 8))]
    kind = rng.choice(["", "RSA ", "EC ", "OPENSSH "])
    if rng.random() < 0.5:  # a block of lines
        return "\n".join([f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----"]), body[-1]
    escaped = "\\n".join([f"-----BEGIN {kind}PRIVATE KEY-----", *body, f"-----END {kind}PRIVATE KEY-----"])
    return f'{{"type": "service_account", "private_key": "{escaped}\\n", "client_email": "a@b.iam"}}', body[-1]


GENERATORS: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    URL_CREDENTIALS: _url,
    ASSIGNMENT: _assignment,
    BEARER_TOKEN: _bearer,
    API_TOKEN: _api_token,
    PRIVATE_KEY: _private_key,
}


def planted(rng: random.Random, each: int) -> tuple[list[str], list[str]]:
    """`each` secrets of every class: (the lines holding them, the secret values)."""
    lines: list[str] = []
    values: list[str] = []
    for make in GENERATORS.values():
        for _ in range(each):
            line, value = make(rng)
            lines.append(line)
            values.append(value)
    rng.shuffle(lines)
    return lines, values


def test_every_class_has_a_generator() -> None:
    assert set(GENERATORS) == set(SECRET_CLASSES)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), prefix=st.sampled_from(["", "INFO ", "[TP3] ", "2026-01-01 10:00:00 ", "\t"]))
def test_no_planted_secret_survives_a_line(seed: int, prefix: str) -> None:
    # GIVEN one secret of each class, in a random form, after a log's prefix
    rng = random.Random(seed)
    lines, values = planted(rng, 1)
    redactor = Redactor()
    # WHEN redacted as a file
    out = redactor.text("\n".join(prefix + line for line in lines))
    # THEN no secret is left, every class was counted, and the lines are as many as before
    assert [value for value in values if value in out] == []
    assert set(redactor.secret_classes()) == set(SECRET_CLASSES)
    assert out.count("\n") == sum(line.count("\n") + 1 for line in lines) - 1


@pytest.mark.parametrize("user", ["svc-ukey5", "token-reader", "passwd", "apikey"])
def test_a_url_user_named_like_a_key_is_the_urls_user(user: str) -> None:
    # GIVEN a URL whose user name holds a secret key's word (hypothesis found `svc-ukey5`)
    redactor = Redactor()
    # WHEN redacted
    out = redactor.text(f"connecting to rediss://{user}:UD^5AjFc!mCMKG=ZD@db-main:5432/app")
    # THEN the password is gone, counted as the URL's credentials, and the user name stays
    assert "UD^5AjFc" not in out
    assert redactor.secret_classes() == {URL_CREDENTIALS: 1}
    assert f"rediss://{user}:[secret-1]@" in out


@pytest.mark.parametrize("prefix", ["", "2026-01-01 10:00:00 INFO ", "[TP3] "])
def test_every_assignment_form_with_every_key(prefix: str) -> None:
    # GIVEN each form of an assignment (one line or across lines) with each secret key, after a
    # prefix on its first line (as a logger prints a multi-line message) or on none
    value = "Zq7-vX93!kLm"
    survived = []
    for number, form in enumerate(ASSIGNMENT_FORMS):
        for key in SECRET_KEYS:
            redactor = Redactor()
            # WHEN redacted as a file
            out = redactor.text(prefix + form(key, value))
            # THEN the value is gone, and counted as an assignment
            if value in out or redactor.secret_classes().get(ASSIGNMENT, 0) < 1:
                survived.append((number, key, out))
    assert survived == []


def test_values_across_lines_are_redacted_as_they_are_laid_out() -> None:
    # GIVEN a pretty-printed JSON config with a credentials object, an env list and a YAML block
    text = (
        "{\n"
        '  "credentials": {\n'
        '    "user": "svc-train",\n'
        '    "retries": 3,\n'
        '    "scopes": ["read-all", null]\n'
        "  },\n"
        '  "env": [\n'
        '    {"value": "tok-99aa77", "name": "HF_TOKEN"},\n'
        '    {"value": "/usr/bin", "name": "PATH"}\n'
        "  ],\n"
        '  "port": 30000\n'
        "}\n"
        "db_password: >-\n"
        "  folded-secret-1\n"
        "port: 8000"
    )
    redactor = Redactor()
    # WHEN redacted
    out = redactor.text(text)
    # THEN every string under the secret key, the env entry's value and the block scalar are
    # placeholders; numbers, null, keys and the other entry stay; the lines are as many
    assert out == (
        "{\n"
        '  "credentials": {\n'
        '    "user": "[secret-1]",\n'
        '    "retries": 3,\n'
        '    "scopes": ["[secret-2]", null]\n'
        "  },\n"
        '  "env": [\n'
        '    {"value": "[secret-3]", "name": "HF_TOKEN"},\n'
        '    {"value": "/usr/bin", "name": "PATH"}\n'
        "  ],\n"
        '  "port": 30000\n'
        "}\n"
        "db_password: >-\n"
        "  [secret-4]\n"
        "port: 8000"
    )
    assert redactor.secret_classes() == {ASSIGNMENT: 4}


# --- the bundle: every input form ---------------------------------------------------------------


def _plain(folder: Path, lines: list[str]) -> list[str]:
    (folder / "server.log").write_text(LOG + "\n".join(lines) + "\n")
    return ["server.log"]


def _gz(folder: Path, lines: list[str]) -> list[str]:
    (folder / "server.log.gz").write_bytes(gzip.compress((LOG + "\n".join(lines) + "\n").encode()))
    return ["server.log.gz"]


def _tar(folder: Path, lines: list[str]) -> list[str]:
    data = (LOG + "\n".join(lines) + "\n").encode()
    with tarfile.open(folder / "logs.tar", "w") as archive:
        info = tarfile.TarInfo("node0/rank0.log")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return ["logs.tar"]


def _crlf(folder: Path, lines: list[str]) -> list[str]:
    (folder / "server.log").write_bytes((LOG + "\n".join(lines) + "\n").replace("\n", "\r\n").encode())
    return ["server.log"]


def _ansi(folder: Path, lines: list[str]) -> list[str]:
    coloured = [f"\x1b[32mINFO\x1b[0m \x1b[1m{line}\x1b[0m" for line in "\n".join(lines).split("\n")]
    (folder / "server.log").write_text(LOG + "\n".join(coloured) + "\n")
    return ["server.log"]


def _cut(folder: Path, lines: list[str]) -> list[str]:
    # a log cut to its head, tail and failures: secrets in the head, in the tail, and a key's block
    # whose BEGIN line falls in the cut while its body lines are kept
    filler = [f"[TP0] Decode batch. #running-req: 1, #token: {n}, token usage: 0.01" for n in range(6000)]
    block = ["-----BEGIN PRIVATE KEY-----", *(f"{'A' * 60}{n:04d}" for n in range(30)), "-----END PRIVATE KEY-----"]
    text = "\n".join([LOG.rstrip("\n"), *lines[: len(lines) // 2], *filler, *block, *lines[len(lines) // 2 :]])
    (folder / "big.log").write_text(text + "\n")
    return ["big.log", "--cut-over", "0.05"]


def _dump(folder: Path, lines: list[str]) -> list[str]:
    (folder / "server.log").write_text(LOG)
    frames = [
        {"name": line, "filename": f"/srv/{line}.py", "short_filename": "x.py", "line": 1, "locals": None}
        for line in lines
    ]
    dump = [{"pid": 7, "thread_id": 7, "thread_name": "MainThread", "active": True, "frames": frames}]
    (folder / "dump.json").write_text(json.dumps(dump, indent=1))
    return ["server.log", "--from", "dump.json"]


def _names(folder: Path, lines: list[str]) -> list[str]:
    # a file named after a token, and a folder named after an assignment
    token = next(line.split()[2] for line in lines if line.startswith("using credentials"))
    (folder / f"{token}.log").write_text(LOG + "\n".join(lines) + "\n")
    return [f"{token}.log"]


FORMS: dict[str, Callable[[Path, list[str]], list[str]]] = {
    "plain": _plain,
    "gz": _gz,
    "tar-member": _tar,
    "crlf": _crlf,
    "ansi": _ansi,
    "cut-excerpt": _cut,
    "from-dump": _dump,
    "file-name": _names,
}


def _bundled(folder: Path) -> dict[str, bytes]:
    with tarfile.open(folder / "b.tar.gz") as archive:
        files = {member.name: archive.extractfile(member) for member in archive.getmembers()}
        return {name: handle.read() for name, handle in files.items() if handle is not None}


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("seed", range(3))
def test_no_planted_secret_survives_a_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, seed: int
) -> None:
    # GIVEN three secrets of every class planted in one input form
    rng = random.Random(f"{form}-{seed}")
    lines, values = planted(rng, 3)
    if form == "cut-excerpt":
        values += [f"{'A' * 60}{n:04d}" for n in range(30)]
    monkeypatch.chdir(tmp_path)
    args = FORMS[form](tmp_path, lines)
    # WHEN bundled
    result = run_cli("bundle", *args, "-o", "b.tar.gz", "--post-mortem")
    assert result.exit_code == 0, result.output
    files = _bundled(tmp_path)
    # THEN no secret is in any file of it, nor in any file's name
    left = [(value, name) for value in values for name, data in files.items() if value.encode() in data]
    assert left == []
    assert [value for value in values for name in files if value in name] == []
    # AND the README counts every class it replaced
    readme = next(data for name, data in files.items() if name.endswith("/README.md")).decode()
    for name in SECRET_CLASSES:
        row = next(line for line in readme.splitlines() if line.startswith(f"| {name} |"))
        assert int(row.split("|")[2]) >= 1, row


# --- what must stay -----------------------------------------------------------------------------

ORDINARY = [
    "max_num_batched_tokens=8192, max_prefill_tokens=16384, max_total_tokens=320000",
    "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0",
    "gen throughput (token/s): 45.10, #queue-req: 0, tokens_per_second: 12.5",
    "the kv_cache key for block 12 is reused; kv_cache key=abc",
    "tokenizer='/models/meta-llama/Llama-3.1-8B-Instruct', tokenizer_mode='auto', skip_tokenizer_init=False",
    "tokenizer_path=/models/tok --tokenizer-path /models/tok --tokenizer /models/tok",
    "server_args=ServerArgs(api_key=None, hf_token=None, ssl_keyfile=None, ssl_certfile=None)",
    "stop_token_ids=[2, 32000], eos_token='</s>', pad_token='<pad>', eos_token_id=2",
    "KeyError: 'model.layers.0.self_attn.q_proj.weight'",
    "past_key_values=None, use_cache=True, key_states.shape=(1, 8, 128)",
    "ssl_keyfile='/etc/ssl/private/server.key' HF_TOKEN_PATH=/root/.cache/huggingface/token",
    "PWD=/workspace OLDPWD=/root keyword=attention monkey_patch=True",
    "--ssl-keyfile /etc/ssl/server.key --skip-tokenizer-init --tokenizer-mode auto",
    "RuntimeError: The size of tensor a (4096) must match the size of tensor b (8192)",
    "Authorization header missing; no token given",
    "detokenize_time=0.01 detokenizer_manager started",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_log_words_stay(line: str) -> None:
    # GIVEN a line of ordinary log words that merely look like a class
    redactor = Redactor()
    # WHEN redacted THEN it is unchanged and nothing was counted
    assert redactor.line(line) == line
    assert redactor.secret_classes() == {}


def test_no_fixture_log_holds_a_secret() -> None:
    # GIVEN every log of the fixtures (real and made, thousands of server-arg and request lines;
    # none holds a credential) WHEN redacted THEN no line gives a secret placeholder
    found = []
    for path in sorted((FIXTURES / "logs").rglob("*.log")):
        redactor = Redactor()
        redactor.text(path.read_text(errors="replace"))
        if redactor.secret_classes():
            found.append((path.name, redactor.secret_classes()))
    assert found == []
