"""Redaction on its own: what each kind of value becomes, what is kept, and properties over generated logs."""

from __future__ import annotations

import random
import string

import pytest

from logphase.bundle.redact import Redactor


def redacted(*lines: str) -> list[str]:
    redactor = Redactor()
    for line in lines:
        redactor.learn(line)
    return [redactor.line(line) for line in lines]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # SGLang's server_args: the key's value only, quotes kept; an unset key stays (it says "no key")
        (
            "server_args=ServerArgs(api_key='s3cr3t-value', port=30000, admin_api_key=None)",
            "server_args=ServerArgs(api_key='[secret-1]', port=30000, admin_api_key=None)",
        ),
        (
            "python -m sglang.launch_server --api-key abc123def --port 30000",
            "python -m sglang.launch_server --api-key [secret-1] --port 30000",
        ),
        ("--api-key=abc123def --tp 8", "--api-key=[secret-1] --tp 8"),
        ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 python x.py", "HF_TOKEN=[secret-1] python x.py"),
        ("token hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 loaded", "token [secret-1] loaded"),
        (
            "export WANDB_API_KEY=0123abcd4567 AWS_SECRET=xyz/abc",
            "export WANDB_API_KEY=[secret-1] AWS_SECRET=[secret-2]",
        ),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "Authorization: Bearer [secret-1]"),
        ("pull https://bob:pa55word@registry.example.com/x", "pull https://bob:[secret-1]@registry.example.com/x"),
        # counts and the tokenizer's vocabulary are not secrets
        (
            "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, max_prefill_tokens=16384",
            "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, max_prefill_tokens=16384",
        ),
        ("eos_token='</s>' pad_token='<pad>'", "eos_token='</s>' pad_token='<pad>'"),
        # user names in paths
        (
            'File "/home/alice/venv/lib/python3.12/site-packages/sglang/srt/server.py", line 42',
            'File "/home/[user]/venv/lib/python3.12/site-packages/sglang/srt/server.py", line 42',
        ),
        ("model_path='/Users/bob/models/llama'", "model_path='/Users/[user]/models/llama'"),
        # addresses; loopback and "any" are kept, versions are no addresses
        (
            "INFO:     10.0.12.7:51007 - GET /health 503 (from 127.0.0.1, bound to 0.0.0.0)",
            "INFO:     [ip-1]:51007 - GET /health 503 (from 127.0.0.1, bound to 0.0.0.0)",
        ),
        ("connect to [fe80::1ff:fe23:4567:890a%eth0]:8000 or ::1", "connect to [[ip-1]]:8000 or ::1"),
        (
            "NCCL version 2.28.9+cuda12.9 sglang 0.5.10 torch==2.5.1 transformers==4.46.0.1 v1.2.3.4",
            "NCCL version 2.28.9+cuda12.9 sglang 0.5.10 torch==2.5.1 transformers==4.46.0.1 v1.2.3.4",
        ),
        ("at 09:12:06 in c10::cuda::CUDAError and std::vector", "at 09:12:06 in c10::cuda::CUDAError and std::vector"),
    ],
)
def test_each_kind_of_value_becomes_its_placeholder(line: str, expected: str) -> None:
    # GIVEN one log line WHEN redacted THEN exactly the identifying value is replaced
    assert redacted(line) == [expected]


def test_host_names_the_log_names_are_replaced_everywhere() -> None:
    # GIVEN NCCL's `host:pid:tid [dev]` prefix, torch elastic's `host : NAME`, MASTER_ADDR, --host and a URL with a port
    lines = [
        "gpu-h100-07:51236:51236 [6] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "  host      : gpu-node-3.cluster",
        "MASTER_ADDR=trainer-0 torchrun --nproc-per-node 8",
        "python -m sglang.launch_server --host api-box --port 30000",
        "Rendezvous at tcp://rdzv-host:29500; model from https://huggingface.co/meta-llama",
        "gpu-h100-07 and gpu-node-3.cluster and trainer-0 and api-box and rdzv-host again",
    ]
    # WHEN redacted THEN each host has one placeholder on every line; a public URL without a port stays
    assert redacted(*lines) == [
        "[host-1]:51236:51236 [6] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "  host      : [host-2]",
        "MASTER_ADDR=[host-3] torchrun --nproc-per-node 8",
        "python -m sglang.launch_server --host [host-4] --port 30000",
        "Rendezvous at tcp://[host-5]:29500; model from https://huggingface.co/meta-llama",
        "[host-1] and [host-2] and [host-3] and [host-4] and [host-5] again",
    ]


def test_localhost_and_unset_hosts_are_not_learnt() -> None:
    # GIVEN host fields that name no machine
    redactor = Redactor()
    redactor.learn("server_args=ServerArgs(host='0.0.0.0', dist_init_addr=None) url http://localhost:30000 ip=10.1.2.3")
    # and prose after `host:` that names none
    redactor.learn("Failed to connect to host: connection refused; address: 0x7f3a2c00")
    redactor.learn("local_subscribe_addr='ipc:///tmp/6a5a1e3b', remote_addr=tcp://10.0.0.1:5555")
    # THEN no host name is learnt (the address is redacted as an address, not as a host)
    assert redactor.hosts == set()


def test_the_same_value_keeps_its_placeholder_across_files_and_json() -> None:
    # GIVEN one redactor for a whole bundle
    redactor = Redactor()
    first = redactor.text("a 10.0.0.5\nb 10.0.0.6\n")
    second = redactor.json({"text": "from 10.0.0.6 and 10.0.0.5", "line": 3, "path": ["10.0.0.7"]})
    # THEN the same address is the same placeholder everywhere, keys and numbers untouched
    assert first == "a [ip-1]\nb [ip-2]\n"
    assert second == {"text": "from [ip-2] and [ip-1]", "line": 3, "path": ["[ip-3]"]}
    assert redactor.summary() == {"ip": (3, 5)}


# --- properties over generated logs -------------------------------------------------------------

FILLER = ["INFO", "Load weight", "rank", "Capture cuda graph", "bs", "[TP3]", "done.", "it/s", "#tokens:", "42", "-"]


def secret_value(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(12, 40)))


def generated_log(rng: random.Random, lines: int) -> tuple[str, list[str], list[str], list[str]]:
    """A log of filler with secrets, addresses and versions spliced in; returns it and what it holds."""
    secrets: list[str] = []
    addresses: list[str] = []
    versions: list[str] = []
    out = []
    for _ in range(lines):
        words = [rng.choice(FILLER) for _ in range(rng.randint(0, 8))]
        for _ in range(rng.randint(0, 3)):
            kind = rng.randrange(9)
            value = secret_value(rng)
            if kind == 0:
                words.append(f"api_key='{value}'")
            elif kind == 1:
                words.append(f"--api-key {value}")
            elif kind == 2:
                words.append(f"HF_TOKEN=hf_{value}{'x' * 20}")
                value = f"hf_{value}{'x' * 20}"
            elif kind == 3:
                words.append(f"Authorization: Bearer {value}")
            elif kind == 4:
                words.append(
                    f"{rng.choice(['OPENAI', 'WANDB', 'S3'])}_{rng.choice(['KEY', 'TOKEN', 'SECRET'])}={value}"
                )
            elif kind == 5:
                address = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
                words.append(f"{address}:{rng.randint(1024, 65535)}")
                addresses.append(address)
                continue
            elif kind == 6:
                address = f"2001:db8:{rng.randint(1, 0xFFFF):x}::{rng.randint(1, 0xFFFF):x}"
                words.append(f"[{address}]:8000")
                addresses.append(address)
                continue
            else:
                version = f"{rng.randint(0, 12)}.{rng.randint(0, 40)}.{rng.randint(0, 30)}"
                words.append(rng.choice([f"version {version}", f"=={version}", f"v{version}", f"{version}+cu124"]))
                versions.append(version)
                continue
            secrets.append(value)
        out.append(" ".join(words))
    return "\n".join(out) + "\n", secrets, addresses, versions


@pytest.mark.parametrize("seed", range(40))
def test_redaction_keeps_every_line_and_its_number(seed: int) -> None:
    # GIVEN a generated log, numbered as an excerpt numbers it
    rng = random.Random(seed)
    text, _, _, _ = generated_log(rng, rng.randint(1, 200))
    numbered = "\n".join(f"{number:>5}: {line}" for number, line in enumerate(text.split("\n"), 1))
    # WHEN redacted
    out = Redactor().text(numbered)
    # THEN the same number of lines, each still opening with its own number
    lines = out.split("\n")
    assert len(lines) == len(numbered.split("\n"))
    assert [line[:7] for line in lines] == [f"{number:>5}: " for number in range(1, len(lines) + 1)]


@pytest.mark.parametrize("seed", range(40))
def test_no_generated_secret_or_address_survives_and_versions_do(seed: int) -> None:
    # GIVEN a generated log holding secrets, addresses and version numbers
    rng = random.Random(1000 + seed)
    text, secrets, addresses, versions = generated_log(rng, rng.randint(20, 200))
    redactor = Redactor()
    redactor.learn(text)
    # WHEN redacted
    out = redactor.text(text)
    # THEN none of the secrets and addresses is left, every version number is
    assert [s for s in secrets if s in out] == []
    assert [a for a in addresses if a in out] == []
    assert [v for v in versions if v not in out] == []
