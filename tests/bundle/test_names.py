"""How the bundle names the inputs: no local absolute path, nothing that escapes the bundle's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.bundle.build import display_name, member_path


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("/work/run/node0/server.log", "node0/server.log"),  # inside the working folder: relative to it
        ("/srv/logs/server.log", "server.log"),  # elsewhere: its file name
        ("node0/server.log", "node0/server.log"),  # as given
        ("/srv/logs/all.tar:rank3/server.log", "all.tar:rank3/server.log"),  # a member of an archive
        ("<stdin>", "<stdin>"),
    ],
)
def test_display_names_hold_no_local_absolute_path(name: str, shown: str) -> None:
    assert display_name(name, Path("/work/run")) == shown


@pytest.mark.parametrize(
    ("name", "member"),
    [
        ("../../etc/passwd", "etc/passwd"),
        ("all.tar:rank3/server.log", "all.tar/rank3/server.log"),
        ("server.log.gz", "server.log"),  # the bundle holds the decompressed text
        ("./a/./b.log", "a/b.log"),
        ("..", "log"),
    ],
)
def test_member_paths_stay_inside_the_bundle(name: str, member: str) -> None:
    assert member_path(name) == member
