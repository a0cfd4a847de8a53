"""`cosydesk doctor`: runs on this machine, every line has a status and (when not OK) a fix command, --json
parses, a FAIL makes the exit code non-zero, and model integrity checks catch corrupted files."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from pathlib import Path

import pytest

from cosydesk import doctor
from cosydesk.cli import main
from cosydesk.doctor import FAIL, OK, WARN, Check
from tests.support.paths import fixture_dir


@pytest.fixture
def empty_models_dir(tmp_path, monkeypatch) -> Path:
    models = tmp_path / "models"
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(models))
    return models


@pytest.fixture
def model_copy(tmp_path) -> Path:
    """A writable copy of the official v2 tiny fixture model, under a catalogue name."""
    target = tmp_path / "models" / "CosyVoice2-0.5B"
    shutil.copytree(fixture_dir("v2") / "model", target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _write_manifest(folder: Path, name: str, etag: str) -> None:
    """What huggingface_hub leaves next to a local_dir download: commit, etag, timestamp."""
    meta = folder / ".cache" / "huggingface" / "download" / f"{name}.metadata"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(f"{'0' * 40}\n{etag}\n{(folder / name).stat().st_mtime + 5}\n")


def test_doctor_on_this_machine_every_line_has_status_and_fix(empty_models_dir):
    checks = doctor.run_checks()
    names = [c.name for c in checks]
    for wanted in ("Python", "torch", "NVIDIA driver", "GPU", "TensorRT", "TensorRT-RTX", "PortAudio",
                   "CJK font", "models folder", "models"):
        assert wanted in names, f"no {wanted} line in {names}"
    for check in checks:
        assert check.status in (OK, WARN, FAIL)
        assert check.detail
        if check.status != OK:
            assert check.fix, f"{check.name} is {check.status} without a fix command"
    # No model in an empty folder: a WARN that says how to download the recommended one.
    models = next(c for c in checks if c.name == "models")
    assert models.status == WARN and "cosydesk models --download" in models.fix


def test_doctor_json_and_exit_code(empty_models_dir, capsys):
    code = main(["doctor", "--json"])
    lines = json.loads(capsys.readouterr().out)
    assert {"name", "status", "detail", "fix"} <= set(lines[0])
    statuses = {line["status"] for line in lines}
    assert code == (1 if FAIL in statuses else 0)


def test_text_output_has_one_status_per_check(empty_models_dir, capsys, monkeypatch):
    fake = [Check("Python", OK, "3.11"), Check("GPU", WARN, "none", "buy one")]
    monkeypatch.setattr(doctor, "run_checks", lambda *a, **k: fake)
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "[OK  ] Python: 3.11" in out and "fix: buy one" in out and "1 OK, 1 WARN, 0 FAIL" in out


def test_a_failing_check_makes_the_exit_code_non_zero(empty_models_dir, capsys, monkeypatch):
    monkeypatch.setattr(doctor, "check_portaudio",
                        lambda: Check("PortAudio", FAIL, "library missing", "sudo apt install libportaudio2"))
    assert main(["doctor", "--json"]) == 1
    lines = json.loads(capsys.readouterr().out)
    assert {"name": "PortAudio", "status": FAIL, "detail": "library missing",
            "fix": "sudo apt install libportaudio2"} in lines


def test_missing_portaudio_library_is_a_fail_with_apt_fix(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_portaudio(name, *args, **kwargs):
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_portaudio)
    monkeypatch.setattr(doctor, "_on_linux", lambda: True)
    check = doctor.check_portaudio()
    assert check.status == FAIL and check.fix == "sudo apt install libportaudio2"


def test_a_probe_that_crashes_becomes_a_fail_line(empty_models_dir, monkeypatch):
    def broken():
        raise RuntimeError("boom")

    monkeypatch.setattr(doctor, "check_cjk_font", broken)
    font = next(c for c in doctor.run_checks() if c.name == "CJK font")
    assert font.status == FAIL and "boom" in font.detail and font.fix


def _h200() -> doctor._Probe:
    return doctor._Probe(driver_version="580.00", driver_cuda=(13, 0),
                         gpus=[doctor._GpuInfo(0, "NVIDIA H200", (9, 0), 139.0, 141.0)])


def test_tensorrt_rtx_is_not_supported_on_hopper_but_tensorrt_is():
    assert not doctor.trt_supports("tensorrt_rtx", (9, 0))
    assert doctor.trt_supports("tensorrt_rtx", (8, 9))
    assert doctor.trt_supports("tensorrt", (9, 0))
    assert not doctor.trt_supports("tensorrt", (6, 1))


def test_tensorrt_rtx_installed_on_h200(monkeypatch):
    monkeypatch.setattr(doctor, "_import_version", lambda name: ("1.7.1", None))
    rtx = doctor.check_tensorrt(_h200(), "tensorrt_rtx")
    assert rtx.status == OK and "NOT supported" in rtx.detail and "TensorRT 1.7.1 serves" in rtx.detail
    trt = doctor.check_tensorrt(_h200(), "tensorrt")
    assert trt.status == OK and "supported" in trt.detail and "NOT" not in trt.detail
    assert "experimental" in trt.detail  # usable here, but never run on a GPU of ours: auto does not pick it
    # Only TensorRT-RTX installed on a Hopper GPU: no engine backend at all -> WARN, install full TensorRT.
    monkeypatch.setattr(doctor, "_import_version",
                        lambda name: ("1.7.1", None) if name == "tensorrt_rtx" else (None, "No module named 'tensorrt'"))
    rtx_only = doctor.check_tensorrt(_h200(), "tensorrt_rtx")
    assert rtx_only.status == WARN and "tensorrt-cu13" in rtx_only.fix


def test_missing_tensorrt_on_a_supported_gpu_warns_with_install_command(monkeypatch):
    monkeypatch.setattr(doctor, "_import_version", lambda name: (None, "ModuleNotFoundError: No module named 'x'"))
    check = doctor.check_tensorrt(_h200(), "tensorrt")
    assert check.status == WARN and check.fix.startswith("pip install")
    # RTX on a Hopper part: not installing it is the right call.
    assert doctor.check_tensorrt(_h200(), "tensorrt_rtx").status == OK


def test_gpu_line_and_low_vram():
    probe = _h200()
    (line,) = doctor.check_gpus(probe)
    assert line.status == OK and "H200" in line.detail and "9.0" in line.detail
    probe.gpus[0].free_gb = 0.5
    assert doctor.check_gpus(probe)[0].status == WARN
    (cpu,) = doctor.check_gpus(doctor._Probe(nvml_error="no driver"))
    assert cpu.status == WARN and "CPU" in cpu.detail


def test_cpu_torch_on_a_gpu_machine_warns_with_cuda_wheel(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "cuda", None)
    check = doctor.check_torch(_h200())
    assert check.status == WARN and "download.pytorch.org/whl/cu" in check.fix


def test_model_without_manifest_opens_weights_lazily(model_copy):
    check = doctor.check_model_folder(model_copy)
    assert check.status in (OK, WARN), check.detail  # WARN: the fixture has no campplus / speech tokenizer
    assert "weights open" in check.detail
    (model_copy / "hift.pt").write_bytes(b"not a checkpoint")
    broken = doctor.check_model_folder(model_copy)
    assert broken.status == FAIL and "hift.pt" in broken.detail
    assert broken.fix == "cosydesk models --download CosyVoice2-0.5B"


def test_model_hashes_checked_against_download_manifest(model_copy):
    flow = model_copy / "flow.pt"
    _write_manifest(model_copy, "flow.pt", hashlib.sha256(flow.read_bytes()).hexdigest())
    yaml = model_copy / "cosyvoice2.yaml"
    blob = hashlib.sha1(f"blob {yaml.stat().st_size}\0".encode() + yaml.read_bytes()).hexdigest()
    _write_manifest(model_copy, "cosyvoice2.yaml", blob)
    good = doctor.check_model_folder(model_copy)
    assert good.status in (OK, WARN) and "2 file hashes verified" in good.detail
    data = bytearray(flow.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: torch may still open it, the hash must not match
    flow.write_bytes(bytes(data))
    bad = doctor.check_model_folder(model_copy)
    assert bad.status == FAIL and "flow.pt does not match" in bad.detail


def test_incomplete_model_folder_fails(model_copy, capsys, monkeypatch):
    (model_copy / "llm.pt").unlink()
    monkeypatch.setenv("COSYDESK_MODELS_DIR", str(model_copy.parent))
    assert main(["doctor", "--quick"]) == 1
    assert "llm.pt is missing" in capsys.readouterr().out


@pytest.mark.slow
def test_self_test_synthesises_one_sentence_headless(capsys):
    assert main(["doctor", "--self-test"]) == 0
    assert "self-test OK" in capsys.readouterr().out


def test_a_model_the_loader_would_refuse_fails_with_its_reason(model_copy):
    """Whole files are not enough: a yaml the loader refuses (here a zero layer width) is a FAIL naming the key,
    as loading it would say; before, Diagnostics reported such a folder [OK]."""
    yaml = model_copy / "cosyvoice2.yaml"
    text = yaml.read_text(encoding="utf-8")
    width = "        output_size: 64  # tiny; official: 512"  # the flow encoder's
    assert width in text
    yaml.write_text(text.replace(width, "        output_size: 0", 1), encoding="utf-8")
    for verify_hashes in (True, False):  # False: the app's Diagnostics (doctor --quick)
        check = doctor.check_model_folder(model_copy, verify_hashes=verify_hashes)
        assert check.status == FAIL, check.detail
        assert "cosyvoice2.yaml" in check.detail and "is 0" in check.detail
        assert check.fix == "cosydesk models --download CosyVoice2-0.5B"


def test_a_nan_weight_fails_the_full_check_and_the_quick_one_reads_no_weight_whole(model_copy):
    import torch

    flow = model_copy / "flow.pt"
    state = torch.load(flow, map_location="cpu", weights_only=True)
    key = next(k for k, v in state.items() if v.is_floating_point())
    state[key].view(-1)[0] = float("nan")
    torch.save(state, flow)
    full = doctor.check_model_folder(model_copy)
    assert full.status == FAIL and "NaN" in full.detail and key in full.detail
    quick = doctor.check_model_folder(model_copy, verify_hashes=False)
    assert quick.status in (OK, WARN), quick.detail  # like the hashes, the values scan is the full check's
