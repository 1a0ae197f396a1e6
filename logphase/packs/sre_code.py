"""A stdlib regex's compiled form as plain data, for the pack cache: a warm run builds patterns without parsing.

`re.compile` parses a regex and assembles the engine's code (most of a small log's regex time: the
rules its lines pick); the engine itself (`_sre.compile`) only checks and copies that code. The
pack cache stores each shipped regex's code beside its text (PackRegex.keep_code) and builds the
pattern from it on first use: the very pattern `re.compile` gives (tests/test_pack_cache.py holds
them equal, code included, for every shipped regex). The code's meaning is the engine's: ENGINE is
part of the cache's key, and a code the engine refuses is ignored (the regex compiled as before).
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # the stdlib's regex engine (re's own back end), no stubs
import sys
from array import array
from typing import Any

# What the code depends on besides the regex: the engine's format, its word size and repeat bound, and
# the byte order its words are kept in (a cache folder on a home shared by machines of another kind).
ENGINE = f"sre {_sre.MAGIC} {_sre.CODESIZE} {_sre.MAXREPEAT} {sys.byteorder}"
WORD = {2: "H", 4: "I", 8: "L"}.get(_sre.CODESIZE, "I")

# flags as the engine keeps them, the code's words, the number of groups, group names to numbers and back
Code = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]


def compile_code(text: str, flags: int) -> Code | None:
    """`re.compile(text, flags)`'s code, as `re._compiler.compile` assembles it; None where the stdlib
    cannot compile it (syntax only the `regex` module knows) or this Python assembles it otherwise."""
    try:
        from re import _compiler, _parser  # type: ignore[attr-defined]

        flags = int(flags)  # a plain int: an re.RegexFlag would pickle as a class of `re`
        parsed = _parser.parse(text, flags)
        words = array(WORD, [int(word) for word in _compiler._code(parsed, flags)])
        names: dict[str, int] = dict(parsed.state.groupdict)
        numbered: list[str | None] = [None] * parsed.state.groups
        for name, number in names.items():
            numbered[number] = name
        return (int(flags | parsed.state.flags), words.tobytes(), parsed.state.groups - 1, names, tuple(numbered))
    except Exception:  # another Python's internals, or a regex the stdlib refuses: compiled as before
        return None


def pattern_from(text: str, code: Code) -> Any:
    """The pattern `code` was assembled for (an re.Pattern), or None where the engine refuses it."""
    try:
        flags, words, groups, names, numbered = code
        # the engine checks the code, not the group names it is handed: those are checked here
        named = [number for number, name in enumerate(numbered) if name is not None]
        if len(numbered) != groups + 1 or sorted(names.values()) != named:
            return None
        if any(numbered[number] != name for name, number in names.items()):
            return None
        return _sre.compile(text, flags, array(WORD, words).tolist(), groups, names, numbered)
    except Exception:  # the engine checks the code it is given: refused, the regex is compiled afresh
        return None
