"""TensorRT backend: ONNX export -> engine build (tensorrt or tensorrt_rtx) -> engine cache -> pooled runner.

Import-light on purpose: nothing here imports TensorRT, CUDA or torch at package import time, so
`cosydesk doctor` and `backend="auto"` can ask `supported_flavours()` / `is_supported_gpu()` cheaply.
Submodules: onnx_export (torch -> ONNX, fp16 with fp32 norms), flavour (tensorrt vs tensorrt_rtx), builder,
cache, runner (needs a supported GPU + cuda-python).
"""

from cosydesk.runtime.backends.tensorrt.flavour import (
    Flavour,
    available_flavours,
    current_compute_capability,
    is_supported_gpu,
    load_flavour,
    supported_flavours,
    usable_flavours,
)

__all__ = [
    "Flavour",
    "available_flavours",
    "current_compute_capability",
    "is_supported_gpu",
    "load_flavour",
    "supported_flavours",
    "usable_flavours",
]
