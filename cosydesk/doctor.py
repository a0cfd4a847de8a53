"""`cosydesk doctor`: is this machine ready to speak? One line per check, each with the command that fixes it.

What it is for: a newcomer (or a bug report) sees in one screen whether Python, torch/CUDA, the NVIDIA
driver and GPU, TensorRT / TensorRT-RTX, PortAudio, Qt's window libraries, a CJK font, the installed models and the disk are
fine. `run_checks()` returns the same lines as data for the desktop app (Help → Diagnostics), and
`cosydesk doctor --self-test` writes a tiny model and synthesises one sentence headless (the frozen app's
smoke test).

What it must not do: change anything on the machine, download anything, or crash. Every probe is
wrapped so that a broken component becomes a FAIL/WARN line, never a traceback. Heavy modules (torch,
sounddevice, NVML) are imported inside the probes, so `cosydesk --help` stays instant.

Where the parts live: this module holds the machine probes, run_checks and the command; the model checks are
in cosydesk/doctor_models.py and the Check record in cosydesk/doctor_check.py (both re-exported here).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cosydesk.doctor_check import FAIL, OK, WARN, Check
from cosydesk.doctor_models import (  # noqa: F401 - re-exported: cosydesk.doctor is the doctor's one entry
    MIN_FREE_DISK_GB, _weights_open, check_model_folder, check_models, check_models_dir)

MIN_PYTHON = (3, 11)
#: Below this much free VRAM a 0.5B model plus its CUDA graphs / engines will not fit comfortably.
MIN_FREE_VRAM_GB = 3.0
#: Compute capabilities TensorRT for RTX 1.x runs on (its support matrix: Turing, Ampere GA10x, Ada,
#: Blackwell RTX and GB10). Datacenter parts (A100 8.0, Hopper 9.0, B200 10.0) are not among them.
TRT_RTX_COMPUTE_CAPABILITIES = frozenset({(7, 5), (8, 6), (8, 7), (8, 9), (12, 0), (12, 1)})
#: TensorRT 10/11 supports Turing and newer.
TRT_MIN_COMPUTE_CAPABILITY = (7, 5)
TORCH_INSTALL = "pip install torch==2.13.0"
TORCH_CUDA_INSTALL = "pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130"


@dataclass
class _GpuInfo:
    index: int
    name: str
    compute_capability: tuple[int, int]
    free_gb: float
    total_gb: float


@dataclass
class _Probe:
    """Facts gathered once and shared by several checks (NVML is asked once)."""

    driver_version: str | None = None
    driver_cuda: tuple[int, int] | None = None  # highest CUDA version the driver supports
    nvml_error: str | None = None
    gpus: list[_GpuInfo] = field(default_factory=list)


def _on_linux() -> bool:
    return sys.platform.startswith("linux")


def _on_windows() -> bool:
    return sys.platform == "win32"


# ---------------------------------------------------------------------------------------------- probes


def _probe_nvml() -> _Probe:
    from cosydesk.telemetry import nvml

    probe = _Probe()
    try:
        lib = nvml.library()
    except ImportError:
        probe.nvml_error = "nvidia-ml-py is not installed"
        return probe
    try:
        lib.nvmlInit()
    except Exception as error:  # noqa: BLE001 - no driver / no GPU / container without libnvidia-ml
        probe.nvml_error = f"NVML unavailable ({error})"
        return probe
    try:
        probe.driver_version = nvml.driver_version(lib)
        probe.driver_cuda = nvml.driver_cuda_version(lib)
        for index in range(lib.nvmlDeviceGetCount()):
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            name = nvml.as_text(lib.nvmlDeviceGetName(handle))
            major, minor = lib.nvmlDeviceGetCudaComputeCapability(handle)
            memory = lib.nvmlDeviceGetMemoryInfo(handle)
            probe.gpus.append(_GpuInfo(index, name, (int(major), int(minor)), memory.free / 2**30, memory.total / 2**30))
    except Exception as error:  # noqa: BLE001
        probe.nvml_error = f"NVML query failed ({error})"
    finally:
        nvml.shutdown(lib)
    return probe


def _driver_fix() -> str:
    if _on_windows():
        return "winget install Nvidia.GeForceExperience  (or the driver from https://www.nvidia.com/drivers)"
    return "sudo ubuntu-drivers install"


# ---------------------------------------------------------------------------------------------- checks


def check_python() -> Check:
    version = ".".join(str(v) for v in sys.version_info[:3])
    where = f"{version} ({platform.python_implementation()}, {sys.executable})"
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("Python", OK, where)
    fix = "winget install Python.Python.3.12" if _on_windows() else "sudo apt install python3.12 python3.12-venv"
    return Check("Python", FAIL, f"{where}: CosyDesk needs Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]}", fix)


def check_torch(probe: _Probe) -> Check:
    try:
        import torch
    except Exception as error:  # noqa: BLE001 - a broken install raises more than ImportError
        return Check("torch", FAIL, f"cannot import torch ({error})", TORCH_INSTALL)
    cuda = torch.version.cuda
    has_gpu = bool(probe.gpus)
    if cuda is None:
        if has_gpu:
            return Check("torch", WARN, f"{torch.__version__} is a CPU-only build but an NVIDIA GPU is present: "
                                        "synthesis will run on the CPU", TORCH_CUDA_INSTALL)
        return Check("torch", OK, f"{torch.__version__} (CPU build; no NVIDIA GPU here)")
    if not torch.cuda.is_available():
        if not has_gpu:
            return Check("torch", WARN, f"{torch.__version__} with CUDA {cuda}, but no usable NVIDIA GPU: running on the CPU",
                         _driver_fix())
        if probe.driver_cuda and tuple(int(x) for x in cuda.split(".")[:2]) > probe.driver_cuda:
            driver_cuda = ".".join(map(str, probe.driver_cuda))
            return Check("torch", FAIL, f"{torch.__version__} needs CUDA {cuda} but the driver only supports CUDA "
                                        f"{driver_cuda}", _driver_fix())
        return Check("torch", FAIL, f"{torch.__version__} with CUDA {cuda} cannot use the GPU", _driver_fix())
    return Check("torch", OK, f"{torch.__version__} with CUDA {cuda}, {torch.cuda.device_count()} GPU(s) usable")


def check_driver(probe: _Probe) -> Check:
    if probe.driver_version is None:
        return Check("NVIDIA driver", WARN, f"not found ({probe.nvml_error}); CosyDesk falls back to the CPU",
                     _driver_fix())
    cuda = f", supports CUDA {probe.driver_cuda[0]}.{probe.driver_cuda[1]}" if probe.driver_cuda else ""
    return Check("NVIDIA driver", OK, f"{probe.driver_version}{cuda}")


def check_gpus(probe: _Probe) -> list[Check]:
    if not probe.gpus:
        return [Check("GPU", WARN, "no NVIDIA GPU: synthesis runs on the CPU (eager backend, fp32). "
                                   "It works, but v2/v3 models are slower than real time there",
                      "use a machine with an NVIDIA GPU (Turing / RTX 20xx or newer) and its driver")]
    checks = []
    for gpu in probe.gpus:
        cc = f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}"
        detail = f"#{gpu.index} {gpu.name}, compute capability {cc}, {gpu.free_gb:.1f} of {gpu.total_gb:.1f} GB free"
        if gpu.free_gb < MIN_FREE_VRAM_GB:
            checks.append(Check("GPU", WARN, f"{detail}: less than {MIN_FREE_VRAM_GB:.0f} GB free VRAM",
                                "close other GPU programs (nvidia-smi lists them)"))
        else:
            checks.append(Check("GPU", OK, detail))
    return checks


def _runtime_supported_flavours() -> Callable[..., object] | None:
    """The runtime's own TensorRT support table, when the runtime offers one."""
    try:
        from cosydesk.runtime.backends import tensorrt as trt_runtime
    except Exception:  # noqa: BLE001
        return None
    return getattr(trt_runtime, "supported_flavours", None)


def trt_supports(flavour: str, compute_capability: tuple[int, int]) -> bool:
    """Whether `flavour` ('tensorrt' | 'tensorrt_rtx') builds engines for a GPU of this compute capability."""
    runtime_table = _runtime_supported_flavours()
    if runtime_table is not None:
        try:
            return flavour in runtime_table(compute_capability)
        except Exception:  # noqa: BLE001 - a different signature: use our own table
            pass
    if flavour == "tensorrt_rtx":
        return tuple(compute_capability) in TRT_RTX_COMPUTE_CAPABILITIES
    return tuple(compute_capability) >= TRT_MIN_COMPUTE_CAPABILITY


def _import_version(module_name: str) -> tuple[str | None, str | None]:
    """(version, None) when importable, else (None, reason)."""
    try:
        module = __import__(module_name)
    except Exception as error:  # noqa: BLE001 - missing CUDA libs raise OSError, not ImportError
        return None, f"{type(error).__name__}: {error}".splitlines()[0]
    return str(getattr(module, "__version__", "?")), None


def check_tensorrt(probe: _Probe, flavour: str) -> Check:
    label = {"tensorrt": "TensorRT", "tensorrt_rtx": "TensorRT-RTX"}[flavour]
    install = {"tensorrt": 'pip install "tensorrt-cu13>=10.13"',
               "tensorrt_rtx": 'pip install -e ".[tensorrt-rtx]"'}[flavour]
    version, reason = _import_version(flavour)
    gpus = probe.gpus
    if version is None:
        missing = "not installed" if reason and "No module named" in reason else f"not importable ({reason})"
        if not gpus:
            return Check(label, OK, f"{missing}; not needed without an NVIDIA GPU")
        wanted = [g for g in gpus if trt_supports(flavour, g.compute_capability)]
        if not wanted:
            return Check(label, OK, f"{missing}; {gpus[0].name} is not supported by {label} anyway")
        return Check(label, WARN, f"{missing}: the faster '{flavour.replace('_rtx', '')}' backend is off "
                                  "(cudagraph is used instead)", install)
    if not gpus:
        return Check(label, OK, f"{version} importable (no GPU, so unused)")
    verdicts = []
    any_supported = False
    for gpu in gpus:
        supported = trt_supports(flavour, gpu.compute_capability)
        any_supported |= supported
        cc = f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}"
        verdicts.append(f"{gpu.name} (cc {cc}) {'supported' if supported else 'NOT supported'}")
    detail = f"{version}; " + ", ".join(verdicts)
    if any_supported:  # usable, but never run on a GPU of ours: say so (auto does not pick it)
        return Check(label, OK, f"{detail}; the tensorrt backend is experimental (--backend tensorrt only): "
                                "engines build, but none has run on a GPU of ours yet")
    if flavour == "tensorrt":
        return Check(label, OK, f"{detail}: the cudagraph backend is used instead")
    full_version, _ = _import_version("tensorrt")
    if full_version is not None and any(trt_supports("tensorrt", g.compute_capability) for g in gpus):
        return Check(label, OK, f"{detail}: unused here, TensorRT {full_version} serves this GPU")
    return Check(label, WARN, f"{detail}: install full TensorRT for engines on this GPU",
                 'pip install "tensorrt-cu13>=10.13"')


def check_portaudio() -> Check:
    try:
        import sounddevice
    except OSError as error:  # the library is missing: sounddevice raises OSError on import
        fix = "sudo apt install libportaudio2" if _on_linux() else "pip install --force-reinstall sounddevice"
        return Check("PortAudio", FAIL, f"the PortAudio library cannot be loaded ({error})", fix)
    except ImportError:
        return Check("PortAudio", FAIL, "the sounddevice package is not installed", "pip install sounddevice")
    try:
        version = sounddevice.get_portaudio_version()[1]
        devices = [d for d in sounddevice.query_devices() if d.get("max_output_channels", 0) > 0]
    except Exception as error:  # noqa: BLE001
        return Check("PortAudio", WARN, f"cannot list audio devices ({error})", "sudo apt install pulseaudio-utils && pactl info")
    if not devices:
        return Check("PortAudio", WARN, f"{version}: no audio output device; playback is off, WAV/FLAC export still works",
                     "aplay -l  (connect or enable a sound card / PulseAudio / PipeWire)" if _on_linux()
                     else "connect or enable an audio output device")
    names = ", ".join(d["name"] for d in devices[:3]) + (" ..." if len(devices) > 3 else "")
    return Check("PortAudio", OK, f"{version}: {len(devices)} output device(s): {names}")


def _font_fix(with_fontconfig: bool = False) -> str:
    from cosydesk.qt_platform import CJK_FONT_PACKAGE, package_manager

    manager = package_manager()
    fontconfig = "fontconfig " if with_fontconfig else ""
    return f"sudo {manager} install {fontconfig}{CJK_FONT_PACKAGE[manager]}"


def check_cjk_font() -> Check:
    if not _on_linux():
        return Check("CJK font", OK, f"{platform.system()} ships CJK fonts")
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return Check("CJK font", WARN, "fontconfig (fc-list) is missing, cannot check for a Chinese font",
                     _font_fix(with_fontconfig=True))
    try:
        found = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return Check("CJK font", WARN, f"fc-list failed ({error})", _font_fix())
    families = sorted({line.split(",")[0].strip() for line in found.splitlines() if line.strip()})
    if not families:
        return Check("CJK font", WARN, "no Chinese font: Chinese text shows as boxes in the app", _font_fix())
    return Check("CJK font", OK, ", ".join(families[:3]))


def check_qt(folder: Path | None = None, run_ldd=None) -> Check:
    """The desktop app's window: can Qt's xcb plugin load its system libraries (the app's start asks the same)?"""
    from cosydesk import qt_platform

    if not _on_linux():
        return Check("Qt display", OK, f"PySide6 bundles its {platform.system()} platform plugin")
    report = qt_platform.check_platform("xcb", folder, run_ldd or qt_platform._run_ldd)
    what, fix = qt_platform.advice(report)
    if not report.ok:
        return Check("Qt display", FAIL, f"{what}: the desktop app cannot open its window", fix)
    return Check("Qt display", OK, what)


# ----------------------------------------------------------------------------------------------- driver


def _guarded(name: str, probe: Callable[[], Check | list[Check]]) -> list[Check]:
    """Run one probe; a bug in a probe becomes a FAIL line instead of killing the whole report."""
    try:
        result = probe()
    except Exception as error:  # noqa: BLE001
        return [Check(name, FAIL, f"the check itself failed: {type(error).__name__}: {error}",
                      "report this at the CosyDesk issue tracker with the output of `cosydesk doctor --json`")]
    return result if isinstance(result, list) else [result]


def run_checks(model_dirs: Iterable[str | os.PathLike] = (), models_dir: str | os.PathLike | None = None,
               verify_hashes: bool = True) -> list[Check]:
    """Every check, in reading order. Never raises; safe to call from a GUI worker thread."""
    from cosydesk import paths

    root = Path(models_dir) if models_dir else paths.models_dir()
    nvml = _probe_nvml()
    checks: list[Check] = []
    checks += _guarded("Python", check_python)
    checks += _guarded("torch", lambda: check_torch(nvml))
    checks += _guarded("NVIDIA driver", lambda: check_driver(nvml))
    checks += _guarded("GPU", lambda: check_gpus(nvml))
    checks += _guarded("TensorRT", lambda: check_tensorrt(nvml, "tensorrt"))
    checks += _guarded("TensorRT-RTX", lambda: check_tensorrt(nvml, "tensorrt_rtx"))
    checks += _guarded("PortAudio", check_portaudio)
    checks += _guarded("Qt display", check_qt)
    checks += _guarded("CJK font", check_cjk_font)
    checks += _guarded("models folder", lambda: check_models_dir(root))
    checks += _guarded("models", lambda: check_models(root, [Path(p) for p in model_dirs], verify_hashes))
    return checks


def exit_code(checks: Iterable[Check]) -> int:
    """0 unless some check FAILed."""
    return 1 if any(c.status == FAIL for c in checks) else 0


# -------------------------------------------------------------------------------------------- self-test


def self_test(version: str = "v2", text: str = "Hello from CosyDesk.") -> int:
    """Write a tiny model to a temp folder and synthesise one sentence on the CPU; print how long it took."""
    import tempfile

    start = time.perf_counter()
    try:
        import numpy as np

        from cosydesk.runtime import Request, Synthesizer
        from cosydesk.synthetic.tiny_model import write_tiny_model

        imported = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="cosydesk-self-test-") as tmp:
            model_dir = write_tiny_model(Path(tmp) / f"tiny-{version}", version=version)
            written = time.perf_counter()
            synth = Synthesizer(model_dir, device="cpu", backend="eager", precision="fp32")
            loaded = time.perf_counter()
            audio = np.asarray(synth.synthesize(Request(text=text, seed=0)), dtype=np.float32)
            done = time.perf_counter()
            rate = synth.sample_rate
    except Exception as error:  # noqa: BLE001 - the self-test reports, it does not crash
        import traceback

        traceback.print_exc()
        print(f"self-test FAILED after {time.perf_counter() - start:.2f} s: {type(error).__name__}: {error}")
        return 1
    if audio.size == 0 or not np.isfinite(audio).all():
        print(f"self-test FAILED: {audio.size} samples, finite={bool(np.isfinite(audio).all())}")
        return 1
    print(f"self-test OK: {audio.size / rate:.2f} s of audio ({audio.size} samples at {rate} Hz); "
          f"imports {imported - start:.2f} s, tiny {version} model {written - imported:.2f} s, "
          f"load {loaded - written:.2f} s, synthesis {done - loaded:.2f} s, total {done - start:.2f} s")
    return 0


# ------------------------------------------------------------------------------------------------- CLI


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.self_test:
        return self_test(args.self_test_version)
    model_dirs = [args.model] if getattr(args, "model", None) and Path(args.model).is_dir() else []
    checks = run_checks(model_dirs, verify_hashes=not args.quick)
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], ensure_ascii=False, indent=2))
    else:
        for check in checks:
            print(check.line())
        counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
        print(f"\n{counts[OK]} OK, {counts[WARN]} WARN, {counts[FAIL]} FAIL")
    return exit_code(checks)


def add_parser(subparsers) -> None:
    """Register `cosydesk doctor` (cosydesk/cli.py calls this)."""
    doctor = subparsers.add_parser("doctor", help="check this machine: Python, torch/CUDA, GPU, TensorRT, audio, "
                                                  "fonts, models; each problem with the command that fixes it")
    doctor.add_argument("--model", help="also check this model folder")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.add_argument("--quick", action="store_true", help="skip hashing model files against the download manifest")
    doctor.add_argument("--self-test", action="store_true",
                        help="write a tiny model to a temp folder and synthesise one sentence on the CPU")
    doctor.add_argument("--self-test-version", default="v2", choices=["v1", "v2", "v3"], help=argparse.SUPPRESS)
    doctor.set_defaults(func=cmd_doctor)
