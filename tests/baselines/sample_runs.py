"""Two runs made by hand, as the store keeps them: one that became ready, one of two nodes labelled hung."""

from __future__ import annotations

from datetime import datetime

from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.records import PhaseRecord, RunRecord, StopPoint
from logphase.phases import Phase, Verdict

QWEN_TP2 = Fingerprint(system="sglang", version="0.5.2", model_path="Qwen/Qwen3-32B", tp_size=2)
# A run that became ready 212 s after its first line (3m32s), recorded as it came.
READY = RunRecord(
    fingerprint=QWEN_TP2,
    verdict=Verdict.READY,
    phases=(
        PhaseRecord(Phase.WEIGHT_LOAD, 0.0, 95.0, 3, 20, True),
        PhaseRecord(Phase.CUDA_GRAPH, 100.0, 110.0, 25, 40, True),
        PhaseRecord(Phase.READY, 212.0, None, 43, 43, False),
    ),
    lines=43,
    stop=StopPoint(Phase.READY, False, 43),
    last_text="The server is fired up and ready to roll!",
    paths=("1.log",),
    content_hash="0123456789abcdef" * 4,
    head_hash="ab" * 32,
    started=datetime(2026, 5, 1, 10, 0, 0),
    ready_s=212.0,
    id=1,
    recorded_at=datetime(2026, 5, 1, 10, 5, 0),
)
# A run of two nodes that stalled in CUDA-graph capture, labelled hung by its user.
HUNG = RunRecord(
    fingerprint=QWEN_TP2,
    verdict=Verdict.STALLED,
    phases=(
        PhaseRecord(Phase.WEIGHT_LOAD, 0.0, 96.0, 3, 20, True),
        PhaseRecord(Phase.CUDA_GRAPH, 101.0, None, 25, 30, False),
    ),
    lines=30,
    stop=StopPoint(Phase.CUDA_GRAPH, False, 30),
    last_text="Capture cuda graph begin.",
    paths=("n0.log", "n1.log"),
    content_hash="feedc0de12345678" * 4,
    head_hash="cd" * 32,
    started=datetime(2026, 5, 2, 8, 58, 0),
    ready_s=None,
    label="hung",
    id=2,
    recorded_at=datetime(2026, 5, 2, 9, 0, 0),
)
