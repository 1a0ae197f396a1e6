"""Message templates from Python source text: logger calls, prints, raises and tqdm bars, read with `ast`.

A template is the message with its placeholders in one syntax, `str.format`'s: `%d` becomes `{:d}`,
`%.2f` `{:.2f}`, `%s` `{}`, an f-string field `{name}` keeps its expression's text as the field name
(`{world_size}`: synthesis guesses a value from it), literal braces are doubled. Pure: no file access."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

LOG_LEVELS = {
    "debug": "debug",
    "info": "info",
    "warning": "warning",
    "warn": "warning",
    "error": "error",
    "exception": "error",  # logged at ERROR with the traceback after it
    "critical": "critical",
    "fatal": "critical",
    "info_once": "info",
    "warning_once": "warning",
    "debug_once": "debug",
    "error_once": "error",
}
# `logger`, `self.logger`, `_logger`, `logging`, `log`: the objects whose level methods log a message
LOGGER_NAME = re.compile(r"(?:^|\.|_)(?:logger|logging|log|LOGGER)$", re.IGNORECASE)
PERCENT_FIELD = re.compile(
    r"%(?:\((?P<key>\w+)\))?(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<precision>\d+))?(?P<type>[sdirfgexXcoEGu%])"
)
# a template is worth keeping when it has a word of its own, not only placeholders
WORDY = re.compile(r"[A-Za-z]{3}")


@dataclass(frozen=True)
class Template:
    """One message a program can print, as found in its source."""

    kind: str  # log | print | raise | tqdm
    level: str  # log: debug … critical; print: print; raise: the exception class; tqdm: progress
    text: str  # the message, placeholders as `str.format` fields
    file: str
    line: int


def escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def percent_to_format(text: str) -> str:
    """`'took %.2f s (%s)'` → `'took {:.2f} s ({})'`: %-style fields as format fields."""
    out: list[str] = []
    position = 0
    for found in PERCENT_FIELD.finditer(text):
        out.append(escape_braces(text[position : found.start()]))
        position = found.end()
        kind = found.group("type")
        if kind == "%":
            out.append("%")
            continue
        name = found.group("key") or ""
        precision = found.group("precision")
        if kind in "di u":
            out.append(f"{{{name}:d}}")
        elif kind in "feEgG":
            out.append(f"{{{name}:.{precision or 6}f}}")
        elif kind == "r":
            out.append(f"{{{name}!r}}")
        else:
            out.append(f"{{{name}}}")
    out.append(escape_braces(text[position:]))
    return "".join(out)


def _field_name(node: ast.expr) -> str:
    """An expression as a format field name: its source text without the characters a field
    name cannot hold."""
    return re.sub(r"[{}:!\[\]\s]+", "_", ast.unparse(node)).strip("_")[:40]


def message_of(node: ast.expr) -> str | None:
    """The template a message expression builds, or None when no literal text is in it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return escape_braces(node.value)
    if isinstance(node, ast.JoinedStr):
        parts: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(escape_braces(value.value))
            elif isinstance(value, ast.FormattedValue):
                chosen = value.value
                if (
                    isinstance(chosen, ast.IfExp)
                    and isinstance(chosen.orelse, ast.Constant)
                    and isinstance(chosen.orelse.value, str)
                    and value.conversion < 0
                    and value.format_spec is None
                ):
                    # `{'cpu graph' if device == 'cpu' else 'cuda graph'}`: the else branch, the common path
                    parts.append(escape_braces(chosen.orelse.value))
                    continue
                spec = ""
                if isinstance(value.format_spec, ast.JoinedStr):
                    spec = "".join(str(v.value) for v in value.format_spec.values if isinstance(v, ast.Constant))
                conversion = f"!{chr(value.conversion)}" if value.conversion > 0 else ""
                parts.append("{" + _field_name(value.value) + conversion + (f":{spec}" if spec else "") + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return percent_to_format(left.value)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        head, tail = message_of(node.left), message_of(node.right)
        if head is None and tail is None:
            return None
        return (head if head is not None else "{" + _field_name(node.left) + "}") + (
            tail if tail is not None else "{" + _field_name(node.right) + "}"
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value  # its fields are already format fields
    return None


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _log_template(node: ast.Call) -> tuple[str, str] | None:
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in LOG_LEVELS or not node.args:
        return None
    owner = ast.unparse(func.value)
    if not LOGGER_NAME.search(owner):
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and len(node.args) > 1:
        text: str | None = percent_to_format(first.value)  # lazy %-formatting by the logging module
    else:
        text = message_of(first)
    return (LOG_LEVELS[func.attr], text) if text is not None else None


def _raise_template(node: ast.Raise) -> tuple[str, str] | None:
    call = node.exc
    if not isinstance(call, ast.Call) or not call.args:
        return None
    name = _call_name(call)
    if not name or not name[0].isupper():
        return None
    text = message_of(call.args[0])
    return (name, text) if text is not None else None


def _tqdm_template(node: ast.Call) -> str | None:
    if "tqdm" not in _call_name(node).lower() and "tqdm" not in ast.unparse(node.func).lower():
        return None
    for keyword in node.keywords:
        if keyword.arg == "desc":
            return message_of(keyword.value)
    return None


def _print_template(node: ast.Call) -> str | None:
    if not isinstance(node.func, ast.Name) or node.func.id != "print" or not node.args:
        return None
    parts = [message_of(arg) for arg in node.args]
    if all(part is None for part in parts):
        return None
    pieces = zip(parts, node.args, strict=True)
    return " ".join(part if part is not None else "{" + _field_name(arg) + "}" for part, arg in pieces)


def extract_templates(source: str, file: str) -> Iterator[Template]:
    """Every logger / print / raise / tqdm-desc message of one Python file. A file that does not parse
    (written for another Python) yields nothing."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        found: tuple[str, str, str] | None = None
        if isinstance(node, ast.Raise):
            raised = _raise_template(node)
            found = ("raise", *raised) if raised else None
        elif isinstance(node, ast.Call):
            logged = _log_template(node)
            if logged:
                found = ("log", *logged)
            elif (desc := _tqdm_template(node)) is not None:
                found = ("tqdm", "progress", desc)
            elif (printed := _print_template(node)) is not None:
                found = ("print", "print", printed)
        if found is None:
            continue
        kind, level, text = found
        text = text.strip()
        if WORDY.search(text):
            yield Template(kind, level, text, file, getattr(node, "lineno", 0))
