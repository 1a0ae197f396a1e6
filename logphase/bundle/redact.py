"""Redaction of a bug-report bundle: IPs, host names, secrets and user names replaced, one line at a time.

Pure: a Redactor learns the host names a run's texts name (`learn`), then rewrites each line
(`line`; `text` and `across_lines` also redact what spans lines: PEM key blocks, a credential's
`name:` line and its `value:` line in either order, and a secret key's value laid out below it or
as a structure: pretty-printed JSON, a Python dict, YAML blocks; `line` redacts a JSON string that
holds lines as the text it holds). Secrets are redacted by class (SECRET_CLASSES, counted for the
bundle's README), and one found once is replaced wherever it appears again. A placeholder never
holds a newline, so line counts and line numbers never move, and the same value gets the same
placeholder in every file of one bundle (a reader can follow one host through all logs).
Placeholders are `[ip-1]`, `[host-1]`, `[secret-1]` and `/home/[user]/`: square brackets survive
GitHub's markdown, where `<ip-1>` would be taken for an HTML tag.

Kept on purpose: loopback and unspecified addresses (127.0.0.0/8, ::1, 0.0.0.0, ::) name no
machine and tell whether a server listened on all interfaces; version numbers (2.28.9, 0.5.10,
`==1.2.3.4`); empty or numeric values of secret-looking keys (`api_key=None` says no key is set,
`#new-token: 7` is a count); keys that name a place, a size or a count (`HF_TOKEN_PATH`,
`max_num_batched_tokens`) and the tokenizer's words (`tokenizer_path`, `eos_token`)."""

from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

IP = "ip"
HOST = "host"
SECRET = "secret"
USER = "user"
KINDS = (SECRET, USER, HOST, IP)

# Secrets, by class (the bundle's README counts each). A key is secret-looking by what it holds,
# in any spelling (`PGPASSWORD`, `db_passwd`, `clientSecret`, `HF_TOKEN`, `x-api-key`,
# `AWS_SECRET_ACCESS_KEY`, `--hf-token`), in env (`K=v`), YAML (`k: v`), JSON/Python (`"k": "v"`) and
# CLI (`--k v`, `--k=v`, `'--k', 'v'` in an argv list) forms; see `secret_key`.
URL_CREDENTIALS = "url credentials"
ASSIGNMENT = "password/secret/token/key assignments"
BEARER_TOKEN = "bearer/basic authorization"
API_TOKEN = "API tokens by shape"
PRIVATE_KEY = "private keys"
SECRET_CLASSES = (URL_CREDENTIALS, ASSIGNMENT, BEARER_TOKEN, API_TOKEN, PRIVATE_KEY)

# Only identifiers that hold one of these words are looked at (a lookahead: linear, one start per identifier).
_SECRET_HINT = r"(?=[\w.-]*?(?:pass|secret|token|key|cred|pwd))"
_SECRET_VALUE = r"""(?P<value>'[^'\n]*'|"[^"\n]*"|(?!\[\w+-\d+\])[^\s,;)}\]'"&\\]+)"""
SECRET_KEY = re.compile(
    rf"""(?i)(?<![\w.-])(?P<key>{_SECRET_HINT}[A-Za-z0-9][\w.-]*+)(?P<sep>\\*+['"]?\s*[=:]\s*(?:\\++['"])?)"""
    + _SECRET_VALUE
)
SECRET_OPTION = re.compile(
    rf"""(?i)(?<![\w-])(?P<key>--{_SECRET_HINT}[A-Za-z0-9][\w.-]*+)"""
    r"""(?P<sep>=|\s+|(?P<q>['"]),\s*(?P=q))(?P<value>'[^'\n]*'|"[^"\n]*"|[^\s'"-][^\s'"]*)"""
)
# What makes a key secret (`key` only as a word's end or before `s`: not `keyword`, `ssl_keyfile`;
# `token` not as `tokenizer`; `pwd` only as a later part: `MYSQL_PWD`, not the shell's `PWD`).
SECRET_IN_KEY = re.compile(r"(?i)pass(?:word|wd|phrase)|secret|credential|token(?!i[sz]|s)|key(?![a-rt-z])|.[_-]pwd\b")
# Parts of a key that say its value is no credential: where one is (`HF_TOKEN_PATH`, `ssl_key_file`),
# a count or a size (`max_num_batched_tokens`, `tokens_per_second`), a kind (`kv_cache_key_dtype`).
NOT_SECRET_PARTS = frozenset(
    {"file", "path", "dir", "dirs", "size", "len", "length", "type", "dtype", "mode", "name", "id", "ids", "num"}
    | {"count", "max", "min", "limit", "budget", "usage", "per", "format", "prefix", "throughput"}
)
# A name/value entry whose name is a credential's: Kubernetes' env (`{"name": "PGPASSWORD", "value": …}`,
# or `- name: PGPASSWORD` then `  value: …`), py-spy's --locals (`"name": "token"`, then `"repr": "'…'"`):
# the value on the name's line or on one of the next NAMED_LINES, until another name.
NAMED = re.compile(r"""(?i)(?<![\w-])\\*+["']?name\\*+["']?\s*[:=]\s*(?:\\*+["'])?(?P<name>[A-Za-z_][\w.-]*+)""")
NAMED_VALUE = re.compile(
    r"""(?i)(?<![\w-])(?P<key>\\*+["']?(?:value|repr))(?P<sep>\\*+['"]?\s*[=:]\s*(?:\\++['"])?)""" + _SECRET_VALUE
)
NAMED_LINES = 8  # py-spy's local: `{`, name, addr, arg, repr
# On a later line the value opens it (an entry's field of its own); a `}` ends the entry.
# Where an entry starts or ends: its brace, a YAML list item.
ENTRY_EDGE = re.compile(r"\s*+(?:[{}]|-\s)")
NAMED_FIELD = re.compile(r"""\s*+(?:-\s++)?(?=\\*+["']?(?:value|repr)\\*+["']?\s*[:=])""", re.IGNORECASE)
# A secret key whose value is a structure or is on the lines below (pretty-printed JSON, a Python
# dict, YAML): `"credentials": {`, `'api_keys': [`, `"password":` then its value on the next line,
# `password: |` (a block scalar), `credentials:` then indented lines. Every value in it is redacted,
# whatever its own key (see Redactor.secret_blocks).
BLOCK_KEY = re.compile(
    rf"""(?i)(?<![\w.\\-])(?P<q>["']?)(?P<key>{_SECRET_HINT}[A-Za-z0-9][\w.-]*+)(?P=q)\s*(?P<sep>[:=])[ \t]*"""
)
BLOCK_OPENINGS = (":{", ": {", ":[", ": [", "={", "=[")
BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*\s*$")
# A YAML mapping's `key: value` (the value after it) and a list item's `- ` inside a block.
YAML_PAIR = re.compile(r"""(?:-\s+)*(?:["']?[^\s:'"{}\[\],][^:'"{}\[\]]*?["']?\s*:(?:\s+|$))?(?:-\s+)*""")
KEY_AFTER = re.compile(r"\s*+:")  # what follows a key: it is one, not a value
BARE_TOKEN = re.compile(r"""[^\s,:{}\[\]'"]+""")
PLACEHOLDER = re.compile(r"\[(?:secret|host|ip)-\d+\]|\[user\]")
# A block not closed after this many lines is taken as ended (a cut or damaged log must not make the
# rest of it one credential); a service account's JSON is a dozen lines.
BLOCK_LINES = 256
BEARER = re.compile(r"(?i)\b(?P<key>Bearer|Basic)(?P<sep>\s+)(?P<value>[\w.~+/=-]{8,})")
# Any other scheme of an Authorization header (`Authorization: token …`, `authorization=Digest …`).
AUTHORIZATION = re.compile(
    r"""(?i)(?P<key>\bauthori[sz]ation['"]?\s*[:=]\s*['"]?(?:[A-Za-z-]++\s+)?)(?P<sep>)(?P<value>[^\s'",;]{6,})"""
)
URL_PASSWORD = re.compile(r"(?P<key>(?<![\w+.-])[A-Za-z][\w+.-]*+://[^:@/\s]*+)(?P<sep>:)(?P<value>[^@/\s]++)(?=@)")
# Token shapes that need no key in front: Hugging Face, OpenAI (and Anthropic's `sk-ant-`), GitHub
# (classic and fine-grained), AWS access key ids (long-term and temporary), Slack, GitLab, Google, Stripe, JWTs.
TOKEN_SHAPE = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}|xox[abprs]-[\w-]{10,}|xapp-[\w-]{10,}|glpat-[\w-]{20,}|AIza[\w-]{35}"
    r"|[rs]k_(?:live|test)_\w{16,}|eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,})\b"
)
# A PEM private key: on one line (JSON's `\n`-escaped form: up to its END, else the line's end), or as
# a block of lines whose body is base64 (see Redactor.private_keys).
PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
PEM_INLINE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:(?!-----END ).)*+(?:-----END [A-Z0-9 ]*-----)?"
)
PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# A block's line: base64 or a header, after what prefixes every line where a log's wrapper adds one
# (`svc-1 | `, a time): the base64 of a line with another prefix than BEGIN's is 16 characters or more.
PEM_BODY = re.compile(r"(?:^|\s)(?P<body>[A-Za-z0-9+/=]*+|(?:Proc-Type|DEK-Info|Comment|Version): .*)$")
# A JSON string literal (escapes taken whole: linear); one holding `\n` is redacted as the lines it holds.
JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*+"')
# Terminal colours: a key glued to one (`\x1b[32mPGPASSWORD=…`) is read without them.
ANSI = re.compile(r"\x1b\[[0-9;?]*+[ -/]*+[@-~]")
# Values of secret-looking keys that hide nothing: unset, booleans, numbers, already a placeholder,
# a list, dict or tag (`stop_token_ids=[2, 7]`, `eos_token=<eos>`: unquoted, only its opening is matched).
NOT_A_SECRET = re.compile(
    r"(?i)^(?:none|null|nil|true|false|\d+(?:\.\d+)?|\[\w+-\d+\]|\*+|[\[{(<].*[\]})>]|[|>][-+]?\d*|)$"
)
# A secret worth finding again anywhere: 8 characters or more, not a plain word (`expired`, `changeme`
# are found only where a key says so).
CREDENTIAL_LIKE = re.compile(r"(?=.*[^A-Za-z])[^\s\[\]]{8,}")
# The tokenizer's special tokens are vocabulary, not credentials.
SPECIAL_TOKEN_KEY = re.compile(r"(?i)(?:^|[_-])(?:eos|bos|pad|unk|sep|cls|mask|additional_special)_tokens?$")


def secret_key(key: str) -> bool:
    """Whether a key (`PGPASSWORD`, `--api-key`, `clientSecret`) names a credential."""
    key = key.lstrip("-")
    if not SECRET_IN_KEY.search(key) or SPECIAL_TOKEN_KEY.search(key):
        return False
    parts = re.split(r"[_.-]+", key.lower())
    return parts != ["key"] and not NOT_SECRET_PARTS.intersection(parts)


# A name of `*` only is one already masked (a flight-recorder pickle's strings keep their length).
USER_PATH = re.compile(r"(?P<prefix>/(?:home|Users))/(?!\*+(?:[/\s'\":]|$))(?P<name>[^/\s'\"\[\]:]+)(?=[/\s'\":]|$)")

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
    classes: Counter[str] = field(default_factory=Counter)  # secrets replaced, per class
    # secrets that look like credentials, by class: replaced wherever they appear again (a line
    # quoted alone, without the key that told it is one)
    known: dict[str, str] = field(default_factory=dict)
    _known_pattern: re.Pattern[str] | None = field(default=None, repr=False)
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
        """One line redacted; never adds or removes a line break. A line with terminal colours
        that holds something to redact is given without its colours."""
        if "\\n" in text:
            text = JSON_STRING.sub(self._escaped_lines, text)
        if "\x1b" in text:
            plain = ANSI.sub("", text)
            redacted = self._line(plain)
            return text if redacted == plain else redacted
        return self._line(text)

    def _escaped_lines(self, found: re.Match[str]) -> str:
        """A JSON string that holds lines (a JSON log's message, a dump's frame), redacted as the
        text it holds: what spans its lines is then found as in a file."""
        literal = found.group()
        if "\\n" not in literal:
            return literal
        try:
            value = json.loads(literal)
        except ValueError:
            return literal
        redacted = self.text(value) if isinstance(value, str) else value
        return literal if redacted == value else json.dumps(redacted, ensure_ascii=False)

    def _line(self, text: str) -> str:
        text = PEM_INLINE.sub(lambda m: self._placeholder(SECRET, m.group(), PRIVATE_KEY), text)
        # A URL's credentials before assignments: a user name that holds a key's word (`svc-key5:pw@`)
        # is the URL's user, not a key whose value follows.
        text = URL_PASSWORD.sub(lambda m: self._secret_value(m, URL_CREDENTIALS), text)
        text = self._assignments(SECRET_KEY, text)
        text = self._assignments(SECRET_OPTION, text)
        text = BEARER.sub(lambda m: self._secret_value(m, BEARER_TOKEN), text)
        text = AUTHORIZATION.sub(lambda m: self._secret_value(m, BEARER_TOKEN), text)
        text = TOKEN_SHAPE.sub(lambda m: self._placeholder(SECRET, m.group(), API_TOKEN), text)
        known = self._known()
        if known is not None:
            text = known.sub(lambda m: self._placeholder(SECRET, m.group(), self.known[m.group()]), text)
        text = USER_PATH.sub(self._user, text)
        host_pattern = self._hosts()
        if host_pattern is not None:
            text = host_pattern.sub(lambda m: self._placeholder(HOST, m.group()), text)
        text = IPV6.sub(self._address, text)
        return IPV4.sub(self._address, text)

    def text(self, text: str) -> str:
        """A whole file: each line redacted, line breaks untouched."""
        return "\n".join(self.line(part) for part in self.across_lines(text.split("\n")))

    def across_lines(self, lines: Iterable[str]) -> Iterator[str]:
        """The lines with the secrets that span lines redacted (PEM blocks, name/value entries): the
        part of redaction that needs the lines before; `line` does the rest."""
        return self.secret_blocks(self.named_values(self.private_keys(lines)))

    def secret_blocks(self, lines: Iterable[str]) -> Iterator[str]:
        """Every value under a secret key whose value is a structure or sits on the lines below
        (BLOCK_KEY) replaced: to its closing bracket, in the next line's string, or in the lines indented
        below it (YAML), at most BLOCK_LINES lines. Lines that repeat what prefixes the key's line (a
        log's `INFO `) are read after it; a line with terminal colours is read, and given, without them."""
        block: _Block | None = None
        for line in lines:
            plain = ANSI.sub("", line) if "\x1b" in line else line
            redacted, touched = plain, False
            if block is not None:
                redacted, block, touched = self._in_block(plain, block)
            if block is None and not touched:
                redacted, block = self._open_block(redacted)
            yield line if redacted == plain else redacted

    def _open_block(self, line: str) -> tuple[str, _Block | None]:
        tail = line.rstrip()
        if not (tail.endswith(":") or BLOCK_SCALAR.search(tail[-6:]) or any(o in line for o in BLOCK_OPENINGS)):
            return line, None  # what every opening has, looked for fast: most lines have none
        for found in BLOCK_KEY.finditer(line):
            if not secret_key(found["key"]):
                continue
            rest = line[found.end() :]
            if rest[:1] in ("{", "[") and not PLACEHOLDER.match(rest):
                line, depth = self._brackets(line, found.end(), 0)
                return line, _Block("brackets", depth) if depth > 0 else None
            if found["sep"] == "=":  # `credentials={…}` only: `PGPASSWORD=` then a line is no block
                continue
            kind = "next" if found["q"] else "indent" if not rest.strip() else "scalar"
            if kind == "scalar" and not BLOCK_SCALAR.match(rest):
                continue
            prefix = line[: found.start()]
            if not prefix.strip():
                return line, _Block(kind, indent=len(prefix))
            return line, _Block(kind, prefix=prefix)
        return line, None

    def _in_block(self, line: str, block: _Block) -> tuple[str, _Block | None, bool]:
        """The line as the open block makes it; the block after it (None when it ended); whether the
        line was part of it."""
        block.lines += 1
        if block.lines > BLOCK_LINES:
            return line, None, False
        if block.kind == "brackets":
            line, block.depth = self._brackets(line, 0, block.depth)
            return line, block if block.depth > 0 else None, True
        # after a prefix, the lines that repeat it (a log's `INFO ` on each) or that have none (the
        # lines of one multi-line message): the key is at the indent 0 of what follows the prefix
        prefix = block.prefix if line.startswith(block.prefix) else ""
        rest = line[len(prefix) :]
        content = rest.lstrip()
        if not content.strip():
            return line, block, True
        column = len(prefix) + len(rest) - len(content)
        if block.kind == "next":  # `"password":` then its value on the next line that is not empty
            if content[:1] in ("{", "["):
                line, depth = self._brackets(line, column, 0)
                return line, _Block("brackets", depth) if depth > 0 else None, True
            if content[:1] in ("'", '"'):
                return self._brackets(line, column, 1, once=True)[0], None, True
            return line, None, False
        indent = column - len(prefix)
        if indent > block.indent or (indent == block.indent and content.startswith("- ")):
            start = column
            if block.kind == "indent":  # a mapping's or a list's value, not its key or dash
                start += len(YAML_PAIR.match(content)[0])  # type: ignore[index]
            value = line[start:].rstrip()
            if value and not PLACEHOLDER.fullmatch(value):
                line = line[:start] + self._whole_value(value) + line[start + len(value) :]
            return line, block, True
        return line, None, False

    def _whole_value(self, value: str) -> str:
        quote = value[0] if len(value) > 1 and value[0] in ("'", '"') and value[-1] == value[0] else ""
        bare = value[len(quote) : len(value) - len(quote)]
        if NOT_A_SECRET.match(bare) or BLOCK_SCALAR.match(bare):
            return value
        return f"{quote}{self._placeholder(SECRET, bare, ASSIGNMENT)}{quote}"

    def _brackets(self, line: str, start: int, depth: int, once: bool = False) -> tuple[str, int]:
        """From `start`, at bracket depth `depth`: each string and bare word that is no key (a `:`
        after it) replaced, up to the bracket that closes depth 0 (or, `once`, after one string)."""
        parts = [line[:start]]
        position = start
        while position < len(line):
            char = line[position]
            placeholder = PLACEHOLDER.match(line, position)
            if placeholder is not None:
                end = placeholder.end()
                parts.append(placeholder.group())
            elif char in ("'", '"'):
                end = _string_end(line, position)
                closed = end - position >= 2 and line[end - 1] == char
                body = line[position + 1 : end - 1 if closed else end]
                closing = char if closed else ""
                if KEY_AFTER.match(line, end) or NOT_A_SECRET.match(body):
                    parts.append(line[position:end])
                else:
                    parts.append(f"{char}{self._placeholder(SECRET, body, ASSIGNMENT)}{closing}")
                if once:
                    position = end
                    break
            elif char in "{[":
                depth, end = depth + 1, position + 1
                parts.append(char)
            elif char in "}]":
                depth, end = depth - 1, position + 1
                parts.append(char)
                if depth <= 0:
                    position = end
                    break
            elif char in ",:" or char.isspace():
                end = position + 1
                parts.append(char)
            else:
                end = BARE_TOKEN.match(line, position).end()  # type: ignore[union-attr]
                word = line[position:end]
                if KEY_AFTER.match(line, end) or NOT_A_SECRET.match(word):
                    parts.append(word)
                else:
                    parts.append(self._placeholder(SECRET, word, ASSIGNMENT))
            position = end
        parts.append(line[position:])
        return "".join(parts), depth

    def named_values(self, lines: Iterable[str]) -> Iterator[str]:
        """The value of each name/value entry whose name is a credential's (NAMED) replaced, given
        after its name or before it (`{"value": "…", "name": "HF_TOKEN"}`, over lines too: the lines
        from a value field are held until the entry's name, its end or NAMED_LINES)."""
        left = 0  # lines in which the last credential's name may still get its value
        held: list[str] = []  # lines of an entry with a value field and no name yet
        for line in lines:
            named = NAMED.search(line)
            if held and (named is not None or len(held) >= NAMED_LINES or ENTRY_EDGE.match(line)):
                if named is not None and secret_key(named["name"]):
                    held = [NAMED_VALUE.sub(self._secret_value, before) for before in held]
                yield from held
                held = []
            start = 0
            if named is not None:
                left, start = (NAMED_LINES if secret_key(named["name"]) else 0), named.end()
                line = self._values_before_names(line)
            elif ENTRY_EDGE.match(line):
                left = 0  # another entry: the credential's name had no value
            if left and (named is not None or NAMED_FIELD.match(line)):
                before = self.classes[ASSIGNMENT]
                line = line[:start] + NAMED_VALUE.sub(self._secret_value, line[start:])
                left = 0 if self.classes[ASSIGNMENT] > before else left - 1
            elif left:
                left = 0 if line.lstrip().startswith("}") else left - 1
            elif named is None and (held or NAMED_FIELD.match(line)):
                held.append(line)
                continue
            yield line
        yield from held

    def _values_before_names(self, line: str) -> str:
        """The line with the value of each entry whose secret name follows it replaced."""
        for named in reversed(list(NAMED.finditer(line))):
            if secret_key(named["name"]):
                opened = line.rfind("{", 0, named.start()) + 1
                head = NAMED_VALUE.sub(self._secret_value, line[opened : named.start()])
                line = line[:opened] + head + line[named.start() :]
        return line

    def private_keys(self, lines: Iterable[str]) -> Iterator[str]:
        """The lines with each multi-line PEM private key's lines (BEGIN, body, END) made one
        placeholder each, what prefixes them kept; a block ends at its END line or at the first
        line that is no base64."""
        block: str | None = None
        prefix = ""
        for line in lines:
            plain = (ANSI.sub("", line) if "\x1b" in line else line).rstrip()
            if block is not None:
                kept = self._pem_line(plain, prefix)
                if kept is not None:
                    self.occurrences[SECRET] += 1
                    yield kept + block
                    block = None if PEM_END.search(plain) else block
                    continue
                block = None
            begin = PEM_BEGIN.search(plain)
            if begin is not None and not PEM_END.search(plain, begin.end()):
                block = self._placeholder(SECRET, f"private key {self.classes[PRIVATE_KEY]}", PRIVATE_KEY)
                prefix = plain[: begin.start()]
                yield prefix + block
                continue
            yield line

    @staticmethod
    def _pem_line(plain: str, prefix: str) -> str | None:
        """What prefixes a line of a PEM block (kept), or None where the line is no part of it."""
        end = PEM_END.search(plain)
        if end is not None:
            return plain[: end.start()]
        body = PEM_BODY.search(plain)
        if body is not None and (len(body["body"]) >= 16 or plain[: body.start("body")] == prefix):
            return plain[: body.start("body")]
        return None

    def json(self, value: Any) -> Any:
        """Every string of a JSON value redacted, keys too (the schema's own names pass unchanged)."""
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

    def secret_classes(self) -> dict[str, int]:
        """Secrets replaced per class (SECRET_CLASSES), classes with none left out."""
        return {name: self.classes[name] for name in SECRET_CLASSES if self.classes[name]}

    def secret(self, value: str, secret_class: str = ASSIGNMENT) -> str:
        """A whole value known to be a credential (a structure said so: the value of a secret key), replaced."""
        return self._placeholder(SECRET, value, secret_class)

    def _placeholder(self, kind: str, value: str, secret_class: str = "") -> str:
        self.occurrences[kind] += 1
        if secret_class:
            self.classes[secret_class] += 1
            if value not in self.known and CREDENTIAL_LIKE.fullmatch(value):
                self.known[value] = secret_class
                self._known_pattern = None
        key = (kind, value)
        if key not in self.placeholders:
            if kind == USER:
                self.placeholders[key] = "[user]"
            else:
                number = sum(1 for known, _ in self.placeholders if known == kind) + 1
                self.placeholders[key] = f"[{kind}-{number}]"
        return self.placeholders[key]

    def _assignments(self, pattern: re.Pattern[str], text: str) -> str:
        """`key=value` pairs whose key names a credential, values replaced. A pair whose key does not
        is searched again from its key's end: its value may be a pair (`#tokens: api_key='…'`)."""
        parts: list[str] = []
        done = position = 0
        while (found := pattern.search(text, position)) is not None:
            if not secret_key(found.group("key")):
                position = found.end("key")
                continue
            parts += (text[done : found.start()], self._secret_value(found))
            done = position = found.end()
        return "".join(parts) + text[done:] if parts else text

    def _secret_value(self, found: re.Match[str], secret_class: str = ASSIGNMENT) -> str:
        key, separator, value = found.group("key"), found.group("sep"), found.group("value")
        quote = ""
        if len(value) > 1 and value[0] in ("'", '"') and value[-1] == value[0]:
            quote = value[0]
        bare = value[len(quote) : len(value) - len(quote)]
        if NOT_A_SECRET.match(bare) or (not quote and bare[:1] in ("[", "{", "(", "<")):
            return found.group()
        return f"{key}{separator}{quote}{self._placeholder(SECRET, bare, secret_class)}{quote}"

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

    def _known(self) -> re.Pattern[str] | None:
        if self._known_pattern is None and self.known:
            names = sorted(self.known, key=len, reverse=True)
            self._known_pattern = re.compile("|".join(map(re.escape, names)))
        return self._known_pattern

    def _hosts(self) -> re.Pattern[str] | None:
        if self._host_pattern is None and self.hosts:
            names = sorted(self.hosts, key=len, reverse=True)  # `node0.cluster` before `node0`
            self._host_pattern = re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")
        return self._host_pattern


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A JSON-like value (strings, numbers, lists, tuples, dicts) with every string passed through
    `change`, dict keys too (a key may come from a log: a path, a rank, a host)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, (list, tuple)):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {change(key) if isinstance(key, str) else key: map_strings(item, change) for key, item in value.items()}
    return value


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None


@dataclass
class _Block:
    """A secret key's value that spans lines: `brackets` (open at `depth`), `next` (on the next line),
    `indent` / `scalar` (YAML: the lines indented past `indent` after `prefix`: values / all of each)."""

    kind: str
    depth: int = 0
    indent: int = 0
    prefix: str = ""
    lines: int = 0


def _string_end(line: str, start: int) -> int:
    """The index after the quoted string opening at `start` (backslash escapes skipped); the
    line's end where it is not closed."""
    quote = line[start]
    position = start + 1
    while position < len(line):
        char = line[position]
        if char == "\\":
            position += 2
            continue
        if char == quote:
            return position + 1
        position += 1
    return len(line)
