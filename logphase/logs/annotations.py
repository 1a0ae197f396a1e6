"""A person's edits in a pasted log (notes, elisions, keystrokes, a quoted line on top), told by their shape (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum


class Edit(Enum):
    """What a person added to a paste. None of them is the program's: never an event's line of its own (a keystroke's
    interrupt excepted: the person did press Ctrl-C), never progress, never the log's last line."""

    NOTE = "note"  # `<HANGS FOR 20+ min>`, `# waited here 30 min`: words about the run, which the reader may quote
    ELISION = "elision"  # `...`, `[...]`, `<snip>`: lines left out here
    KEYSTROKE = "keystroke"  # the terminal's echo of Ctrl-C (`^C`), with or without a note after it
    QUOTE = "quote"  # the paste's first line, a copy of a line further down, put on top to point at it


# A whole line in angle brackets with a space in it: a person's words (`<HANGS FOR 20+ min>`, `<nothing on first
# Ctrl-C>`); programs' placeholders are one token (torch elastic's `<NO_OTHER_FAILURES>`, `<N/A>`), their reprs hold
# `=` or an address (`<Process name='X' pid=1 started>`, `<Foo object at 0x7f…>`). A `#` comment line (`# here it
# sits for 30 minutes`): a program that prints `#` lines of its own (nccl-tests, vLLM's `# GPU blocks:`) has rules
# anchored on them, which claim the line first (matcher.py).
_COMMENT = re.compile(r"#{1,3}\s+\S.*")
# Three dots or an ellipsis alone, bracketed or not, or the words people write where they cut (`<snip>`,
# `[truncated]`, `-- snip --`, `... 120 lines omitted ...`): read on the line with its brackets, dashes and dots
# taken off its ends and its spaces made single, so that no pattern here runs over a long run of them.
_WRAPPING = "[](){}<>-–— \t.…"
_CUT_WORD = re.compile(r"snip(?:ped)?|truncated|omitted|elided|cut", re.IGNORECASE)
_LINES_LEFT_OUT = re.compile(r"(?:\d+ )?(?:more )?lines? (?:omitted|truncated|removed|elided|skipped)", re.IGNORECASE)
# The terminal's echo of Ctrl-C (`^C`, `^C^C`), with a person's note after it (`^C <nothing on first Ctrl-C>`)
_KEYSTROKE = re.compile(r"(?:\^C)+\s*+(?:(?:<[^<>]*>|#.*|\(.*\))\s*)?")
_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("“", "”"), ("‘", "’"))
QUOTE_MIN = 20  # a quoted line is a whole log line, not a word that a later line happens to hold


def edit(text: str) -> Edit | None:
    """What a person's edit this line is, by its shape alone; None for a line of the program's shape."""
    stripped = text.strip()
    if not stripped:
        return None
    if _KEYSTROKE.fullmatch(stripped):
        return Edit.KEYSTROKE
    if _elision(stripped):
        return Edit.ELISION
    if _COMMENT.fullmatch(stripped) or _bracketed_words(stripped):
        return Edit.NOTE
    return None


def _elision(text: str) -> bool:
    core = " ".join(text.strip(_WRAPPING).split())
    if not core:
        return "..." in text or "…" in text  # dots alone (`...`, `[...]`); a rule of dashes is no cut
    if core == text:
        return _LINES_LEFT_OUT.fullmatch(core) is not None
    return _CUT_WORD.fullmatch(core) is not None or _LINES_LEFT_OUT.fullmatch(core) is not None


def _bracketed_words(text: str) -> bool:
    """`<words with spaces>`: a person's note in angle brackets, not a program's placeholder or repr."""
    if len(text) < 3 or text[0] != "<" or text[-1] != ">":
        return False
    inner = text[1:-1].strip()
    return not any(c in inner for c in "<>=") and "0x" not in inner and any(c.isspace() for c in inner)


def quoted_top(head: Sequence[str]) -> int | None:
    """The index in `head` of the paste's first line where a person quoted a line of the log further down above it
    (in quote marks, or markdown's `> `) to point at it; None when the first line is the log's own. Bare copies are
    not told apart: programs print a line twice themselves (TensorRT-LLM its version, ranks the same banner). The
    quote's original stands once, further down than the next line."""
    lines = [(index, text.strip()) for index, text in enumerate(head) if text.strip()]
    if len(lines) < 3:
        return None
    first, written = lines[0]
    quoted = _unquoted(written)
    if quoted == written or len(quoted) < QUOTE_MIN:
        return None
    found = [index for index, text in lines[1:] if quoted in text]  # a part of the line, its prefix left out
    return first if len(found) == 1 and found[0] != lines[1][0] else None


def _unquoted(text: str) -> str:
    """The text inside the quote marks (or markdown's `> `) a person put around a copied line."""
    if text.startswith(">"):
        return text[1:].strip()
    for opening, closing in _QUOTES:
        if len(text) > 2 and text.startswith(opening) and text.endswith(closing):
            return text[1:-1].strip()
    return text
