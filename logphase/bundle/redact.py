"""Redaction of a bug-report bundle: IPs, host names, secrets and user names replaced, one line at a time.

Pure: a Redactor learns the host names a run's texts name (`learn`), then rewrites each line
(`line`). A placeholder never holds a newline, so line counts and line numbers never move, and
the same value gets the same placeholder in every file of one bundle (a reader can follow one
host through all logs). Placeholders are `[ip-1]`, `[host-1]`, `[secret-1]` and `/home/[user]/`:
square brackets survive GitHub's markdown, where `<ip-1>` would be taken for an HTML tag.

Kept on purpose: loopback and unspecified addresses (127.0.0.0/8, ::1, 0.0.0.0, ::) name no
machine and tell whether a server listened on all interfaces; version numbers (2.28.9, 0.5.10,
`==1.2.3.4`); empty or numeric values of secret-looking keys (`api_key=None` says no key is set,
`#new-token: 7` is a count)."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

IP = "ip"
HOST = "host"
SECRET = "secret"
USER = "user"
KINDS = (SECRET, USER, HOST, IP)

# Secret-looking keys: `api_key=`, `HF_TOKEN=`, `'db_password': `, `OPENAI_API_KEY=`; not
# `max_prefill_tokens=` (the key must end in the word) and not a bare `key:`.
_SECRET_WORD = r"(?:api[_-]?key|token|secret|password|passwd|credentials?)"
SECRET_KEY = re.compile(
    rf"""(?i)(?<![\w-])(?P<key>(?:[a-z0-9]+[_-])*{_SECRET_WORD}|(?:[a-z0-9]+[_-])+key)"""
    r"""(?P<sep>['"]?\s*[=:]\s*)(?P<value>'[^']*'|"[^"]*"|(?!\[\w+-\d+\])[^\s,;)}\]'"]+)"""
)
SECRET_OPTION = re.compile(
    rf"""(?i)(?<![\w-])(?P<key>--(?:[a-z0-9]+-)*(?:{_SECRET_WORD.replace("[_-]", "-")}|key))"""
    r"""(?P<sep>=|\s+)(?P<value>'[^']*'|"[^"]*"|[^\s'"-][^\s'"]*)"""
)
BEARER = re.compile(r"(?i)\b(?P<key>Bearer|Basic)(?P<sep>\s+)(?P<value>[\w.~+/=-]{8,})")
URL_PASSWORD = re.compile(r"(?P<key>\b[a-z][a-z0-9+.-]*://[^:@/\s]+)(?P<sep>:)(?P<value>[^@/\s]+)(?=@)")
# Token shapes that need no key in front: Hugging Face, OpenAI, GitHub, AWS access key ids, Slack.
TOKEN_SHAPE = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abps]-[\w-]{10,})\b"
)
# Values of secret-looking keys that hide nothing: unset, booleans, numbers, already a placeholder.
NOT_A_SECRET = re.compile(r"(?i)^(?:none|null|nil|true|false|\d+(?:\.\d+)?|\[\w+-\d+\]|\*+|)$")
# The tokenizer's special tokens are vocabulary, not credentials.
SPECIAL_TOKEN_KEY = re.compile(r"(?i)(?:^|[_-])(?:eos|bos|pad|unk|sep|cls|mask|additional_special)_tokens?$")

USER_PATH = re.compile(r"(?P<prefix>/(?:home|Users))/(?P<name>[^/\s'\"\[\]:]+)(?=[/\s'\":]|$)")

# A 4-part dotted quad not glued to a version (`v1.2.3.4`, `==1.2.3.4`, `version 1.2.3.4`).
IPV4 = re.compile(
    r"(?<![\w.])(?<!==)(?<!version )(?<!version: )"
    r"(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w.]|\.\d)"
)
# Candidates only: colon groups of hex digits, checked by `ipaddress`; `09:12:06` is no address.
IPV6 = re.compile(
    r"(?<![\w:.%])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?:%[\w.]+)?(?![\w:])"
)

# Where a log names a machine: NCCL's `host:pid:tid [dev]` prefix, `host=`, `MASTER_ADDR=`,
# `dist_init_addr='node0:5000'`, torch elastic's `host : node-17`, `--host NAME`, and a URL with a
# port (`tcp://node0:29500`; a URL without a port is a public site such as huggingface.co).
NCCL_HOST = re.compile(r"(?:^|[\s\]])(?P<value>[A-Za-z][\w.-]*):\d+:\d+ \[\d+\]")
KEY_HOST = re.compile(
    r"""(?i)(?<![\w-])(?:[a-z0-9]+[_-])*(?:host|hostname|ip|addr|address)['"]?\s*(?P<sep>[=:])\s*['"]?"""
    r"""(?P<value>[A-Za-z0-9][\w.-]*)(?![\w.-]|:/)"""  # not a URL's scheme: `addr='ipc:///tmp/x'`
)
# After `host:` in prose (`cannot reach host: connection refused`) only a name that looks like a
# machine's (a digit, a dot or a dash in it) is taken; `host=NAME` is always a setting.
MACHINE_LIKE = re.compile(r"[\d.-]")
OPTION_HOST = re.compile(
    r"""(?i)(?<![\w-])--(?:[a-z0-9]+-)*(?:host|hostname|ip|addr|address)(?:=|\s+)['"]?(?P<value>[A-Za-z0-9][\w.-]*)"""
)
URL_HOST = re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^@/\s]+@)?(?P<value>[A-Za-z][\w.-]*):\d+")
NOT_A_HOST = re.compile(
    r"(?i)^(?:localhost|localhost\.localdomain|ip6-localhost|none|null|true|false|auto|any|all|unknown|"
    r"0x[0-9a-f]+|[\d.]+|.)$"
)


@dataclass
class Redactor:
    """Replaces what identifies people and machines; remembers value → placeholder for one bundle."""

    hosts: set[str] = field(default_factory=set)
    placeholders: dict[tuple[str, str], str] = field(default_factory=dict)
    occurrences: Counter[str] = field(default_factory=Counter)
    _host_pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def learn(self, text: str) -> None:
        """Take note of the host names `text` names (call for every text before redacting any)."""
        for pattern in (NCCL_HOST, KEY_HOST, OPTION_HOST, URL_HOST):
            for found in pattern.finditer(text):
                value = found.group("value")
                if pattern is KEY_HOST and found.group("sep") == ":" and not MACHINE_LIKE.search(value):
                    continue
                self.learn_host(value)

    def learn_host(self, name: str) -> None:
        name = name.strip(".-")
        if not NOT_A_HOST.match(name) and _address(name) is None:
            self.hosts.add(name)
            self._host_pattern = None

    def line(self, text: str) -> str:
        """One line redacted; never adds or removes a line break."""
        for pattern in (SECRET_KEY, SECRET_OPTION, BEARER, URL_PASSWORD):
            text = pattern.sub(self._secret_value, text)
        text = TOKEN_SHAPE.sub(lambda m: self._placeholder(SECRET, m.group()), text)
        text = USER_PATH.sub(self._user, text)
        host_pattern = self._hosts()
        if host_pattern is not None:
            text = host_pattern.sub(lambda m: self._placeholder(HOST, m.group()), text)
        text = IPV6.sub(self._address, text)
        return IPV4.sub(self._address, text)

    def text(self, text: str) -> str:
        """A whole file: each line redacted, line breaks untouched."""
        return "\n".join(self.line(part) for part in text.split("\n"))

    def json(self, value: Any) -> Any:
        """Every string of a JSON value redacted (keys are the schema's names and stay)."""
        return map_strings(value, self.text)

    def learn_all(self, value: Any) -> None:
        """`learn` from every string of a JSON-like value."""

        def note(text: str) -> str:
            self.learn(text)
            return text

        map_strings(value, note)

    def summary(self) -> dict[str, tuple[int, int]]:
        """Per kind: (distinct values, occurrences replaced)."""
        distinct = Counter(kind for kind, _ in self.placeholders)
        return {kind: (distinct[kind], self.occurrences[kind]) for kind in KINDS if self.occurrences[kind]}

    def _placeholder(self, kind: str, value: str) -> str:
        self.occurrences[kind] += 1
        key = (kind, value)
        if key not in self.placeholders:
            if kind == USER:
                self.placeholders[key] = "[user]"
            else:
                number = sum(1 for known, _ in self.placeholders if known == kind) + 1
                self.placeholders[key] = f"[{kind}-{number}]"
        return self.placeholders[key]

    def _secret_value(self, found: re.Match[str]) -> str:
        key, separator, value = found.group("key"), found.group("sep"), found.group("value")
        quote = value[0] if value[:1] in ("'", '"') and len(value) > 1 and value[-1] == value[0] else ""
        bare = value[1:-1] if quote else value
        if NOT_A_SECRET.match(bare) or SPECIAL_TOKEN_KEY.search(key.lstrip("-")):
            return found.group()
        return f"{key}{separator}{quote}{self._placeholder(SECRET, bare)}{quote}"

    def _user(self, found: re.Match[str]) -> str:
        return f"{found.group('prefix')}/{self._placeholder(USER, found.group('name'))}"

    def _address(self, found: re.Match[str]) -> str:
        text = found.group()
        address = _address(text)
        if address is None or address.is_loopback or address.is_unspecified:
            return text
        if address.version == 6 and sum(1 for group in text.split("%")[0].split(":") if group) < 2:
            return text  # `c10::` and the like: C++ scopes, not addresses
        return self._placeholder(IP, text)

    def _hosts(self) -> re.Pattern[str] | None:
        if self._host_pattern is None and self.hosts:
            names = sorted(self.hosts, key=len, reverse=True)  # `node0.cluster` before `node0`
            self._host_pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")
        return self._host_pattern


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A JSON-like value (strings, numbers, lists, tuples, dicts) with every string passed through
    `change`; dict keys stay (they are a schema's names)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, (list, tuple)):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    return value


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
