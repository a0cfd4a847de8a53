"""`cosydesk engines build` on the v2-tiny fixture: builds three engines, a second run rebuilds nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cosydesk.runtime.backends.tensorrt.flavour import load_flavour
from tests.support.paths import REPO_ROOT, fixture_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.heavy,
    pytest.mark.skipif(load_flavour("tensorrt_rtx") is None, reason="tensorrt_rtx not installed (pip install tensorrt-rtx-cu13)"),
]


def _build(model, engines) -> str:
    done = subprocess.run([sys.executable, "-m", "cosydesk", "engines", "build", "--model", str(model),
                           "--engines-dir", str(engines), "--flavour", "tensorrt_rtx"],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=1500)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_engines_build_twice_rebuilds_nothing(tmp_path):
    model, engines = fixture_dir("v2") / "model", tmp_path / "engines"
    first = _build(model, engines)
    assert first.count("built (miss)") == 3, first
    plans = sorted(p.name for p in engines.glob("*.plan"))
    assert plans == ["flow_estimator-fp16.plan", "flow_estimator_streaming-fp16.plan", "hift_head-fp16.plan"]
    stamps = {p: p.stat().st_mtime_ns for p in engines.iterdir()}
    second = _build(model, engines)
    assert second.count("cached, nothing rebuilt") == 3, second
    assert {p: p.stat().st_mtime_ns for p in engines.iterdir()} == stamps
