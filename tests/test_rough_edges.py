"""The rough edges a new operator met (issue 30), each fixed: install words, URLs, help defaults, a bar's rank,
a redrawn line quoted once, and every example in the README and docs/operations.md a command line logphase takes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest

from logphase.cli import main
from tests.conftest import REPO, run_cli

README = (REPO / "README.md").read_text()
OPERATIONS = (REPO / "docs" / "operations.md").read_text()


def test_the_readme_installs_from_the_clone_and_says_what_make_test_costs() -> None:
    # GIVEN logphase is not on PyPI THEN the README never tells anyone to `pip install logphase`
    assert "pip install logphase" not in README
    assert "`pip install .` in a clone" in README
    # AND it says what `make test` installs and how long it runs
    assert re.search(r"make test +# installs .*torch 2\.13 CPU\), runs them all \(~13 min\)", README)


@pytest.mark.parametrize("url", ["notaurl", "/health", "ftp://host:1/health"])
def test_watch_refuses_a_url_that_names_no_server(url: str, tmp_path: Path) -> None:
    result = run_cli("watch", str(tmp_path / "server.log"), "--url", url)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith(f"logphase: error: --url {url!r} is not")
    assert result.stderr.splitlines()[1].startswith("  hint: write it as http://HOST:PORT")


@pytest.mark.parametrize("url", ["127.0.0.1:30000", "localhost:8000/health_generate", "http://server"])
def test_watch_takes_host_and_port_without_a_scheme(url: str) -> None:
    from logphase.watch.health import parse_url

    parsed = parse_url(url)
    assert (parsed.scheme, parsed.path.startswith("/health")) == ("http", True)


def test_watch_help_shows_its_format_default_as_one_types_it() -> None:
    out = run_cli("watch", "--help").stdout
    assert "[default: text]" in " ".join(out.split())
    assert "TEXT]" not in out


def test_explain_gives_an_untagged_bar_to_the_lowest_rank_as_analyze_does() -> None:
    # GIVEN a tqdm bar of weight loading (no rank tag), which analyze gives to the lowest rank
    bar = "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:03,  1.00it/s]"
    out = run_cli("patterns", "explain", bar).stdout.splitlines()
    # THEN explain says so, not "(main process)"
    assert out[2] == "rank:    (no tag: the lowest rank's, as a progress bar is rank 0's)"
    # AND a line of the main process is still the main process's
    ready = run_cli("patterns", "explain", "[2026-01-01 10:00:30] The server is fired up and ready to roll!")
    assert ready.stdout.splitlines()[2] == "rank:    (main process)"


def test_a_line_redrawn_with_carriage_returns_is_quoted_once_in_the_context(tmp_path: Path) -> None:
    # GIVEN a log that ends inside a capture bar redrawn on one physical line (line 2)
    log = tmp_path / "server.log"
    bar = "Capturing batches (bs={0} avail_mem=13.98 GB):  {1}%|##  | {2}/16 [00:0{2}<00:10,  1.53it/s]"
    log.write_text(
        "[2025-06-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.55 GB\n"
        + "\r".join(bar.format(bs, 6 * n, n) for n, bs in ((1, 64), (2, 48)))
        + "\n"
    )
    # WHEN analysed THEN the root cause's context names each line once, line 2 as its last redraw reads
    root = json.loads(run_cli("analyze", "--post-mortem", str(log), "--format", "json").stdout)["root_cause"]
    assert root["line"] == 2
    assert [c["line"] for c in root["context"]] == [1, 2]
    assert root["context"][1]["text"] == bar.format(48, 12, 2)


def _examples(text: str) -> list[list[str]]:
    """`logphase …` command lines of the fenced blocks, their comments and pipes cut off."""
    found = []
    for block in re.findall(r"```(?:\w*)\n(.*?)```", text, re.DOTALL):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            start = line.find("logphase ")
            if start < 0 or line.startswith(("#", "PS1", "-", "command")):
                continue
            command = line[start:].split("   #")[0].split("  #")[0]
            try:
                words = shlex.split(command, comments=True)
            except ValueError:
                continue  # inside a quoted shell string of a recipe (its own quotes)
            words = words[: next((i for i, w in enumerate(words) if w in ("|", ">", "||", "&&", ";")), len(words))]
            ends = next(
                (i for i, w in enumerate(words) if w.endswith(";")), None
            )  # `…; rc=$?`: the shell's next command
            if ends is not None:
                words = [*words[:ends], words[ends].removesuffix(";")]
            if words and words[0] == "logphase":
                found.append(words[1:])
    return found


def _help_examples() -> list[list[str]]:
    """The `Examples:` of every command's --help."""
    found = []
    for name, command in main.commands.items():
        help_text = command.help or ""
        for line in help_text.split("Examples:", 1)[1].splitlines() if "Examples:" in help_text else []:
            if line.strip().startswith("logphase "):
                words = shlex.split(line.strip())
                words = words[: next((i for i, w in enumerate(words) if w in ("|", ">")), len(words))]
                found.append(words[1:])
        assert name
    return found


def test_every_example_is_a_command_line_logphase_takes() -> None:
    # GIVEN every `logphase …` example of the README, docs/operations.md and the commands' --help
    examples = _examples(README) + _examples(OPERATIONS) + _help_examples()
    assert len(examples) > 30
    for words in examples:
        # WHEN its words are parsed as the CLI would (nothing runs) THEN click takes them
        words = [w for w in words if w not in ("…", "...")]
        if words[:2] == ["patterns", "list"] and "|" in words:
            continue
        with main.make_context("logphase", list(words), resilient_parsing=False) as context:
            name, command, rest = main.resolve_command(context, list(words))
            assert command is not None, words
            try:
                command.make_context(name, rest, parent=context)
            except click.UsageError as error:
                raise AssertionError(f"{' '.join(words)}: {error.format_message()}") from None
