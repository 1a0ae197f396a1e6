"""The fast path: one pass over a log's bytes that hands the matcher only the lines it needs (grep speed on big logs).

Seams, in pipeline order: factors (what a rule's lines must contain) → plan (per pack set) →
scanners (bytes → hits) and templates (line shapes) → candidates (the compiled scan of one
source) → runs (steady-run book-keeping) → the chunk's walk: chunk (its lines' starts and numbers),
steady (SteadyRuns: the runs' members it must read), witness (ClockWitness: the lines the matcher's
clock needs, asking envelope_clock for an envelope's time, rollover for a time of day's midnight,
hours for lines in another hour, each of the matcher's Clock, logs/clock.py) → lines (FastLines, a
file: the walk; its envelopes' prefixes are in its templates) and follow (FollowRuns, watch's
batches); stats (ScanStats) is what they counted instead of reading, for the caller; ranges
(`--jobs`) has worker processes scan a big file's ranges ahead of FastLines' walk.
"""

from logphase.logs.fast.follow import FollowRuns
from logphase.logs.fast.lines import FastLines
from logphase.logs.fast.plan import Plan, plan_for
from logphase.logs.fast.stats import ScanStats

__all__ = ["FastLines", "FollowRuns", "Plan", "ScanStats", "plan_for"]
