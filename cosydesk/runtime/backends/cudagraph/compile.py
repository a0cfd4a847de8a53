"""Optional torch.compile (Inductor/Triton) fusion of the hot blocks before they are captured in CUDA graphs.

Why: inside a CUDA graph the CPU no longer costs anything, but every small kernel still costs the GPU a few
microseconds; the estimator and the LLM layer are chains of tiny element-wise ops around small GEMMs. Inductor
fuses them (RMSNorm/LayerNorm, rotary, SwiGLU, residual adds) and the graphs then replay fewer, fused kernels.

Regional compilation: one *block* (a Qwen2 decoder layer, a U-Net transformer/resnet block, a DiT block) is
compiled once and reused by every instance, so the first start costs seconds, not minutes; Inductor's on-disk
cache (under the user cache dir) makes later starts cheaper still. Compilation is skipped (plain eager blocks,
still captured) without CUDA, without Triton, or with ``EngineOptions(compile=False)`` (``COSYDESK_COMPILE=0``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import torch

from cosydesk.model.dit import DiTBlock
from cosydesk.model.unet import BasicTransformerBlock, ResnetBlock1D
from cosydesk.runtime.backends.cudagraph.dit_prepared import ModulatedDiTBlock
from cosydesk.runtime.options import active as active_options


def compile_enabled(device: torch.device) -> bool:
    """True when blocks on ``device`` should be compiled: CUDA, Triton importable, ``EngineOptions.compile``."""
    if not active_options().compile:
        return False
    if device.type != "cuda":
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _configure_inductor() -> None:
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        try:
            from cosydesk.paths import inductor_cache_dir

            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache_dir())
        except ImportError:  # platformdirs is a dependency; the device image may lack it
            pass
    import torch._dynamo

    # Every block instance and every shape bucket must hit a compiled entry, never fall back to eager silently.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    # A block Inductor cannot compile runs eager (still captured) instead of failing the model load.
    torch._dynamo.config.suppress_errors = True


def compiled(fn: Callable, device: torch.device, dynamic: bool | None = None, backend: str | None = None,
             options: dict | None = None, eager: Callable | None = None) -> Callable:
    """``torch.compile(fn)`` when :func:`compile_enabled` (or ``backend`` is forced, e.g. "aot_eager" in CPU
    tests), else ``eager`` (default: ``fn`` itself; a form of ``fn`` that is only fast once compiled passes
    its plain equivalent). ``options``: Inductor settings for this function only."""
    if backend is None and not compile_enabled(device):
        return fn if eager is None else eager
    _configure_inductor()
    backend = backend or "inductor"
    return torch.compile(fn, dynamic=dynamic, backend=backend, options=options if backend == "inductor" else None)


def compile_blocks(root: torch.nn.Module, classes: tuple[type[torch.nn.Module], ...], device: torch.device,
                   backend: str | None = None) -> int:
    """``module.compile()`` every submodule of ``root`` whose class is exactly one of ``classes`` (regional
    compilation: instances of one class share the compiled code; a subclass - the Triton kernels' rewrite of a
    block, ``flow_kernels.KernelTransformerBlock`` - is left alone). Returns how many were set up (0 when
    compilation is off). Shapes are left to dynamo's automatic dynamic: the first length compiles static,
    a second length recompiles once with a symbolic length that then serves every bucket."""
    if not all(isinstance(cls, type) for cls in classes):  # a class name would match nothing, silently
        raise TypeError(f"compile_blocks takes module classes, got {classes!r}")
    if backend is None and not compile_enabled(device):
        return 0
    _configure_inductor()
    count = 0
    for module in root.modules():
        if type(module) in classes:
            module.compile(backend=backend or "inductor")
            count += 1
    return count


# The estimator blocks worth fusing: U-Net (v1/v2) transformer and resnet blocks, DiT (v3) blocks (plain, and
# called with precomputed modulations by ``dit_prepared``).
ESTIMATOR_BLOCKS = (BasicTransformerBlock, ResnetBlock1D, DiTBlock, ModulatedDiTBlock)
