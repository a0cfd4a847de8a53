"""Soak: many utterances through one Synthesizer keep RSS flat (<= 2 % growth) and thread counts constant.

CI runs 60 utterances in a fresh process; the full 1,000 is `python -m cosydesk.testing.soak --model DIR --n 1000`
(its output is quoted in the issue note). A second test proves the instrument sees a leak when there is one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import torch

from cosydesk.testing import soak
from tests.conftest import REPO_ROOT

torch.set_num_threads(1)  # as the soak command does: it measures leaks, not speed


def test_sixty_utterances_keep_memory_and_threads_flat(tiny_v2_dir):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "cosydesk.testing.soak", "--model", str(tiny_v2_dir), "--n", "60",
                             "--warmup", "10", "--json"], capture_output=True, text=True, env=env, timeout=600)
    report = json.loads(result.stdout)
    print(json.dumps({k: v for k, v in report.items() if k != "rss_trace_mb"}))
    assert report["errors"] == 0 and report["utterances"] == 60 and report["audio_s"] > 0
    assert report["cancelled"] > 0  # Stop mid-way is part of the mix
    assert report["rss_growth_pct"] <= 2.0, report
    assert report["python_threads_end"] == report["python_threads_start"], report
    assert report["native_threads_end"] == report["native_threads_start"], report
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_soak_sees_a_leak(tiny_v2_dir, monkeypatch):
    """A Synthesizer that keeps 4 MB and one thread per request must fail both checks."""
    from cosydesk.runtime import Synthesizer

    kept: list[np.ndarray] = []
    release = threading.Event()
    original = Synthesizer.stream

    def leaky_stream(self, request, cancel=None):
        kept.append(np.ones(1 << 20, dtype=np.float32))  # 4 MB, touched so it is resident
        threading.Thread(target=release.wait, daemon=True).start()
        yield from original(self, request, cancel)

    monkeypatch.setattr(Synthesizer, "stream", leaky_stream)
    try:
        report = soak.run_soak(tiny_v2_dir, n=20, warmup=2)
    finally:
        release.set()
    assert report.rss_growth_pct > 2.0, report.lines()
    assert not report.threads_constant
    assert report.python_threads_end - report.python_threads_start == 20
