"""What the compute device / backend / precision choices mean in plain words, and which can work here.

What it is for: the Preferences dialog lists every choice with a sentence a non-specialist understands; a
choice that cannot work on this machine (no NVIDIA GPU torch can use, no TensorRT module) is shown disabled
with the reason. The Synthesizer decides the same things at load time (runtime/synthesizer.py
resolve_device / resolve_backend); this module only predicts them so the dialog never offers a dead end.

What it must not do: import Qt, or import torch at module import (detect() imports it when asked).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    cuda: bool
    cuda_reason: str  # why not, when cuda is False
    tensorrt: bool
    tensorrt_reason: str
    gpu_name: str = ""


@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    help: str
    needs_gpu: bool = False
    needs_tensorrt: bool = False


def detect() -> Capabilities:
    """What this machine can run: torch's view of CUDA, and whether a TensorRT module is installed."""
    try:
        import torch

        cuda = bool(torch.cuda.is_available())
        name = torch.cuda.get_device_name(0) if cuda else ""
        reason = "" if cuda else f"torch {torch.__version__} sees no NVIDIA GPU on this computer"
    except Exception as error:  # noqa: BLE001 - a broken torch install must not stop the dialog
        cuda, name, reason = False, "", f"torch cannot check for a GPU ({type(error).__name__})"
    found = any(name in sys.modules or importlib.util.find_spec(name) is not None
                for name in ("tensorrt", "tensorrt_rtx"))
    trt_reason = "" if found else "TensorRT is not installed (pip install -e \".[tensorrt-rtx]\")"
    return Capabilities(cuda, reason, found, trt_reason, name)


DEVICES = (
    Choice("auto", "Automatic", "The NVIDIA GPU when there is one, otherwise the processor."),
    Choice("cpu", "Processor (CPU)", "Works on every computer; slower than real time for the full-size models."),
    Choice("cuda", "NVIDIA GPU", "Speech starts in well under a second and runs many times faster than real time.",
           needs_gpu=True),
)
BACKENDS = (
    Choice("auto", "Automatic", "The fastest path that has been tested on this kind of device."),
    Choice("eager", "Plain PyTorch", "The reference path: the same results everywhere, the slowest on a GPU."),
    Choice("cudagraph", "Fast GPU path", "Pre-recorded GPU work (CUDA graphs) with CosyDesk's own kernels.",
           needs_gpu=True),
    Choice("tensorrt", "TensorRT (experimental)", "NVIDIA's engine compiler for the flow network; engines are built "
           "on first use. Not yet run on a GPU of ours, so Automatic never picks it.", needs_gpu=True,
           needs_tensorrt=True),
)
PRECISIONS = (
    Choice("auto", "Automatic", "Half precision on the GPU, full precision on the processor."),
    Choice("fp32", "Full precision (32-bit)", "Exact reference numbers; on a GPU it is slower and uses more memory."),
    Choice("fp16", "Half precision (16-bit)", "Faster and lighter on a GPU; not used on the processor.",
           needs_gpu=True),
)


def unavailable_reason(choice: Choice, caps: Capabilities, device: str) -> str:
    """'' when `choice` can work with `caps` and the chosen `device`, else why not (one sentence)."""
    if choice.needs_gpu and not caps.cuda:
        return caps.cuda_reason or "no NVIDIA GPU found"
    if choice.needs_gpu and device == "cpu":
        return "needs the NVIDIA GPU as compute device"
    if choice.needs_tensorrt and not caps.tensorrt:
        return caps.tensorrt_reason
    return ""
