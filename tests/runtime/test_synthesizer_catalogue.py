"""Synthesizer("CosyVoice2-0.5B"): a catalogue name is downloaded on first use (from a hub on 127.0.0.1, nothing
leaves this machine) and found in the models folder afterwards; a folder still loads as a folder."""

from __future__ import annotations

import numpy as np
import pytest

from cosydesk import Request, Synthesizer, hub
from tests.hub_server import FakeHub
from tests.test_hub_download import _point_hub_at

NAME = "CosyVoice2-0.5B"


def _served_files(model_dir) -> dict[str, bytes]:
    return {path.relative_to(model_dir).as_posix(): path.read_bytes()
            for path in sorted(model_dir.rglob("*")) if path.is_file()}


def test_a_catalogue_name_downloads_on_first_use_then_loads_from_the_models_folder(tiny_v2_dir, tmp_path,
                                                                                      monkeypatch):
    models = tmp_path / "models"
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(models))
    stages = []
    with FakeHub(hub.catalogue_entry(NAME).hf_repo, _served_files(tiny_v2_dir)) as server:
        _point_hub_at(monkeypatch, tmp_path, server.url)
        synth = Synthesizer(NAME, device="cpu", progress=lambda stage, fraction: stages.append(stage))
        fetched = len(server.requests)
        again = Synthesizer(NAME, device="cpu")
        assert len(server.requests) == fetched, "an installed model was fetched again"
    assert synth.model_dir == again.model_dir == models / NAME and hub.check_model_dir(models / NAME).loadable
    assert any(stage.startswith(f"Downloading {NAME}") for stage in stages) and stages[-1] == "Ready"
    audio = synth.synthesize(Request("你好。", speaker=synth.speakers()[0], seed=1))
    assert audio.size > 0 and np.isfinite(audio).all()


def test_a_folder_is_a_folder_and_an_unknown_name_says_what_is_missing(tiny_v2_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "download_model", lambda *a, **k: pytest.fail("a folder must not download"))
    assert Synthesizer(tiny_v2_dir, device="cpu").model_dir == tiny_v2_dir
    with pytest.raises(ValueError, match="does not exist"):
        Synthesizer(tmp_path / "NotAModel", device="cpu")
