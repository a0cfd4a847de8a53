"""Model catalogue, folder validation and downloads (the network is never touched: the hub call is faked)."""

from __future__ import annotations

import shutil
from pathlib import Path
import threading

import pytest

from cosydesk import hub
from tests.support.paths import fixture_dir


def _write_full_v2(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cosyvoice2.yaml").write_text("sample_rate: 24000\n")
    for name in ("llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v2.onnx"):
        (folder / name).write_bytes(b"x")
    blank = folder / "CosyVoice-BlankEN"
    blank.mkdir(exist_ok=True)
    for name in ("config.json", "vocab.json", "merges.txt"):
        (blank / name).write_text("{}")


def test_catalogue_has_recommended_default_and_repo_ids():
    assert hub.DEFAULT_MODEL == "CosyVoice2-0.5B"
    names = {m.name for m in hub.CATALOGUE}
    assert {"CosyVoice-300M-SFT", "CosyVoice-300M-Instruct", "CosyVoice-300M", "CosyVoice2-0.5B",
            "Fun-CosyVoice3-0.5B-2512"} <= names
    for info in hub.CATALOGUE:
        assert info.hf_repo == f"FunAudioLLM/{info.name}"
        assert info.size_gb > 0 and info.modes
    assert hub.catalogue_entry("funaudiollm/cosyvoice2-0.5b").version == "v2"
    with pytest.raises(KeyError, match="known models"):
        hub.catalogue_entry("nope")


def test_complete_folder_has_no_problems(tmp_path):
    _write_full_v2(tmp_path / "m")
    assert hub.validate_model_dir(tmp_path / "m") == []
    assert hub.check_model_dir(tmp_path / "m").version == "v2"


def test_empty_folder_explains_everything_missing(tmp_path):
    problems = hub.validate_model_dir(tmp_path)
    text = "\n".join(problems)
    assert "cosyvoice.yaml / cosyvoice2.yaml / cosyvoice3.yaml" in text
    for name in ("llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v*.onnx"):
        assert name in text
    assert not hub.check_model_dir(tmp_path).loadable


def test_v2_without_blanken_and_onnx(tmp_path):
    folder = tmp_path / "m"
    _write_full_v2(folder)
    shutil.rmtree(folder / "CosyVoice-BlankEN")
    (folder / "campplus.onnx").unlink()
    (folder / "flow.pt").write_bytes(b"")
    report = hub.check_model_dir(folder)
    assert any("CosyVoice-BlankEN/" in p for p in report.problems)
    assert any("flow.pt is empty" in p for p in report.problems)
    assert any("campplus.onnx" in p for p in report.missing_optional)


def test_official_tiny_fixtures_are_loadable_but_lack_onnx():
    for version in ("v1", "v2", "v3"):
        report = hub.check_model_dir(fixture_dir(version) / "model")
        assert report.version == version
        assert report.problems == [], report.problems
        assert any("campplus.onnx" in m for m in report.missing_optional)


def test_missing_and_file_paths(tmp_path):
    assert "does not exist" in hub.validate_model_dir(tmp_path / "absent")[0]
    (tmp_path / "f").write_text("x")
    assert "is a file" in hub.validate_model_dir(tmp_path / "f")[0]


def test_download_reports_progress_and_validates(tmp_path, monkeypatch):
    seen = []

    def fake_snapshot_download(repo_id, local_dir, allow_patterns, tqdm_class):
        assert repo_id == "FunAudioLLM/CosyVoice2-0.5B"
        assert "*.pt" in allow_patterns
        with tqdm_class(total=300, unit="B", desc="Downloading bytes") as bar:
            for _ in range(3):
                bar.update(100)
        _write_full_v2(Path(local_dir))  # what huggingface_hub does: everything goes into local_dir
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", fake_snapshot_download)
    out = hub.download_model("CosyVoice2-0.5B", tmp_path / "models", progress=lambda d, t, m: seen.append((d, t)))
    assert out == tmp_path / "models" / "CosyVoice2-0.5B"
    assert seen[-1] == (300, 300)
    assert hub.installed_models(tmp_path / "models") == [out]


def test_download_cancel_keeps_partial_files(tmp_path, monkeypatch):
    cancel = threading.Event()

    def fake_snapshot_download(repo_id, local_dir, allow_patterns, tqdm_class):
        (Path(local_dir) / "llm.pt.incomplete").write_bytes(b"abc")
        with tqdm_class(total=300, unit="B") as bar:
            bar.update(100)
            cancel.set()
            bar.update(100)
        raise AssertionError("cancel did not stop the download")

    monkeypatch.setattr(hub, "_snapshot_download", fake_snapshot_download)
    with pytest.raises(hub.DownloadCancelled):
        hub.download_model("CosyVoice2-0.5B", tmp_path / "models", cancel=cancel)
    assert (hub.staging_dir("CosyVoice2-0.5B", tmp_path / "models") / "llm.pt.incomplete").exists()
    assert not (tmp_path / "models" / "CosyVoice2-0.5B").exists()  # nothing that looks like an installed model


def test_download_without_network_says_so(tmp_path, monkeypatch):
    def offline(**kwargs):
        raise ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr(hub, "_snapshot_download", offline)
    with pytest.raises(hub.DownloadError, match="no network"):
        hub.download_model("CosyVoice-300M-SFT", tmp_path)


def test_data_dir_override(tmp_path, monkeypatch):
    monkeypatch.setenv("COSYDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("COSYDESK_MODELS_DIR", raising=False)
    assert hub.app_data_dir() == tmp_path / "data"
    assert hub.default_models_dir() == tmp_path / "data" / "models"


def _record_etag(folder: Path, name: str, content: bytes, etag: str) -> None:
    meta = folder / ".cache" / "huggingface" / "download" / f"{name}.metadata"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(f"0123456789abcdef\n{etag}\n1700000000.0\n")


def test_download_verifies_hashes_and_removes_a_corrupt_file(tmp_path, monkeypatch):
    import hashlib

    good = b"weights that arrived intact"

    def fake_snapshot_download(repo_id, local_dir, allow_patterns, tqdm_class, corrupt=True):
        folder = Path(local_dir)
        _write_full_v2(folder)
        (folder / "flow.pt").write_bytes(good if not corrupt else b"bit rot")
        _record_etag(folder, "flow.pt", good, hashlib.sha256(good).hexdigest())
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", fake_snapshot_download)
    with pytest.raises(hub.DownloadError, match="flow.pt did not match the published hash"):
        hub.download_model("CosyVoice2-0.5B", tmp_path / "models")
    staged = hub.staging_dir("CosyVoice2-0.5B", tmp_path / "models")
    assert not (staged / "flow.pt").exists() and (staged / "llm.pt").exists()  # only flow.pt is fetched again
    assert not (tmp_path / "models" / "CosyVoice2-0.5B").exists()
    monkeypatch.setattr(hub, "_snapshot_download", lambda **kw: fake_snapshot_download(**kw, corrupt=False))
    out = hub.download_model("CosyVoice2-0.5B", tmp_path / "models")
    assert hub.verify_download(out) == []
