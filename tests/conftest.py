"""Shared test set-up: offscreen Qt, ALSA capture, numeric comparison helpers, shared fixtures (golden tensors,
tiny models, an isolated user-data folder). Paths and fixture readers: tests/support/paths.py."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Without a GPU, Triton kernels (the cudagraph backend's decode kernels) run in Triton's CPU interpreter;
# the variable must be set before those kernels are defined.
try:
    import torch as _torch

    _HAS_CUDA = _torch.cuda.is_available()
except ImportError:
    _HAS_CUDA = False
if not _HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def _interpret_without_overflow_checks() -> None:
    """The interpreter checks every integer add / multiply of a kernel for int32 overflow, which is ~60 % of its
    time in the conv and decode kernels' tests. A compiled kernel has no such check, and a test's small tensors
    cannot reach int32 offsets, so the tests run without it (numerics unchanged)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.runtime import interpreter
    except ImportError:  # no Triton: its tests skip themselves
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    if builder is not None and getattr(builder.options, "sanitize_overflow", False):
        import dataclasses

        builder.options = dataclasses.replace(builder.options, sanitize_overflow=False)


_interpret_without_overflow_checks()

# every interpreted kernel launch, compiled for Hopper when the session ends (tests/support/triton_compile.py)
_LAUNCHES = None
if os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("COSYDESK_TEST_TRITON_COMPILE", "1") != "0":
    from tests.support.triton_compile import LaunchRecorder, compiler_available

    if compiler_available():
        _LAUNCHES = LaunchRecorder()
        if not _LAUNCHES.install():
            _LAUNCHES = None


def pytest_sessionfinish(session, exitstatus):
    """Fail the session when a kernel launch the tests interpreted does not compile for sm_90."""
    if _LAUNCHES is None or not _LAUNCHES.specs:
        return
    import time

    from tests.support.triton_compile import code_paths, compile_specs

    start = time.perf_counter()
    specs = code_paths(list(_LAUNCHES.specs))  # sorted there
    failures = compile_specs(specs)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"Triton: {len(specs)} code paths of {len(_LAUNCHES.specs)} interpreted kernel launch shapes compiled "
             f"for sm_90 in {time.perf_counter() - start:.0f} s, {len(failures)} failed ({_LAUNCHES.unrecorded} "
             "launches not describable)"]
    lines += [f"  {f['spec']}: {f['error']}" for f in failures]
    if reporter is not None:
        reporter.write_sep("-", "Triton kernels compiled for Hopper")
        for line in lines:
            reporter.write_line(line)
    if failures:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

cuda = pytest.mark.skipif(not _HAS_CUDA, reason="needs CUDA")
# Triton kernels take CPU tensors only in its interpreter: Triton decides at kernel definition (set above,
# only without a GPU)
interpreted = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                 reason="CPU tensors need Triton's interpreter (TRITON_INTERPRET=1)")

# PortAudio reads the ALSA config once, at `import sounddevice`: route the default device into a capture
# file before any test imports it, so playback tests can compare what was played with what was produced.
from tests.support.alsa_capture import install_alsa_file_capture  # noqa: E402

_ALSA_DIR = tempfile.mkdtemp(prefix="cosydesk-alsa-")
atexit.register(shutil.rmtree, _ALSA_DIR, ignore_errors=True)
install_alsa_file_capture(_ALSA_DIR)

# Paths and fixture readers live in tests/support/paths.py (tests import them from there).
from tests.support.paths import fixture_dir, load_golden  # noqa: E402


def assert_close(ours, ref, atol: float, what: str = "") -> None:
    """max |ours - ref| <= atol, scaled by max|ref| when that is above 1 (the issue's tolerance rule)."""
    ours = np.asarray(ours.detach().cpu() if hasattr(ours, "detach") else ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != reference {ref.shape}"
    scale = max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
    err = float(np.abs(ours - ref).max()) if ref.size else 0.0
    assert err <= atol * scale, f"{what}: max abs error {err:.3g} > {atol * scale:.3g}"


def official_v1_llm():
    """The v1 fixture's TransformerLM, loaded from its official llm.pt (float32, eval)."""
    from cosydesk.model.checkpoint import load_strict, read_state_dict
    from cosydesk.model.config import read_yaml
    from cosydesk.model.llm_v1 import TransformerLM

    cfg = read_yaml(fixture_dir("v1") / "model" / "cosyvoice.yaml")
    model = TransformerLM.from_config(cfg["llm"]).eval()
    load_strict(model, read_state_dict(fixture_dir("v1") / "model" / "llm.pt"), "llm.pt")
    return model


def v1_llm_case(golden: dict[str, np.ndarray], case: str) -> tuple:
    """(text, prompt_text, prompt_speech_token, embedding) of the v1 golden LLM case "zs" or "sft"."""
    import torch

    text = torch.from_numpy(golden["llm_text"])
    if case == "zs":
        return (text, torch.from_numpy(golden["spk_zeroshot_prompt_text"]),
                torch.from_numpy(golden["spk_zeroshot_prompt_speech_token"]),
                torch.from_numpy(golden["spk_zeroshot_embedding"]))
    empty = torch.zeros(1, 0, dtype=torch.int32)
    return text, empty, empty, torch.from_numpy(golden["spk_sft_embedding"])


@pytest.fixture(scope="session")
def golden_v1():
    return load_golden("v1")


@pytest.fixture(scope="session")
def golden_v2():
    return load_golden("v2")


@pytest.fixture(scope="session")
def golden_v3():
    return load_golden("v3")


_TINY_CACHE: dict[tuple[str, int], Path] = {}


def tiny_model(version: str, tmp_root: Path, seed: int = 0) -> Path:
    """A complete tiny official-format model folder (written once per test session)."""
    key = (version, seed)
    if key not in _TINY_CACHE:
        from cosydesk.synthetic.tiny_model import write_tiny_model

        _TINY_CACHE[key] = write_tiny_model(tmp_root / f"tiny-{version}-{seed}", version=version, seed=seed)
    return _TINY_CACHE[key]


@pytest.fixture(scope="session")
def tiny_v1_dir(tmp_path_factory):
    return tiny_model("v1", tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def tiny_v2_dir(tmp_path_factory):
    return tiny_model("v2", tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def tiny_v3_dir(tmp_path_factory):
    return tiny_model("v3", tmp_path_factory.getbasetemp())


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty user-data folder (COSYDESK_DATA_DIR) and a models folder, both private to the test."""
    folder = tmp_path / "userdata"
    folder.mkdir()
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(folder))
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(tmp_path / "models"))
    return folder
