"""Issue 16's measurement: three runs of a 4-rank SGLang setup recorded, the same setup live in dist_init."""

from __future__ import annotations

import json
from pathlib import Path

from tests.baselines.scaled_runs import scaled
from tests.conftest import REALWORLD, run_cli

# SGLang 0.4.3 TP4 QwQ-32B (realworld case 001, the repo's copy): dist_init 12:29:11–13 (2 s), first `Load weight
# begin` 12:29:13 (line 25), ready 12:29:33 (line 83).
LOG = REALWORLD / "logs" / "001_sglang-qwq32b-tp4-ready.log"
SCALES = (0.8, 1.1, 1.3)


def test_live_in_dist_init_gets_the_runs_time_to_ready_and_is_not_overdue(tmp_path: Path) -> None:
    # GIVEN three successful runs of the setup, 0.8×, 1.1× and 1.3× the real log's times
    original = LOG.read_bytes().decode("utf-8")
    db = tmp_path / "runs.db"
    logs = []
    for factor in SCALES:
        path = tmp_path / f"run-{factor}.log"
        path.write_bytes(scaled(original, factor).encode("utf-8"))
        logs.append(str(path))
    assert run_cli("runs", "add", *logs, "--db", str(db), "--as-of", "2025-12-31 00:00:00").exit_code == 0
    # AND the same setup live: 25 lines, 3 s after its first rank logged `Load weight begin`
    live = tmp_path / "live.log"
    live.write_bytes("".join(original.splitlines(keepends=True)[:25]).encode("utf-8"))
    result = run_cli(
        "analyze", "--live", "--as-of", "2025-03-08 12:29:16", "--db", str(db), str(live),
        "--baseline", "auto", "--format", "json",
    )  # fmt: skip
    baseline = json.loads(result.stdout)["baseline"]
    # THEN each phase's statistics are those of the runs as `runs show` gives them
    shown = [json.loads(run_cli("runs", "show", str(i), "--db", str(db), "--format", "json").stdout) for i in (1, 2, 3)]
    for row in baseline["phases"]:
        took = sorted(p["seconds"] for run in shown for p in run["phases"] if p["phase"] == row["phase"])
        assert (row["runs"], row["median"]) == (len(took), took[1]), row
    dist_init = next(row for row in baseline["phases"] if row["phase"] == "dist_init")
    assert dist_init["median"] == 2.0  # the issue saw 0 s
    # AND the ETA lies within what the runs still needed from 3 s into weight_load: 20 s − 3 s scaled
    # (12:29:13 → 12:29:33), i.e. 16 s × 0.8 … 26 s × 1.3 less the 3 s
    low, high = 0.8 * 20 - 3, 1.3 * 20 - 3
    assert low <= baseline["eta_s"] <= high and baseline["eta_s"] > 0
    assert low - 1 <= baseline["eta_range_s"][0] <= baseline["eta_range_s"][1] <= high + 1
    assert (baseline["runs_used"], baseline["eta_rough"], baseline["overdue"]) == (3, False, False)
    assert "; ready in ~" in baseline["summary"] and ", from 3 runs" in baseline["summary"]
    assert "overdue" not in baseline["summary"]
    # AND the table's first lines say it too, as the summary does
    table = run_cli(
        "analyze", "--live", "--as-of", "2025-03-08 12:29:16", "--db", str(db), str(live), "--baseline", "auto",
    ).stdout.splitlines()  # fmt: skip
    assert " · ready in ~" in table[1] and ", from 3 runs · as of 2025-03-08 12:29:16" in table[1]
