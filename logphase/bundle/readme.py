"""The bundle's README.md: what is in it, what was cut, what was redacted, what could not be had (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from logphase import __version__
from logphase.bundle.excerpt import Excerpt
from logphase.bundle.redact import API_TOKEN, ASSIGNMENT, BEARER_TOKEN, PRIVATE_KEY, URL_CREDENTIALS

PLACEHOLDERS = {
    "secret": "`[secret-N]`: credentials, by the classes below",
    "user": "`/home/[user]/`, `/Users/[user]/`: user names in paths",
    "host": "`[host-N]`: host names the logs name (NCCL's `host:pid:tid`, `host=`, `MASTER_ADDR=`, `--host`, "
    "URLs with a port) and this machine's name",
    "ip": "`[ip-N]`: IPv4 and IPv6 addresses (loopback 127.0.0.0/8 and ::1, and 0.0.0.0 and ::, are kept)",
}


# What each class of secret covers (the keys of Redactor.secret_classes, in this order).
SECRET_CLASSES = {
    URL_CREDENTIALS: "the password of a URL or DSN of any scheme (`postgresql://user:…@`, `redis://:…@`)",
    ASSIGNMENT: "the value of any key holding PASSWORD, PASSWD, PWD, SECRET, CREDENTIAL, TOKEN or KEY, in env "
    '(`PGPASSWORD=…`), YAML, JSON (`"password": "…"`) and CLI (`--api-key …`, `--password=…`) forms, and across '
    'lines: every value of a structure under such a key (`"credentials": {…}`, a YAML block), a name/value '
    "entry whose name is one",
    BEARER_TOKEN: "`Authorization:` values (`Bearer …`, `Basic …`, `token …`)",
    API_TOKEN: "tokens by their shape: Hugging Face `hf_…`, OpenAI `sk-…`, AWS `AKIA…`/`ASIA…`, GitHub `ghp_…`/"
    "`github_pat_…`, Slack `xox…-`, GitLab `glpat-…`, Google `AIza…`, JWTs",
    PRIVATE_KEY: "PEM private keys (`-----BEGIN … PRIVATE KEY-----` and the lines of its block)",
}


@dataclass(frozen=True)
class Listed:
    """A file of the bundle as the README lists it."""

    name: str
    what: str
    size: int


def render_readme(
    *,
    verdict: Mapping[str, Any],
    listed: Sequence[Listed],
    cuts: Sequence[tuple[str, Excerpt, int]],
    redacted: Mapping[str, tuple[int, int]] | None,
    notes: Sequence[str],
    secret_classes: Mapping[str, int] | None = None,
    as_of: datetime,
) -> str:
    """`verdict` is the analysis JSON; `cuts` are (member, excerpt, original bytes); `redacted` is
    None when redaction was off, else per kind (distinct values, occurrences); `secret_classes`:
    secrets replaced per class."""
    phase = f" at `{verdict['phase']}`" if verdict.get("phase") else ""
    out = [
        "# logphase bug-report bundle",
        "",
        f"Made by logphase {__version__}; the analysis is as of {as_of:%Y-%m-%d %H:%M:%S}.",
        "",
        f"**{str(verdict['verdict']).upper()}**{phase} — {verdict['reason']}",
        "",
        "## What is in it",
        "",
        "| file | size | what |",
        "|---|---:|---|",
        "| README.md | | this file |",
    ]
    out.extend(f"| {item.name} | {_size(item.size)} | {item.what} |" for item in listed)
    out += ["", "## What was cut", ""]
    if not cuts:
        out.append("Nothing: every log is in whole.")
    else:
        out.append(
            "Logs over the size limit are cut to their first and last lines and the lines around every failure, "
            "the root cause, each phase's start and end and each rank's last progress. Each kept line starts "
            "with its line number in the original log; a line `....  [lines A–B cut: N lines]` stands for "
            "each cut."
        )
        out.append("")
        out.extend(f"- {name} (original {_size(size)}): {excerpt.describe()}" for name, excerpt, size in cuts)
    out += ["", "## What was redacted", ""]
    if redacted is None:
        out.append("Nothing (`--no-redact`): the files hold what the logs hold. Check them before you share them.")
    else:
        out.append(
            "The same value has the same placeholder in every file, so one host or address can still be followed. "
            "Line counts and line numbers are unchanged. Version numbers are kept. Torch flight-recorder dumps stay "
            "pickles torch's tools read: a pickle's strings are length-prefixed, so what is redacted in them is "
            "masked with `*` at its length in bytes instead of a placeholder."
        )
        out += ["", "| kind | values | occurrences | as |", "|---|---:|---:|---|"]
        for kind, text in PLACEHOLDERS.items():
            values, occurrences = redacted.get(kind, (0, 0))
            out.append(f"| {kind} | {values} | {occurrences} | {text} |")
        found = secret_classes or {}
        out += ["", "Secrets, by class:", "", "| class | occurrences | what |", "|---|---:|---|"]
        out.extend(f"| {name} | {found.get(name, 0)} | {what} |" for name, what in SECRET_CLASSES.items())
    if notes:
        out += ["", "## Notes", ""]
        out.extend(f"- {note}" for note in notes)
    return "\n".join(out) + "\n"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1 << 20:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1 << 20):.1f} MB"
