"""Downloads that fail, stall or are cancelled (issues 26 and 31): no half-filled folder that looks like an
installed broken model, partial data kept for resuming, a clear error within a bounded time when the hub stops
answering, and Cancel returning within a second. The real huggingface_hub talks to a hub on 127.0.0.1
(tests/hub_server.py); nothing leaves this machine."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from cosydesk import doctor, hub
from tests.hub_server import FakeHub, SilentServer
from tests.test_cli import run_cli
from tests.test_hub import _write_full_v2

NAME = "CosyVoice2-0.5B"
REPO = "FunAudioLLM/CosyVoice2-0.5B"
# A v2 layout with every required file (contents are never loaded here).
FILES = {"cosyvoice2.yaml": b"sample_rate: 24000\n", "llm.pt": b"L" * 3000, "flow.pt": b"F" * 3000,
         "hift.pt": b"H" * 3000, "campplus.onnx": b"c" * 100, "speech_tokenizer_v2.onnx": b"s" * 100,
         "CosyVoice-BlankEN/config.json": b"{}", "CosyVoice-BlankEN/vocab.json": b"{}",
         "CosyVoice-BlankEN/merges.txt": b"#version: 0.2\n"}


@pytest.fixture
def models(tmp_path) -> Path:
    return tmp_path / "models"


def _point_hub_at(monkeypatch, tmp_path: Path, url: str, stall_s: float = 60.0) -> None:
    """Send this process's huggingface_hub to `url` (conftest sets HF_HUB_OFFLINE=1 for every other test)."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("COSYDESK_DOWNLOAD_STALL_S", str(stall_s))
    monkeypatch.setenv("COSYDESK_DOWNLOAD_TIMEOUT_S", "2")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # Read at import time by huggingface_hub's own side requests: keep them on the local server too.
    monkeypatch.setattr(constants, "ENDPOINT", url, raising=False)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}",
                        raising=False)
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "hf-agents.json"), raising=False)


# ------------------------------------------------------------------ a failed download is not a broken model
def test_a_failed_download_leaves_no_model_folder_and_resumes_from_its_partial_files(models, monkeypatch):
    def breaks_off(repo_id, local_dir, allow_patterns, tqdm_class):
        folder = Path(local_dir)
        (folder / "cosyvoice2.yaml").write_text("sample_rate: 24000\n")
        (folder / ".cache" / "huggingface" / "download").mkdir(parents=True)
        (folder / ".cache" / "huggingface" / "download" / "llm.pt.incomplete").write_bytes(b"x" * 400)
        raise ConnectionError("Connection broken: IncompleteRead(400 bytes read, 600 more expected)")

    monkeypatch.setattr(hub, "_snapshot_download", breaks_off)
    with pytest.raises(hub.DownloadError):
        hub.download_model(NAME, models)
    assert not (models / NAME).exists()
    assert hub.installed_models(models) == []
    checks = doctor.check_models(models)  # before the fix: "[FAIL] model CosyVoice2-0.5B: no model config ..."
    assert [(c.name, c.status) for c in checks] == [("models", doctor.WARN)], checks
    assert "no model installed" in checks[0].detail

    seen: list[int] = []

    def resumes(repo_id, local_dir, allow_patterns, tqdm_class):
        partial = Path(local_dir) / ".cache" / "huggingface" / "download" / "llm.pt.incomplete"
        seen.append(partial.stat().st_size)
        partial.unlink()
        _write_full_v2(Path(local_dir))
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", resumes)
    assert hub.download_model(NAME, models) == models / NAME
    assert seen == [400] and hub.installed_models(models) == [models / NAME]
    assert not (models / hub.STAGING_FOLDER).exists()


def test_a_half_filled_folder_from_an_older_download_is_resumed(models, monkeypatch):
    """Earlier versions downloaded in place: their leftover folder becomes the staging folder."""
    leftover = models / NAME / ".cache" / "huggingface" / "download" / "flow.pt.incomplete"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"y" * 123)
    found: list[tuple[str, int]] = []

    def finishes(repo_id, local_dir, allow_patterns, tqdm_class):
        found.extend((p.name, p.stat().st_size) for p in Path(local_dir).rglob("*.incomplete"))
        _write_full_v2(Path(local_dir))
        return local_dir

    monkeypatch.setattr(hub, "_snapshot_download", finishes)
    assert hub.download_model(NAME, models) == models / NAME
    assert found == [("flow.pt.incomplete", 123)]
    assert hub.check_model_dir(models / NAME).loadable


def test_an_installed_model_is_updated_in_place(models, monkeypatch):
    _write_full_v2(models / NAME)
    used: list[str] = []
    monkeypatch.setattr(hub, "_snapshot_download", lambda **kw: used.append(kw["local_dir"]) or kw["local_dir"])
    assert hub.download_model(NAME, models) == models / NAME
    assert used == [str(models / NAME)] and not (models / hub.STAGING_FOLDER).exists()


# ---------------------------------------------------------------------------- the real client, a local hub
def test_a_download_from_a_local_hub_appears_only_when_complete(models, tmp_path, monkeypatch):
    with FakeHub(REPO, FILES) as server:
        _point_hub_at(monkeypatch, tmp_path, server.url)
        folder = hub.download_model(NAME, models)
    assert folder == models / NAME and hub.check_model_dir(folder).loadable
    assert (folder / "llm.pt").read_bytes() == FILES["llm.pt"]
    assert len(hub.download_manifest(folder)) == len(FILES) and hub.verify_download(folder) == []
    assert sorted(p.name for p in models.iterdir()) == [NAME]


def test_a_hub_that_never_answers_ends_in_a_clear_error_in_bounded_time(models, tmp_path, monkeypatch):
    with SilentServer() as server:
        _point_hub_at(monkeypatch, tmp_path, server.url, stall_s=1.0)
        started = time.monotonic()
        with pytest.raises(hub.DownloadError, match="stalled") as caught:
            hub.download_model(NAME, models)
        elapsed = time.monotonic() - started
    assert server.accepted >= 1  # it really connected, and then got nothing
    assert 1.0 <= elapsed < 5.0, elapsed
    assert f"{server.url} sent only 0 bytes in 1 s" in str(caught.value)
    assert not (models / NAME).exists()


def test_a_trickling_hub_is_given_up_and_a_later_download_resumes(models, tmp_path, monkeypatch):
    with FakeHub(REPO, FILES, trickle={"flow.pt"}, trickle_interval_s=0.1) as server:
        _point_hub_at(monkeypatch, tmp_path, server.url, stall_s=1.5)
        started = time.monotonic()
        with pytest.raises(hub.DownloadError, match="stalled"):
            hub.download_model(NAME, models)
        assert time.monotonic() - started < 8.0
    assert not (models / NAME).exists()
    staged = hub.staging_dir(NAME, models)
    assert (staged / "llm.pt").read_bytes() == FILES["llm.pt"]  # the files that did arrive are kept
    with FakeHub(REPO, FILES) as healthy:
        _point_hub_at(monkeypatch, tmp_path, healthy.url)
        assert hub.download_model(NAME, models) == models / NAME
    fetched = [r for r in healthy.requests if r.startswith("GET /") and "/resolve/" in r]
    assert not any(r.endswith("/llm.pt") for r in fetched), "a finished file was downloaded again"
    assert hub.verify_download(models / NAME) == []


def test_cancel_returns_within_a_second_while_the_socket_is_blocked(models, tmp_path, monkeypatch):
    cancel = threading.Event()
    cancelled_at: list[float] = []

    def press_cancel() -> None:
        cancelled_at.append(time.monotonic())
        cancel.set()

    with SilentServer() as server:
        _point_hub_at(monkeypatch, tmp_path, server.url, stall_s=120.0)
        timer = threading.Timer(0.5, press_cancel)
        timer.start()
        with pytest.raises(hub.DownloadCancelled):
            hub.download_model(NAME, models, cancel=cancel)
        returned = time.monotonic()
        timer.join()
    assert server.accepted >= 1  # the request was out, blocked on a socket that never answers
    assert returned - cancelled_at[0] < 1.0, f"cancel took {returned - cancelled_at[0]:.2f} s"
    assert not (models / NAME).exists()


def test_models_download_and_first_use_say_against_a_silent_hub(tmp_path):
    """The CLI paths a newcomer takes: both end in one line within a bounded time, nothing installed."""
    with SilentServer() as server:
        env = {"HF_ENDPOINT": server.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf"),
               "COSYDESK_MODELS_DIR": str(tmp_path / "models"), "COSYDESK_DATA_DIR": str(tmp_path / "data"),
               "COSYDESK_DOWNLOAD_STALL_S": "1"}
        for command in (["models", "--download", NAME], ["say", "你好", "-o", str(tmp_path / "out.wav")]):
            started = time.monotonic()
            result = run_cli(*command, env=env, timeout=120)
            elapsed = time.monotonic() - started
            errors = [line for line in result.stderr.splitlines() if line.startswith("cosydesk: error:")]
            assert result.returncode == 2, result.stderr
            assert len(errors) == 1 and "stalled" in errors[0] and "Traceback" not in result.stderr
            assert elapsed < 60, f"{command[0]} took {elapsed:.0f} s"
    assert not (tmp_path / "models" / NAME).exists() and not (tmp_path / "out.wav").exists()
    assert os.listdir(tmp_path / "models") == [hub.STAGING_FOLDER]
