"""The CUDA allocator setting (``runtime.allocator``): every entry point runs with expandable segments, as the
benchmarks measured, unless the user chose an allocator setting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cosydesk.runtime.allocator import EXPANDABLE_SEGMENTS, prefer_expandable_segments
from tests.support.paths import REPO_ROOT


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_sets_expandable_segments_when_nothing_is_set(clean_env):
    import torch

    if torch.cuda.is_initialized():  # an earlier GPU test of this process: too late for any setting now
        assert prefer_expandable_segments() is False
        return
    assert prefer_expandable_segments() is True
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == EXPANDABLE_SEGMENTS


@pytest.mark.parametrize("name", ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"])
def test_a_users_setting_wins(clean_env, name):
    clean_env.setenv(name, "max_split_size_mb:64")
    assert prefer_expandable_segments() is False
    assert os.environ[name] == "max_split_size_mb:64"
    assert os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") in ("", "max_split_size_mb:64")


def test_the_cli_sets_it_before_anything_runs():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    code = ("import os, sys; from cosydesk.cli import main\n"
            "try:\n    main(['bench', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('CONF=' + os.environ.get('PYTORCH_CUDA_ALLOC_CONF', ''))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"CONF={EXPANDABLE_SEGMENTS}" in out.stdout


def test_a_synthesizer_sets_it_before_it_loads(clean_env, tiny_v2_dir):
    from cosydesk.runtime.synthesizer import Synthesizer

    Synthesizer(tiny_v2_dir, device="cpu")
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == EXPANDABLE_SEGMENTS
