"""A server's printed arguments: the line a pack's `[[server_args]]` format finds, and its keys and values (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from logphase.packs import ServerArgsFormat, shipped_packs

# key = value or 'key': value, in a repr of ServerArgs / a dict / a Namespace / vLLM's config.
KEY_VALUE = re.compile(
    r"""(?:^|[\s,({])'?(?P<key>[A-Za-z_][A-Za-z0-9_]*)'?\s*[=:]\s*"""
    r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,)}\s]+)"""
)


@dataclass(frozen=True)
class PrintedArgs:
    """One line's printed arguments: the format that found them, the top-level keys and the nested configs'."""

    format: ServerArgsFormat
    args: dict[str, str]
    nested: dict[str, dict[str, str]]

    def value(self, fact: str) -> str | None:
        """A setup fact from the keys the format names for it (`config.key` reads a nested config), first found."""
        for key in self.format.keys.get(fact, ()):
            config, _, inner = key.rpartition(".")
            found = self.nested.get(config, {}).get(inner) if config else self.args.get(key)
            if found:
                return found
        return None


def shipped_server_args() -> tuple[ServerArgsFormat, ...]:
    """The server-argument formats of the shipped packs, for a caller that passes none."""
    return shipped_packs().server_args


def printed_args(text: str, formats: Sequence[ServerArgsFormat]) -> PrintedArgs | None:
    """The arguments `text` prints in the first of `formats` that finds them there, or None."""
    for candidate in formats:
        found = candidate.pattern.search(text)
        if found is not None:
            args, nested = _parse_args(text[found.end() :], candidate.nested)
            return PrintedArgs(candidate, args, nested)
    return None


def _parse_args(text: str, nested: Sequence[str]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Top-level key/values of a repr, with the nested configs (`speculative_config`, which has its
    own `model`) taken out first so that their keys cannot be mistaken for the top-level ones."""
    configs: dict[str, dict[str, str]] = {}
    for name in nested:
        found = re.search(rf"""'?\b{re.escape(name)}'?\s*[=:]\s*""", text)
        if found is None:
            continue
        body, end = _balanced(text, found.end())
        if body is not None:
            configs[name] = _key_values(body)
            text = text[: found.start()] + text[end:]
    return _key_values(text), configs


def _balanced(text: str, start: int) -> tuple[str | None, int]:
    """The bracketed value that starts at `start` (`{…}` or `Name(…)`), and where it ends."""
    opening = start
    while opening < len(text) and (text[opening].isalnum() or text[opening] == "_"):
        opening += 1
    if opening >= len(text) or text[opening] not in "({[":
        return None, start
    depth = 0
    quote: str | None = None
    for index in range(opening, len(text)):
        char = text[index]
        if quote:
            if char == quote and text[index - 1] != "\\":
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "({[":
            depth += 1
        elif char in ")}]":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : index], index + 1
    return text[opening + 1 :], len(text)  # a line cut short: take what is there


def _key_values(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for found in KEY_VALUE.finditer(text):
        key = found["key"]
        if key in values:
            continue
        value = found["value"]
        if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) >= 2:
            value = value[1:-1]
        if value != "None":
            values[key] = value
    return values
