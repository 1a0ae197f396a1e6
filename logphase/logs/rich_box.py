"""rich's boxed tracebacks (rich.traceback: accelerate, TGI, typer CLIs) read as the lines CPython prints (pure)."""

from __future__ import annotations

import re

# rich 10.x-13.x (traceback.py `Traceback.__rich_console__`, `_render_stack`; panel.py, box.py ROUNDED): the stack is a
# Panel titled `Traceback (most recent call last)`, its title padded by a space in the top border
# (`╭──── Traceback (most recent call last) ────╮`); each of its lines `│ <content> │` (padding 1); a frame's line
# `<filename>:<lineno> in <name>` (13.x where the file is not on disk: `in <name>:<lineno>`), which rich's Text wraps
# at its spaces (`…/other.py:81` then `in wait_for_everyone`) and folds inside a word longer than the box; under
# it the Syntax excerpt, `<lineno> │ <code>` with `❱ ` before the frame's own line (`> ` on legacy Windows), beside
# it a `locals` panel where shown; the bottom border `╰───╯`, then the exception line `<type>: <value>` at the margin
# (CPython's). A chained exception's `The above exception was the direct cause …` sits between two boxes.
VERTICAL = "│"
RICH_STARTS = ("│", "╭", "╰")  # the first character of a line this module reads (the matcher's test before it)
TOP = re.compile(r"╭─* ?Traceback \(most recent call last\)")
BOTTOM = re.compile(r"╰─+╯?\s*$")
FRAME = re.compile(r"(?P<file>(?:[A-Za-z]:)?[^\s:][^:]*?):(?P<line>\d+) in (?P<function>[\w<>.]+)$")
FRAME_NO_FILE = re.compile(r"in (?P<function>[\w<>.]+):(?P<line>\d+)$")
# the line rich marks in a frame's excerpt (syntax.py: the pointer, its number right-justified and a space, then the
# code, its indentation drawn as guides `│   `); a locals panel beside it (two spaces or more, then its box) is no
# part of the code
MARKED = re.compile(r"(?:❱|>) +\d+ (?P<code>.*)$")
GUIDES = " │"
LOCALS_BESIDE = re.compile(r" {2,}[│╭╰]")
# a line that may be a wrapped frame's first part: one token, a path's start or its end at `:<lineno>`
PIECE = re.compile(r"(?:[/<~]|[A-Za-z]:\\)\S*$|\S*:\d+$")
# the lines the fast path hands the matcher for these (a box's lines outside a traceback change what it holds only
# where one is a frame or a frame's first part; the line after such a part is read as a block's are, matcher
# `rich_piece`): a path's start after the box's side, `:<lineno> in <name>`, `in <name>` (13.x's frame without its
# file), a part ending `:<lineno>` before the side
TRIGGER = rb"\xe2\x94\x82 +(?:[/<~]|[A-Za-z]:\\|in [\w<>])|:\d+ in [\w<>]|:\d+ *\xe2\x94\x82"
# what stands for a line of the box that says nothing CPython's lines would (context lines, blank lines, locals,
# `... N frames hidden ...`, the bottom border): an indented blank, which a traceback block keeps and reads as nothing
BLANK = "    "


def content(message: str) -> str | None:
    """The text inside a box line `│ <content> │` (a paste may cut its right side); None for another line."""
    if not message.startswith(VERTICAL):
        return None
    inner = message[1:].rstrip()
    if inner.endswith(VERTICAL):
        inner = inner[:-1]
    return inner.strip()


def frame_line(text: str) -> str | None:
    """CPython's frame line for a rich frame's text, or None."""
    found = FRAME.match(text)
    if found is not None:
        return f'  File "{found["file"]}", line {found["line"]}, in {found["function"]}'
    found = FRAME_NO_FILE.match(text)
    if found is not None:  # rich did not find the file: no file to key the frame by
        return f'  File "", line {found["line"]}, in {found["function"]}'
    return None


def marked_code(text: str) -> str | None:
    """The code of the line rich marks with `❱` in a frame's excerpt, indented as CPython quotes it; None for
    another line."""
    found = MARKED.match(text)
    if found is None:
        return None
    code = LOCALS_BESIDE.split(found["code"].lstrip(GUIDES), maxsplit=1)[0].rstrip()
    return BLANK + code if code else None


def joined(piece: str, text: str) -> str | None:
    """A frame's line rich wrapped over two box lines: `piece` then `text`, joined at the space it broke at
    (`…/other.py:81` + `in wait_for_everyone`) or inside the word it folded; None where they make no frame."""
    if text.startswith("in "):
        whole = f"{piece} {text}"
    elif re.search(r":\d+ in [\w<>.]+$", text):
        whole = piece + text
    else:
        return None
    return whole if FRAME.match(whole) else None


def boxed(line: str) -> bool:
    """Whether `line` (its envelopes off) is a line only rich's traceback draws: its top border, or a row of its
    box that holds a frame or the marked line of one. Its left side is then no table's column rule (a loose
    envelope, logs/envelope.py LEARNED), whose removal would leave the rows unread."""
    text = line.lstrip()
    if TOP.match(text):
        return True
    inner = content(text)
    return inner is not None and (frame_line(inner) is not None or MARKED.match(inner) is not None)


def translated(message: str, in_box: bool, piece: str | None) -> tuple[str | None, str | None]:
    """What CPython would have printed for a line of a rich traceback, and the piece of a wrapped frame line it
    leaves for the next line. Outside a box (`in_box` False) only a top border, a frame and a frame's parts are
    read, so a table drawn with `│` elsewhere stays as it is; inside, every line of the box is CPython's line or a
    blank. (None, …): the line is not one of these, left as it is."""
    if TOP.match(message):
        return "Traceback (most recent call last):", None
    if in_box and BOTTOM.match(message):
        return BLANK, None
    text = content(message)
    if text is None:
        return None, None
    if piece is not None and (whole := joined(piece, text)) is not None:
        return frame_line(whole), None
    frame = frame_line(text)
    if frame is not None:
        return frame, None
    next_piece = text if PIECE.match(text) else None
    if not in_box:
        return None, next_piece
    code = marked_code(text)
    return (code if code is not None else BLANK), next_piece
