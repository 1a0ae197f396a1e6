"""The import rules of docs/design.md §2: logs and stacks meet only in scan/, judging/evidence and the pipeline;
judging is pure and below the pipeline; only cli assembles the pipeline, and only cli prints."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from tests.design_map import DESIGN, design_text
from tests.design_map import LAYERS as DESIGN_LAYERS

PACKAGE = Path(__file__).resolve().parent.parent / "logphase"
MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def imports(path: Path) -> set[str]:
    return imports_in(path.read_text(), path)


def imports_in(text: str, path: Path) -> set[str]:
    """Every module the file at `path` imports, in every form: `import a.b`, `from a import b` (both `a`
    and `a.b`: b may be a module), relative imports resolved, imports inside functions and TYPE_CHECKING."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
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
        # stacks are read apart from logs: only the wrappers a dump was pasted in are shared
        shared = ("logphase.logs.envelope", "logphase.logs.envelope.")
        assert not any(name.startswith("logphase.logs.") and not name.startswith(shared) for name in found)
    if relative == "judging/logs.py":
        assert not any(name.startswith("logphase.stacks") for name in found)
    if relative.startswith("judging/"):
        # pure: no files, processes, clock reads or store; nothing that runs the pipeline
        below = ("logphase.pipeline", "logphase.scan", "logphase.watch", "logphase.cli")
        assert not any(name.startswith(below) for name in found)
        assert not found & {"os", "sqlite3", "subprocess", "time", "socket"}
    if not relative.startswith(("cli/", "bundle/")) and relative not in ("pipeline.py", "api.py", "watch/loop.py"):
        assert "logphase.pipeline" not in found, "the pipeline is assembled once, and run from the edges"
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


def test_every_folder_of_shipped_data_is_a_listed_package() -> None:
    # GIVEN the folders under patterns/ (shipped as logphase.patterns) WHEN pyproject's lists are read
    project = tomllib.loads((_REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {f"logphase.patterns.{path.name}" for path in (_REPO / "patterns").iterdir() if path.is_dir()}
    folders -= {"logphase.patterns.__pycache__"}
    # THEN each is a package with its data listed (else setuptools warns, 40 lines, on every install)
    assert folders <= set(project["packages"]), sorted(folders - set(project["packages"]))
    assert folders <= set(project["package-data"]), sorted(folders - set(project["package-data"]))


LAYERS = tuple(units for units, _ in DESIGN_LAYERS)
LAYER_OF = {unit: index for index, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "logphase" and len(parts) > 1 and parts[1] in LAYER_OF else None


def test_every_unit_has_a_layer() -> None:
    # GIVEN the packages and root modules of logphase/ WHEN their layers are looked up THEN each has one
    units = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert sorted(units - set(LAYER_OF) - {"__init__"}) == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_lower_layers(path: Path) -> None:
    # GIVEN a module of a unit WHEN its imports are read (every form) THEN each other unit it imports is below it
    own = _unit(".".join(("logphase", *path.relative_to(PACKAGE).with_suffix("").parts)))
    if own is None:
        return  # logphase/__init__.py: the library's lazy door, checked below
    above = sorted(
        f"{unit} (layer {LAYER_OF[unit]})"
        for unit in filter(None, map(_unit, imports(path)))
        if unit != own and LAYER_OF[unit] >= LAYER_OF[own]
    )
    assert above == [], f"{own} (layer {LAYER_OF[own]}) imports {above}"


def test_the_import_reader_sees_every_form() -> None:
    # GIVEN a module of logphase/bundle with each import form WHEN its imports are read THEN each is found
    text = "from logphase import pipeline\nfrom . import live\nfrom ..judging import live as j\nimport logphase.cli\n"
    found = imports_in(text, PACKAGE / "bundle" / "example.py")
    assert {"logphase.pipeline", "logphase.bundle.live", "logphase.judging.live", "logphase.cli"} <= found


def test_design_md_shows_the_layers_and_modules_as_they_are() -> None:
    # GIVEN docs/design.md WHEN its layer table and module map are made anew from the code THEN nothing changes
    # (`python -m tests.design_map` rewrites them)
    text = DESIGN.read_text()
    assert design_text(text) == text
