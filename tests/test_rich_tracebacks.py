"""rich's boxed tracebacks (rich.traceback, 10.x-13.x) read as CPython's. The format, from rich's source
(traceback.py `__rich_console__` / `_render_stack`, panel.py, box.py ROUNDED, syntax.py): a Panel titled
`Traceback (most recent call last)` (the title padded by a space, centred in the top border `╭─…─╮`), every row
`│ <text> │` padded to the width; a frame's row `<filename>:<lineno> in <name>` (13.x, file not on disk:
`in <name>:<lineno>`), wrapped at its spaces by rich's Text and folded inside a word longer than the row; the
excerpt `  <n> <code>` with `❱ ` before the frame's own line and the code's indentation drawn as `│   ` guides;
the bottom border `╰─…─╯`; then `<ExcType>: <message>` at the margin."""

from __future__ import annotations

from pathlib import Path

from logphase.packs import PackSet
from tests.conftest import Generated, judge_text, root_text
from tests.test_prefilter import reports

WIDTH = 80  # rich's console width where the output is no terminal
INNER = WIDTH - 4  # the Panel's sides and its padding of one


def top() -> str:
    title = " Traceback (most recent call last) "
    left = (WIDTH - 2 - len(title)) // 2
    return "╭" + "─" * left + title + "─" * (WIDTH - 2 - left - len(title)) + "╮"


def row(text: str = "") -> str:
    return "│ " + text.ljust(INNER) + " │"


def bottom() -> str:
    return "╰" + "─" * (WIDTH - 2) + "╯"


def code(number: int, text: str, *, marked: bool = False, width: int = 3) -> str:
    """A row of a frame's excerpt (syntax.py: the pointer or two spaces, the number right-justified, a space)."""
    return row(("❱ " if marked else "  ") + str(number).rjust(width) + " " + text)


TGI_FRAME = "/opt/conda/lib/python3.11/site-packages/text_generation_server/models/__init__.py"
# rich folds a word longer than the row: the path's first INNER characters, then the rest and ` in <name>`
TGI_MODEL_LOAD = [
    row(TGI_FRAME[:INNER]),
    row(TGI_FRAME[INNER:] + ":1170 in get_model"),
    row(),
    code(1169, "│   │   │   )"),
    code(1170, '│   │   raise NotImplementedError("sharded is not supported for this model")', marked=True, width=4),
    code(1171, "", width=4),
]


def test_a_whole_box_is_a_crash_caused_by_its_exception_line_and_placed_by_its_frames(tmp_path: Path) -> None:
    # GIVEN a rich traceback: its top border, a TGI model-load frame folded over two rows, its excerpt, the bottom
    # border and the exception line at the margin (every row as wide as the box: no hard-wrapped paste)
    text = [top(), *TGI_MODEL_LOAD, bottom(), "NotImplementedError: sharded is not supported for this model"]
    # WHEN it is judged
    report = judge_text(tmp_path, "\n".join(text) + "\n")
    # THEN a crash in weight_load (the frame anchor of get_model), caused by the exception line
    assert report["verdict"] == "crashed"
    assert report["phase"] == "weight_load"
    assert root_text(report) == "NotImplementedError: sharded is not supported for this model"
    assert report["root_cause"]["line"] == 9  # the border, six rows, the bottom border, then it


ACCELERATE_WAIT = [
    row("/home/user/.local/lib/python3.8/site-packages/accelerate/utils/other.py:81"),
    row("in wait_for_everyone"),
    row(),
    code(80, "│   ):"),
    code(81, "│   │   torch.distributed.barrier()", marked=True),
    code(82, "│   elif AcceleratorState().distributed_type == DistributedType.TPU:"),
]


def test_a_box_cut_at_both_ends_is_a_cut_traceback_at_its_marked_line(tmp_path: Path) -> None:
    # GIVEN rows of a box without its top border or its exception line: a frame wrapped at the space before `in`,
    # the excerpt's marked line, the paste cut before the bottom border
    report = judge_text(tmp_path, "\n".join([row(), *ACCELERATE_WAIT, row()]) + "\n")
    # THEN a crash, its cause the marked line (the nearest the excerpt comes to the exception)
    assert report["verdict"] == "crashed"
    assert root_text(report) == code(81, "│   │   torch.distributed.barrier()", marked=True)
    assert "its innermost frame's line: torch.distributed.barrier()" in report["reason"]


def test_rows_behind_a_pdsh_prefix_are_read_as_bare_ones(tmp_path: Path) -> None:
    # GIVEN the same cut rows, each behind pdsh's `host: ` label, the last one cut inside its path
    rows = [row(), *ACCELERATE_WAIT, row(), "│ /home/user/.local/lib/python3.8/site-pa"]
    report = judge_text(tmp_path, "".join(f"10.0.1.23: {line}\n" for line in rows))
    # THEN the same cut traceback
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith(code(81, "│   │   torch.distributed.barrier()", marked=True))


def test_rows_behind_docker_compose_and_torch_rank_prefixes_keep_the_rank(tmp_path: Path) -> None:
    # GIVEN a whole box printed by rank 1 under torchrun's `[rank1]: `, collected by docker compose
    lines = [top(), *TGI_MODEL_LOAD, bottom(), "NotImplementedError: sharded is not supported for this model"]
    report = judge_text(tmp_path, "".join(f"tgi-1  | [rank1]: {line}\n" for line in lines))
    # THEN rank 1 crashed in weight_load, caused by its exception line (quoted out of its envelope)
    assert report["verdict"] == "crashed"
    assert report["phase"] == "weight_load"
    assert root_text(report) == "[rank1]: NotImplementedError: sharded is not supported for this model"
    assert report["root_cause"]["rank"] == "rank 1"


def test_a_frame_without_its_file_opens_a_cut_traceback(tmp_path: Path) -> None:
    # GIVEN rows of rich 13's frame whose file was not on disk (`in <name>:<lineno>`, no excerpt), cut there
    report = judge_text(tmp_path, "\n".join([row("in _find_and_load:1360"), row()]) + "\n")
    # THEN an exception was printed, its text cut: a crash read from the frames
    assert report["verdict"] == "crashed"
    assert "a traceback's frames, cut before its first line" in report["reason"]


def test_a_table_drawn_with_the_same_sides_is_no_traceback(tmp_path: Path) -> None:
    # GIVEN a table whose rows look like a box's (a side, a path and a number, another side) and no frame's row
    rows = [row("/data/checkpoints/step-1000      3.2 GB"), row("/data/checkpoints/step-2000      3.2 GB")]
    report = judge_text(tmp_path, "\n".join(rows) + "\n")
    # THEN nothing failed
    assert report["verdict"] != "crashed"


def test_the_fast_path_reads_a_box_as_the_plain_one(tmp_path: Path, packs: PackSet, generated: Generated) -> None:
    # GIVEN a generated SGLang serving log (lines of shapes the fast path leaves unread once it knows them), in its
    # middle, behind the scheduler's own prefix, the end of a rich box pasted from its first frame (wrapped at its
    # space: both rows needed) to its exception line
    [serving] = generated("sglang-pooled", 300_000, 7)
    lines = serving.read_text().splitlines(keepends=True)
    box = [*ACCELERATE_WAIT, row(), bottom(), "ValueError: world size 3 does not divide 8 heads"]
    log = tmp_path / "serving.log"
    log.write_text("".join([*lines[:2000], *(f"[2026-03-02 09:16:23 TP0] {line}\n" for line in box), *lines[2000:]]))
    # WHEN it is read by both paths
    plain, fast = reports(log, packs)
    # THEN the same report, a crash caused by the exception line after the box
    assert fast == plain
    assert '"text": "[2026-03-02 09:16:23 TP0] ValueError: world size 3 does not divide 8 heads"' in plain


def test_a_frame_in_tgi_checkpoint_reader_places_the_crash_in_weight_load(tmp_path: Path) -> None:
    # GIVEN rows of a box cut at both ends: a TGI shard's frame in utils/weights.py (the checkpoint reader the
    # layers are built from: `Weights`), its marked line reading a tensor
    rows = [
        row("/usr/src/server/text_generation_server/utils/weights.py:140 in get_multi_weights_col"),
        row(),
        code(139, "│   │   else:"),
        code(140, '│   │   │   w = [self.get_sharded(f"{p}.weight", dim=0) for p in prefixes]', marked=True),
        row(),
    ]
    report = judge_text(tmp_path, "\n".join(rows) + "\n")
    # THEN a crash during weight_load
    assert report["verdict"] == "crashed"
    assert report["phase"] == "weight_load"
