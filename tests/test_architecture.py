"""The import rules of docs/design.md §2: logs and stacks meet only in scanning, judging/evidence and the pipeline;
judging is pure and below the pipeline; only cli assembles the pipeline, and only cli prints."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "logphase"
MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def calls_print(path: Path) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
        for node in ast.walk(ast.parse(path.read_text()))
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_follows_the_import_rules(path: Path) -> None:
    relative = path.relative_to(PACKAGE).as_posix()
    found = imports(path)
    if relative.startswith("logs/"):
        assert not any(name.startswith("logphase.stacks") for name in found)
    if relative.startswith("stacks/") or relative == "judging/stacks.py":
        assert not any(name.startswith("logphase.logs") for name in found)
    if relative == "judging/logs.py":
        assert not any(name.startswith("logphase.stacks") for name in found)
    if relative.startswith("judging/"):
        # pure: no files, processes, clock reads or store; nothing that runs the pipeline
        below = ("logphase.pipeline", "logphase.scanning", "logphase.watching", "logphase.cli", "logphase.health")
        assert not any(name.startswith(below) for name in found)
        assert not found & {"os", "sqlite3", "subprocess", "time", "socket"}
    if not relative.startswith("cli/") and relative != "pipeline.py":
        assert "logphase.pipeline" not in found, "the pipeline is assembled once, and run from the CLI"
    if not relative.startswith("cli/") and relative != "__main__.py":
        assert "click" not in found, "only logphase/cli may use click"
        assert not calls_print(path), "only logphase/cli prints"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_opens_with_a_docstring(path: Path) -> None:
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path} needs a one-line docstring saying what it owns"


_REPO = Path(__file__).resolve().parent.parent


def test_every_package_is_in_the_wheel() -> None:
    # GIVEN the packages under logphase/ WHEN pyproject's list is read THEN each one ships
    # (an editable install hides a missing one; `pip install .` would not have it)
    listed = set(tomllib.loads((_REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(_REPO).parts) for init in (_REPO / "logphase").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
