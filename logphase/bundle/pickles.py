"""Torch flight-recorder pickles in a bundle: redacted in place at their byte length, else as redacted JSON (pure).

A pickle's strings are length-prefixed, so a string rewritten at the same length in bytes leaves every
length, position and protocol-4 frame valid: the bundle keeps the dump as torch's tools read it, each
redacted part masked with `*`. The pickle is read only by the flight-recorder reader's plain-data
unpickler (never a class) and walked by `pickletools.genops`, which parses opcodes and runs nothing.
Where a string cannot be masked in place (a protocol-0 escaped string, a change that is no placeholder),
where the bytes are not all understood (data after STOP), or where the rewritten pickle does not read
back clean, the bundle carries the decoded dump as redacted JSON instead, and says why."""

from __future__ import annotations

import copy
import json
import math
import pickletools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from logphase.bundle.redact import NOT_A_SECRET, Redactor, secret_key
from logphase.errors import InputError
from logphase.flight_recorder import load_plain

# String opcodes whose argument follows a length of this many bytes, and the argument's encoding
# (bytes read as Latin-1: one character a byte, so a mask keeps the length).
LENGTH_PREFIXED = {
    "SHORT_BINUNICODE": (1, "utf-8"),
    "BINUNICODE": (4, "utf-8"),
    "BINUNICODE8": (8, "utf-8"),
    "SHORT_BINBYTES": (1, "latin-1"),
    "BINBYTES": (4, "latin-1"),
    "BINBYTES8": (8, "latin-1"),
    "SHORT_BINSTRING": (1, "latin-1"),
    "BINSTRING": (4, "latin-1"),
    "BYTEARRAY8": (8, "latin-1"),
}
# Protocol 0's newline-ended strings are escaped text: a masked one would need re-escaping, so not in place.
TEXT_FORMS = frozenset({"UNICODE", "STRING"})
# A run of `*` is no secret to the redactor (NOT_A_SECRET), so a masked dump redacts to itself.
MASK = "*"
PLACEHOLDERS = re.compile(r"(?:\[(?:secret|host|ip)-\d+\]|\[user\])+")
# Placeholders one string may hold to be masked in place (each is a group of one regular expression).
MAX_SPANS = 64
# A name/value entry's value fields (Kubernetes' env, py-spy's locals), as the redactor's NAMED_VALUE.
VALUE_KEYS = ("value", "repr")


@dataclass(frozen=True)
class RedactedDump:
    """A dump as the bundle carries it: the pickle masked in place (`suffix` ""), or its decoded
    form as JSON (`suffix` ".json", `note` says why), or nothing (`data` None, `note` says why)."""

    data: bytes | None
    suffix: str
    masked: int  # strings masked in place
    note: str | None


class _NotInPlace(Exception):
    """Why a dump cannot be redacted in place."""


def strings_of(document: Any) -> Iterator[str]:
    """Every string of plain unpickled data, dict keys too, bytes read as Latin-1; without recursion
    and each container once (a pickle may nest deeper than Python's stack, or hold itself)."""
    seen: set[int] = set()
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, bytes | bytearray):
            yield bytes(value).decode("latin-1")
        elif isinstance(value, dict | list | tuple | set | frozenset) and id(value) not in seen:
            seen.add(id(value))
            if isinstance(value, dict):
                stack.extend(value.keys())
                stack.extend(value.values())
            else:
                stack.extend(value)


def secret_values(document: Any) -> set[str]:
    """The strings a structure says are credentials: the value of a secret key (`{"HF_TOKEN": "…"}`),
    every string under one (`{"credentials": {"user": …, "pass": …}}`), the value of a name/value
    entry whose name is a secret key (`{"name": "PGPASSWORD", "value": "…"}`). Empty, numeric and
    unset values say nothing (NOT_A_SECRET)."""
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        value, secret = stack.pop()
        if isinstance(value, str | bytes | bytearray):
            text = value if isinstance(value, str) else bytes(value).decode("latin-1")
            if secret and not NOT_A_SECRET.match(text.strip()):
                found.add(text)
            continue
        if not isinstance(value, dict | list | tuple | set | frozenset) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            name = value.get("name")
            named = isinstance(name, str) and secret_key(name)
            for key, item in value.items():
                under = secret or (isinstance(key, str) and (secret_key(key) or (named and key in VALUE_KEYS)))
                stack.append((item, under))
        else:
            stack.extend((item, secret) for item in value)
    return found


def learn(data: bytes, path: str, redactor: Redactor) -> None:
    """Let the redactor learn the host names a dump's strings name (before anything is redacted)."""
    for text in set(strings_of(load_plain(data, path))):
        redactor.learn(text)


def redact_dump(data: bytes, path: str, redactor: Redactor) -> RedactedDump:
    """The dump with every string through the redactor (and the values `secret_values` names
    replaced whole): masked in place when that is safe, else as JSON. Raises InputError only where
    the dump does not read as plain data (the analysis has read it already)."""
    secrets = secret_values(load_plain(data, path))  # one decoded dump at a time: each may be ~100 MB
    work = copy.deepcopy(redactor)  # its counts are kept only when the pickle is redacted in place
    try:
        rewritten, masked = _rewrite(data, secrets, work)
        _verify(rewritten, path, work)
    except _NotInPlace as why:
        return _as_json(load_plain(data, path), secrets, redactor, str(why))
    vars(redactor).update(vars(work))
    return RedactedDump(rewritten, "", masked, None)


def _rewrite(data: bytes, secrets: set[str], redactor: Redactor) -> tuple[bytes, int]:
    out = bytearray(data)
    masked = 0
    end = -1
    try:
        for opcode, arg, position in pickletools.genops(data):
            name = opcode.name
            if name == "STOP":
                end = (position or 0) + 1
            if name not in LENGTH_PREFIXED and name not in TEXT_FORMS:
                continue
            text = bytes(arg).decode("latin-1") if isinstance(arg, bytes | bytearray) else str(arg)
            redacted = redactor.secret(text) if text in secrets else redactor.text(text)
            if redacted == text:
                continue
            if name in TEXT_FORMS:
                raise _NotInPlace("a string of protocol 0's escaped form holds something to redact")
            size, encoding = LENGTH_PREFIXED[name]
            start = (position or 0) + 1 + size
            old = text.encode(encoding, "surrogatepass")
            new = _mask(text, redacted, encoding).encode(encoding, "surrogatepass")
            if len(new) != len(old) or data[start : start + len(old)] != old:
                raise _NotInPlace("a string's bytes are not where its opcode says")
            out[start : start + len(old)] = new
            masked += 1
    except ValueError as exc:  # genops on bytes the unpickler took: not expected, not trusted either
        raise _NotInPlace(f"its opcodes do not parse: {exc}") from None
    if end != len(data):
        raise _NotInPlace("bytes follow the pickle's end")
    return bytes(out), masked


def _mask(text: str, redacted: str, encoding: str) -> str:
    """`text` with each part the redactor replaced by a placeholder masked with MASK, as many bytes
    long as the part: the parts are found by the text the redactor kept around its placeholders."""
    kept = PLACEHOLDERS.split(redacted)
    if len(kept) < 2 or len(kept) > MAX_SPANS + 1:
        raise _NotInPlace("a string changed in a way a mask of its length cannot say")
    found = re.fullmatch("(.+?)".join(map(re.escape, kept)), text, re.DOTALL)
    if found is None:
        raise _NotInPlace("a string changed in a way a mask of its length cannot say")
    parts: list[str] = []
    done = 0
    for group in range(1, len(kept)):
        start, end = found.span(group)
        parts += (text[done:start], MASK * len(text[start:end].encode(encoding, "surrogatepass")))
        done = end
    parts.append(text[done:])
    return "".join(parts)


def _verify(data: bytes, path: str, redactor: Redactor) -> None:
    """The rewritten pickle reads back as plain data, and nothing in it is left to redact."""
    try:
        document = load_plain(data, path)
    except InputError:
        raise _NotInPlace("the masked pickle did not read back") from None
    check = copy.deepcopy(redactor)
    if secret_values(document) or any(check.text(text) != text for text in set(strings_of(document))):
        raise _NotInPlace("a secret was left after masking")


def _as_json(document: Any, secrets: set[str], redactor: Redactor, why: str) -> RedactedDump:
    def change(text: str) -> str:
        return redactor.secret(text) if text in secrets else redactor.text(text)

    try:
        text = json.dumps(_jsonable(document, change), indent=1, ensure_ascii=False, allow_nan=False)
    except (RecursionError, ValueError) as exc:  # nested past the stack, a cycle, an int past 4,300 digits
        note = f"not redacted in place ({why}) and not writable as JSON ({type(exc).__name__}): left out"
        return RedactedDump(None, "", 0, note)
    note = f"decoded and redacted as JSON, not the raw pickle: {why}"
    return RedactedDump((text + "\n").encode(), ".json", 0, note)


def _jsonable(value: Any, change: Callable[[str], str]) -> Any:
    """Plain unpickled data as JSON: tuples and sets as lists, bytes as Latin-1 text, infinities and
    NaN as text, keys that are no string as their JSON text; every string through `change`."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, bytes | bytearray):
        return change(bytes(value).decode("latin-1"))
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {
            change(key) if isinstance(key, str) else change(json.dumps(_jsonable(key, str))): _jsonable(item, change)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(item, change) for item in value]
    return value
