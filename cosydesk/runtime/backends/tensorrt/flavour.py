"""Adapters for the two TensorRT Python modules: `tensorrt` (TensorRT 10/11) and `tensorrt_rtx` (TensorRT for RTX).

The builder and runner are written once against the API the two share (Builder, OnnxParser, IBuilderConfig,
IProgressMonitor, Runtime, ICudaEngine, IExecutionContext); this module holds the differences:

* networks are always strongly typed (TensorRT for RTX supports nothing else; for TensorRT 10 it is what keeps
  the casts of our fp16 export meaningful) - the precision lives in the ONNX graph, not in builder flags;
* TensorRT for RTX compiles ahead of time without a GPU, for a list of target compute capabilities, and keeps
  JIT-compiled kernels in a *runtime cache*; TensorRT 10 needs a GPU to build and has a *timing cache*;
* which GPUs each can run on (`is_supported_gpu`).

What this module must not do: import either TensorRT module at import time (both are optional extras), or
touch CUDA beyond asking the device's compute capability.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

FLAVOUR_NAMES = ("tensorrt", "tensorrt_rtx")

# TensorRT 10.x runs on Turing (7.5) and newer. TensorRT for RTX: the ComputeCapability enum of the installed
# module lists what it can target (1.7: SM75, SM80, SM86, SM89, SM120, SM121 - no Hopper 9.0, no 10.x).
TENSORRT_MIN_CC = (7, 5)
RTX_FALLBACK_TARGETS = ((7, 5), (8, 0), (8, 6), (8, 9), (12, 0), (12, 1))


@dataclass(frozen=True)
class Flavour:
    """One importable TensorRT module plus what differs between the two."""

    name: str  # "tensorrt" | "tensorrt_rtx"
    module: ModuleType = field(repr=False, compare=False)
    version: str

    @property
    def is_rtx(self) -> bool:
        return self.name == "tensorrt_rtx"

    @property
    def tag(self) -> str:
        """Flavour and version as recorded in the engine cache key, e.g. 'tensorrt_rtx-1.7.1.116'."""
        return f"{self.name}-{self.version}"

    # --- building -------------------------------------------------------------------------------------------

    def logger(self, severity: str = "WARNING") -> Any:
        trt = self.module
        return trt.Logger(getattr(trt.Logger, severity))

    def silent_logger(self) -> Any:
        """A logger that drops everything (for probes whose failures we handle ourselves)."""
        base = self.module.ILogger

        class _Silent(base):  # type: ignore[misc, valid-type]
            def __init__(self) -> None:
                base.__init__(self)

            def log(self, severity, msg) -> None:  # noqa: ANN001
                pass

        return _Silent()

    def network_flags(self) -> int:
        """Creation flags: strongly typed where the flag exists (TensorRT 11 / RTX may make it the only mode)."""
        trt = self.module
        flag = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
        return 0 if flag is None else 1 << int(flag)

    def rtx_targets(self) -> tuple[tuple[int, int], ...]:
        """Compute capabilities this TensorRT-for-RTX module can build for (from its ComputeCapability enum)."""
        if not self.is_rtx:
            return ()
        members = getattr(self.module, "ComputeCapability", None)
        found = []
        for name in dir(members) if members is not None else ():
            if name.startswith("SM") and name[2:].isdigit():
                digits = name[2:]
                found.append((int(digits[:-1]), int(digits[-1])))
        return tuple(sorted(found)) or RTX_FALLBACK_TARGETS

    def target_tag(self, target_cc: tuple[int, int] | None = None) -> str:
        """The honest 'gpu' part of an engine cache key for a build aimed at target_cc.

        tensorrt: always builds for the GPU it runs on, so a GPU is required ('sm<cc>' of that GPU).
        tensorrt_rtx: target_cc given -> 'sm<cc>'; None with a GPU present -> that GPU's 'sm<cc>'; None without
        a GPU -> 'aot-default': the library's own portable target set (Ampere and newer for 1.x), which we do not
        pretend to know better than the flavour+version part of the key does.
        """
        current = current_compute_capability()
        if not self.is_rtx:
            if current is None:
                raise RuntimeError("TensorRT (tensorrt) needs an NVIDIA GPU to build engines; none was found")
            if target_cc is not None and tuple(target_cc) != current:
                raise RuntimeError(f"TensorRT builds for the local GPU ({cc_tag(current)}), not {cc_tag(target_cc)}")
            return cc_tag(current)
        wanted = target_cc if target_cc is not None else current
        if wanted is None:
            return "aot-default"
        if getattr(self.module.ComputeCapability, f"SM{wanted[0]}{wanted[1]}", None) is None:
            raise RuntimeError(f"{self.tag} cannot build for compute capability {wanted[0]}.{wanted[1]}")
        return cc_tag(wanted)

    def configure_targets(self, config: Any, target_cc: tuple[int, int] | None) -> str:
        """Point the builder config at the GPU(s) the engine is for; returns `target_tag(target_cc)`."""
        tag = self.target_tag(target_cc)
        if self.is_rtx and tag.startswith("sm"):
            wanted = target_cc if target_cc is not None else current_compute_capability()
            member = getattr(self.module.ComputeCapability, f"SM{wanted[0]}{wanted[1]}")
            config.num_compute_capabilities = 1
            if not config.set_compute_capability(member, 0):
                raise RuntimeError(f"{self.tag}: set_compute_capability({member}) was refused")
        return tag

    def has_timing_cache(self) -> bool:
        """Builder timing cache: TensorRT only (TensorRT for RTX does not time tactics on a GPU at build time)."""
        return not self.is_rtx and hasattr(self.module.IBuilderConfig, "create_timing_cache")

    def has_runtime_cache(self) -> bool:
        """Runtime (JIT kernel) cache: TensorRT for RTX only."""
        return hasattr(self.module, "IRuntimeCache") and hasattr(self.module.ICudaEngine, "create_runtime_config")

    def has_progress_monitor(self) -> bool:
        return hasattr(self.module, "IProgressMonitor")

    # --- checking serialized engines --------------------------------------------------------------------------

    def malformed(self, plan: bytes) -> bool | None:
        """True if the library says the bytes are not an engine of this flavour/version, False if it finds no
        fault in the header, None if it cannot tell (no validity API). Works without a GPU for TensorRT for RTX."""
        trt = self.module
        runtime = trt.Runtime(self.silent_logger())  # on a CPU-only machine the probe logs a (harmless) fatal
        check = getattr(runtime, "get_engine_validity", None)
        diagnostics_enum = getattr(trt, "EngineInvalidityDiagnostics", None)
        if check is None or diagnostics_enum is None:
            return None
        try:
            _validity, diagnostics = check(plan)
        except Exception:  # noqa: BLE001 - a validity probe must never crash the caller
            return True
        fatal = int(diagnostics_enum.MALFORMED_ENGINE) | int(diagnostics_enum.VERSION_MISMATCH)
        return bool(int(diagnostics) & fatal)


def cc_tag(cc: tuple[int, int]) -> str:
    return f"sm{cc[0]}{cc[1]}"


def load_flavour(name: str) -> Flavour | None:
    """The flavour if its module imports, else None."""
    if name not in FLAVOUR_NAMES:
        raise ValueError(f"unknown TensorRT flavour {name!r}; expected one of {FLAVOUR_NAMES}")
    try:
        module = importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - ImportError, or a stub package raising on import
        log.debug("%s not usable: %s", name, error)
        return None
    version = getattr(module, "__version__", None)
    if not version or not hasattr(module, "Builder"):  # PyPI 'tensorrt' stubs have neither
        return None
    return Flavour(name, module, str(version))


def available_flavours() -> list[Flavour]:
    """Importable flavours, full TensorRT first."""
    return [f for f in (load_flavour(n) for n in FLAVOUR_NAMES) if f is not None]


@lru_cache(maxsize=1)
def current_compute_capability() -> tuple[int, int] | None:
    """Compute capability of CUDA device 0 via cuda-python, or None without a usable GPU/driver."""
    try:
        from cuda.bindings import runtime as cudart
    except Exception:  # noqa: BLE001
        return None
    try:
        err, count = cudart.cudaGetDeviceCount()
        if int(err) != 0 or count < 1:
            return None
        err, props = cudart.cudaGetDeviceProperties(0)
        if int(err) != 0:
            return None
        return int(props.major), int(props.minor)
    except Exception:  # noqa: BLE001
        return None


def is_supported_gpu(cc: tuple[int, int] | None, flavour: str | Flavour) -> bool:
    """Whether engines of this flavour can run on a GPU of compute capability cc."""
    if cc is None:
        return False
    name = flavour.name if isinstance(flavour, Flavour) else flavour
    if name == "tensorrt":
        return tuple(cc) >= TENSORRT_MIN_CC
    if name == "tensorrt_rtx":
        loaded = flavour if isinstance(flavour, Flavour) else load_flavour("tensorrt_rtx")
        targets = loaded.rtx_targets() if loaded is not None else RTX_FALLBACK_TARGETS
        return tuple(cc) in targets
    raise ValueError(f"unknown TensorRT flavour {name!r}")


def supported_flavours(cc: tuple[int, int] | None = None, *, installed_only: bool = False) -> list[str]:
    """Names of the flavours whose engines run on a GPU of compute capability cc (default: the current GPU).

    installed_only=False answers "could it run here" (doctor advice: what to install); True also requires the
    module to import. Full TensorRT comes first when both qualify (it also covers datacenter GPUs).
    """
    cc = current_compute_capability() if cc is None else tuple(cc)
    names = [n for n in FLAVOUR_NAMES if is_supported_gpu(cc, n)]
    if installed_only:
        names = [n for n in names if load_flavour(n) is not None]
    return names


def usable_flavours(cc: tuple[int, int] | None = None) -> list[Flavour]:
    """Importable flavours that run on the GPU (default: current). Empty -> `backend="auto"` skips TensorRT."""
    return [f for f in (load_flavour(n) for n in supported_flavours(cc, installed_only=True)) if f is not None]
