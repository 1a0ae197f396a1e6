"""Cutting a huge log: which lines are kept, and how the excerpt shows the original line numbers."""

from __future__ import annotations

from logphase.bundle.excerpt import Excerpt, choose, render


def test_head_tail_and_windows_around_marks_are_kept_and_merged() -> None:
    # GIVEN a log of 10,000 lines with marks at 500 (inside the head), 5000, 5010 and 9990 (inside the tail)
    excerpt = choose(10_000, [500, 5000, 5010, 9990, 0, 20_000], head=100, tail=100, around=5)
    # THEN head, one merged window around 5000–5010, and tail; marks outside the log are ignored
    assert excerpt.kept == ((1, 100), (495, 505), (4995, 5015), (9901, 10_000))
    assert excerpt.cut == ((101, 494), (506, 4994), (5016, 9900))
    assert excerpt.kept_lines == 100 + 11 + 21 + 100
    assert excerpt.describe() == "kept 232 of 10,000 lines: 1–100, 495–505, 4995–5015, 9901–10000"


def test_a_short_log_is_kept_whole() -> None:
    # GIVEN fewer lines than head + tail
    excerpt = choose(150, [], head=100, tail=100)
    # THEN one range, nothing cut
    assert (excerpt.kept, excerpt.cut) == (((1, 150),), ())


def test_marks_beyond_the_limit_keep_only_the_first() -> None:
    # GIVEN an error on every line of a 10,000-line log
    excerpt = choose(10_000, range(1, 10_001), head=0, tail=0, around=0, max_marks=3)
    # THEN only the first three marks keep their window
    assert excerpt.kept == ((1, 3),)


def test_render_numbers_each_kept_line_and_marks_each_cut() -> None:
    # GIVEN a 12-line log of which 1–2, 6 and 11–12 are kept
    lines = [(number, f"line {number}") for number in range(1, 13)]
    excerpt = Excerpt(total=12, kept=((1, 2), (6, 6), (11, 12)))
    # WHEN rendered THEN each kept line opens with its original number, each cut is one marker line
    assert list(render(lines, excerpt)) == [
        " 1: line 1",
        " 2: line 2",
        "..  [lines 3–5 cut: 3 lines]",
        " 6: line 6",
        "..  [lines 7–10 cut: 4 lines]",
        "11: line 11",
        "12: line 12",
    ]


def test_render_marks_a_cut_at_the_start_and_at_the_end() -> None:
    # GIVEN only line 3 of 5 kept, and a physical line the reader yields no text for (line 4)
    lines = [(1, "a"), (2, "b"), (3, "c"), (5, "e")]
    excerpt = Excerpt(total=5, kept=((3, 3),))
    # THEN markers before and after it
    assert list(render(lines, excerpt)) == [".  [lines 1–2 cut: 2 lines]", "3: c", ".  [lines 4–5 cut: 2 lines]"]
