"""Ingest: a followed log's lines into its SourceScan as they arrive, timed by arrival; observations of it, pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.baselines.fingerprint import FingerprintCollector
from logphase.baselines.records import StopPoint, stop_point
from logphase.frames import TRIGGER
from logphase.judging.budgets import Budgets
from logphase.judging.logs import CLOCK_SLACK_S, Judgement, judge
from logphase.logs.fast import FollowRuns, plan_for
from logphase.logs.fast.caches import FastCaches
from logphase.logs.matcher import Event
from logphase.logs.reader import Line
from logphase.logs.templates import TemplateMiner
from logphase.logs.timeline import Timeline, TimelineBuilder
from logphase.packs import PackSet
from logphase.phases import Phase
from logphase.scan import ScanResult, SourceScan
from logphase.watch.health import Probe
from logphase.watch.state import Observation


@dataclass
class Ingest:
    """Keeps one SourceScan (the matcher, timeline builder, dumps and contexts of `analyze`'s scan)
    and pushes each batch of new lines into it once: the cost of a tick is the new lines, never the
    whole log.

    Times are of two clocks: the log's own stamps, and `arrived` (seconds on the watcher's
    monotonic clock when a batch came in). Silence is measured with differences within each
    clock only, so a log written in another time zone, or by a host with a skewed clock, is
    judged right; a live line is timed by its arrival, not by its whole-second stamp."""

    packs: PackSet
    reference: datetime  # dates year-less stamps (SourceMatcher)
    fast: bool = True  # steady runs summarised (logs/fast/ FollowRuns); the same state either way
    name: str = "<stdin>"  # the log's, for the notes
    caches: FastCaches = field(default_factory=FastCaches)  # the fast path's plans and scanners
    runs: FollowRuns | None = field(init=False)
    builder: TimelineBuilder = field(init=False)
    scan: SourceScan = field(init=False)
    scanned: ScanResult = field(init=False)
    fingerprint: FingerprintCollector = field(init=False)
    lines: int = 0
    last_line: Line | None = None
    log_time: datetime | None = None  # the latest stamp seen in the log
    log_time_arrived: float | None = None
    progress: Event | None = None
    progress_arrived: float | None = None
    backlog: float = 0.0  # seconds of log time between the progress and the end of its batch
    _timeline: Timeline | None = None
    _judgement: Judgement | None = None
    _stop: StopPoint | None = None

    def __post_init__(self) -> None:
        # the user's packs' facts too
        self.builder = TimelineBuilder(job_systems=self.packs.job_systems, dumps=self.packs.dump_patterns)
        self.fingerprint = FingerprintCollector(formats=self.packs.server_args)
        self.scanned = ScanResult(timeline=self.builder.finish(), unrecognised=TemplateMiner(self.packs))
        self.scan = SourceScan(0, self.name, self.packs, self.reference, self.builder, self.scanned)
        plan = plan_for(self.packs, (TRIGGER,), self.caches.plans)
        self.runs = FollowRuns(plan, cache=self.caches.scanners) if self.fast and plan.enabled else None

    @property
    def skipped_lines(self) -> int:
        """Steady-run lines the matcher never read."""
        return self.scan.skipped_events

    def feed(
        self, lines: Sequence[Line], arrived: float, *, wall: datetime | None = None, modified: datetime | None = None
    ) -> None:
        """Lines that came in at `arrived`. `wall` (the wall clock then) is given for lines written before the
        watch read them (an existing file caught up): they are timed as analyze times a log, by the log's own
        clock (the batch's newest stamp is when it was written), so that watch and analyze judge a finished
        file alike; by `modified` (the file's mtime) where the log has no stamps or its clock runs ahead of
        the wall clock (another time zone, a skewed host), as analyze then measures silence on each clock."""
        if not lines:
            return
        if not self.fingerprint.done:
            self.fingerprint.feed_all(line.text for line in lines)
        added = self.scan.push_batch(lines, self.runs)
        self.last_line = lines[-1]
        self.lines = max(self.lines, lines[-1].number)
        matcher, builder = self.scan.matcher, self.builder
        assert matcher is not None
        if wall is not None:
            arrived -= _age(matcher.last_time, wall, modified)
        if matcher.last_time is not None and matcher.last_time != self.log_time:
            self.log_time, self.log_time_arrived = matcher.last_time, arrived
        if builder.last_progress is not self.progress:
            self.progress, self.progress_arrived = builder.last_progress, arrived
            # caught up in one batch (an existing file): the log itself says how long ago it was;
            # stamps have whole seconds, so one second of difference is no evidence
            stamped = self.progress.time if self.progress is not None else None
            gap = (matcher.last_time - stamped).total_seconds() if matcher.last_time and stamped else 0.0
            self.backlog = max(0.0, gap - 1.0)
        if added:
            self._timeline = self._judgement = self._stop = None

    @property
    def open_block(self) -> int | None:
        """The traceback or dump the lines fed so far leave open (its first line), or None."""
        matcher = self.scan.matcher
        return matcher.open_block if matcher is not None else None

    def note(self, text: str) -> None:
        """What reading the log assumed (its envelopes: logphase/logs/envelope.py), for the final report."""
        self.scanned.notes.append(text)

    def end(self) -> None:
        """The input ended (or the watch does): events the matcher held back (a dump's last frames), and
        those the feed held for a stamp it had not yet believed (entered at the end, not returned): the
        timeline is built afresh either way."""
        self.scan.end()
        self._timeline = self._judgement = self._stop = None

    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = self.builder.finish()
        return self._timeline

    def scan_result(self) -> ScanResult:
        """What `analyze`'s scan would have left for the lines fed so far: the final report's input."""
        self.scanned.timeline = self.timeline()
        return self.scanned

    def judgement(self, budgets: Budgets, now: float, *, post_mortem: bool = False) -> Judgement:
        """Failure, ready and phase come from the lines; stalled vs progressing is `observe`'s
        (by arrival), so the judgement is only renewed when new events came in. Once the input
        ended, the log is a finished one: judged post-mortem, as analyze judges it."""
        if post_mortem:
            return judge(self.timeline(), as_of=self.log_now(now) or self.reference, post_mortem=True, budgets=budgets)
        if self._judgement is None:
            log_now = self.log_now(now) or self.reference
            self._judgement = judge(self.timeline(), as_of=log_now, post_mortem=False, budgets=budgets)
        return self._judgement

    def stop_point(self) -> StopPoint:
        if self._stop is None:
            self._stop = stop_point(self.timeline().spans, self.lines)
        return self._stop

    def log_now(self, now: float) -> datetime | None:
        """The log's clock now: its latest stamp plus the time since that stamp arrived."""
        if self.log_time is None or self.log_time_arrived is None:
            return None
        return self.log_time + timedelta(seconds=max(0.0, now - self.log_time_arrived))

    def silence(self, now: float, since: float) -> float:
        """Seconds without progress as of `now`: since the progress arrived, plus how far the log
        had already gone past it when it arrived; `since` (the watch's start) when there was none."""
        if self.progress is None or self.progress_arrived is None:
            return now - since
        return max(0.0, now - self.progress_arrived) + self.backlog

    def in_phase(self, phase: Phase | None, now: float) -> float | None:
        """How long the server has been in `phase`: from the phase's first stamp to the log's now."""
        log_now = self.log_now(now)
        if phase is None or log_now is None:
            return None
        starts = [s.start for s in self.timeline().spans if s.phase is phase and s.start is not None]
        return max(0.0, (log_now - min(starts)).total_seconds()) if starts else None

    def observe(
        self,
        now: float,
        *,
        since: float,
        budgets: Budgets,
        probe: Probe | None = None,
        process_alive: bool | None = None,
        input_ended: bool = False,
    ) -> Observation:
        if input_ended:
            judgement: Judgement | None = self.judgement(budgets, now, post_mortem=True)
        else:
            judgement = self.judgement(budgets, now) if self.builder.events else None
        stop = self.stop_point()
        return Observation(
            t=now,
            lines=self.lines,
            judgement=judgement,
            stop=stop,
            in_phase_s=self.in_phase(stop.phase, now),
            silence_s=self.silence(now, since),
            last_progress_line=self.progress.line if self.progress else None,
            probe=probe,
            process_alive=process_alive,
            input_ended=input_ended,
            open_block=None if input_ended else self.open_block,
        )


def _age(stamp: datetime | None, wall: datetime, modified: datetime | None) -> float:
    """Seconds since lines written before they were read were written: by their newest stamp where the log's
    clock is not ahead of `wall`, else by the file's mtime; 0 where neither says."""
    if stamp is not None and (stamp - wall).total_seconds() <= CLOCK_SLACK_S:
        return max(0.0, (wall - stamp).total_seconds())
    if modified is not None:
        return max(0.0, (wall - modified).total_seconds())
    return 0.0
