"""Pattern-pack folders that cannot be read are said, never a traceback and never skipped silently."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

LOG = str(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log")


def test_an_unreadable_config_folder_is_an_error_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a config home whose logphase folder cannot be entered (sudo -u other, HOME kept); root
    # reads everything, so the refusal the kernel would give is made here
    folder = tmp_path / "logphase" / "patterns"
    folder.mkdir(parents=True)
    real_is_dir = Path.is_dir

    def is_dir(path: Path) -> bool:
        if path == folder:
            raise PermissionError(13, "Permission denied")
        return real_is_dir(path)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    # WHEN analyze runs THEN exit 3, naming the folder, with a hint
    result = run_cli("analyze", LOG)
    assert (result.exit_code, result.stderr.splitlines()) == (
        3,
        [
            f"logphase: error: {folder}: permission denied (your pattern packs folder)",
            "  hint: make it readable (chmod -R u+rX), or point XDG_CONFIG_HOME elsewhere",
        ],
    )


def test_an_unlistable_packs_folder_is_not_skipped_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the user's packs folder, there but not listable by this user (mode 0300, say)
    folder = tmp_path / "logphase" / "patterns"
    folder.mkdir(parents=True)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if Path(path) == folder else real_access(path, mode))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    # WHEN analyze runs THEN exit 3 saying so (before: its packs were silently not loaded)
    result = run_cli("analyze", LOG)
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        3,
        f"logphase: error: {folder}: permission denied (a folder of pattern packs)",
    )
