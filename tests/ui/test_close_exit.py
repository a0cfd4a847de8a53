"""Closing the window ends the process within a second (issue 26: it lingered 2-4 s idle and 7-18 s while
speaking, so a quick relaunch met the old instance). The real `cosydesk --model` runs in a child process
(tests/ui/close_driver.py) on the tiny model, offscreen; the worker is made to sit 60 s in a step that ignores
Stop (or in the model load), so a close that waited for it would take a minute."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.support.paths import REPO_ROOT

DRIVER = REPO_ROOT / "tests" / "ui" / "close_driver.py"
EXIT_WITHIN_S = 1.0


@pytest.mark.parametrize("moment", ["ready", "speaking", "loading", "frontend"])
def test_the_process_exits_within_a_second_of_the_window_closing(moment, tiny_v2_dir, tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1",
           "COSYDESK_DATA_DIR": str(tmp_path / "data"), "COSYDESK_MODELS_DIR": str(tmp_path / "models")}
    child = subprocess.Popen([sys.executable, str(DRIVER), str(tiny_v2_dir), moment], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT)
    try:
        closed_at = None
        for line in child.stdout:  # the child's clock: CLOCK_MONOTONIC is shared by every process here
            if line.startswith("closing "):
                closed_at = float(line.split()[1])
                break
        assert closed_at is not None, child.stderr.read()[-3000:]
        child.wait(timeout=120)
        exited_at = time.monotonic()
    finally:
        if child.poll() is None:
            child.kill()
    stderr = child.stderr.read()
    assert child.returncode == 0, stderr[-3000:]
    assert "QThread: Destroyed while thread" not in stderr
    assert exited_at - closed_at < EXIT_WITHIN_S, f"{moment}: exit took {exited_at - closed_at:.2f} s after close"
    assert (tmp_path / "data").is_dir()  # the app ran on its own data folder
