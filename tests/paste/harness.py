"""The paste-proof comparison: a log judged plain and wrapped must give the same answer.

`python -m tests.paste.harness` measures the invariance rate over every (log, wrapper) pair and pair of
wrappers and prints the residual failures by kind (the figure BENCHMARKS.md and the report quote)."""

from __future__ import annotations

import random
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from logphase import pipeline
from logphase.logs.reader import open_sources
from logphase.packs import PackSet
from tests.conftest import FIXTURES, REALWORLD, SHARED, shipped_packs
from tests.paste.wrappers import BY_NAME, PAIRS, WRAPPERS, line_times

FIXTURE_LOGS = sorted((FIXTURES / "logs").glob("*/*.log"))
# The realworld logs copied into the repo, and those added to ../shared/realworld since (when it is beside)
REAL_LOGS = sorted((REALWORLD / "logs").glob("*.log"))
REAL_LOGS += sorted(
    log for log in (SHARED / "realworld" / "logs").glob("*.log") if log.name not in {c.name for c in REAL_LOGS}
)
# Every wrapper alone, then the pairs (inner+outer).
AS_OF = datetime.now()
COMBINATIONS: tuple[tuple[str, ...], ...] = (*((w.name,) for w in WRAPPERS), *PAIRS)


@dataclass(frozen=True)
class Answer:
    """What must not change when a log is wrapped: the verdict, the phases, the root cause's text
    (the plain line it maps back to) and rank."""

    verdict: str
    phase: str | None
    furthest_phase: str | None
    root_text: str | None
    root_rank: str | None

    @classmethod
    def of(cls, report: dict[str, Any]) -> Answer:
        root = report["root_cause"]
        return cls(
            verdict=report["verdict"],
            phase=report["phase"],
            furthest_phase=report["furthest_phase"],
            root_text=root["text"].strip() if root else None,
            root_rank=root["rank"] if root else None,
        )


def differences(plain: Answer, wrapped: Answer) -> list[str]:
    """The kinds in which the wrapped log's answer differs from the plain one's. A rank the envelope
    supplied where the plain log named none (srun's `3: `, torchrun's `[default3]:`) is knowledge
    gained, not a difference."""
    kinds = [kind for kind in ("verdict", "phase", "furthest_phase") if getattr(plain, kind) != getattr(wrapped, kind)]
    if plain.root_text != wrapped.root_text:
        kinds.append("root_cause_text")
    elif plain.root_rank is not None and plain.root_rank != wrapped.root_rank:
        kinds.append("root_cause_rank")
    return kinds


def packs() -> PackSet:
    return shipped_packs()


def plain_lines(log: Path) -> list[str]:
    text = log.read_bytes().decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def wrap(log: Path, names: Sequence[str]) -> bytes:
    """The log through the named wrappers, innermost first; seeded by the log and the wrappers."""
    lines = plain_lines(log)
    data = b""
    for name in names:
        rng = random.Random(zlib.crc32(f"{log.name}|{'+'.join(names)}|{name}".encode()))
        data = BY_NAME[name].generate(lines, rng, line_times(lines, packs(), rng))
        lines = data.decode("utf-8", "surrogateescape").split("\n")[:-1]
    return data


def judge(path: Path) -> Answer:
    """`logphase analyze --post-mortem PATH` (a pasted excerpt is a finished log), with the packs loaded once and
    given to the reading as analyze gives them (a leading column is learned where they read more without it)."""
    sources = open_sources([str(path)], packs=packs())
    report = pipeline.report(sources, packs(), pipeline.Options(as_of=AS_OF, post_mortem=True))
    return Answer.of(report.to_json())


@cache
def judge_plain(log: Path) -> Answer:
    return judge(log)


def judge_wrapped(log: Path, names: Sequence[str], folder: Path) -> Answer:
    path = folder / f"{'+'.join(names)}-{log.name}"
    path.write_bytes(wrap(log, names))
    return judge(path)


def measure(logs: Sequence[Path]) -> tuple[int, list[tuple[str, str, list[str]]]]:
    failures: list[tuple[str, str, list[str]]] = []
    total = 0
    with tempfile.TemporaryDirectory() as folder:
        for log in logs:
            plain = judge_plain(log)
            for names in COMBINATIONS:
                total += 1
                found = differences(plain, judge_wrapped(log, names, Path(folder)))
                if found:
                    failures.append((log.name, "+".join(names), found))
    return total, failures


def main(argv: Sequence[str]) -> int:
    logs = [*FIXTURE_LOGS, *REAL_LOGS]
    total, failures = measure(logs)
    print(f"{len(logs)} logs x {len(COMBINATIONS)} wrappings = {total} pairs")
    print(f"invariant: {total - len(failures)}/{total} = {(total - len(failures)) / total:.3f}")
    by_wrapper = Counter(wrapper for _, wrapper, _ in failures)
    by_kind = Counter(kind for _, _, kinds in failures for kind in kinds)
    print("failures by wrapper:", dict(by_wrapper.most_common()))
    print("failures by kind:", dict(by_kind.most_common()))
    if "-v" in argv:
        for log, wrapper, kinds in failures:
            print(f"  {wrapper:40} {log:60} {','.join(kinds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
