"""Pick how the hot networks run: ``accelerate(model, backend)`` -> a CosyVoiceModel-compatible object.

Backends:
- ``eager`` / ``eager-fp32``: the model's own modules in float32 (CPU or CUDA) — the reference.
- ``eager-fp16``: the same modules cast to float16 (CUDA).
- ``cudagraph``: float16 with the LLM decode step (compiled layer), the prefill buckets, the CFM Euler step per
  frame bucket and v2's HiFT per streaming chunk shape captured as CUDA graphs (``cosydesk.runtime.backends.cudagraph``);
  norms / softmax / the CFM update accumulate in float32.
- ``tensorrt``: float16 as eager-fp16, with the flow estimator run by TensorRT engines (built on first use and
  cached under the engines dir, ``cosydesk.runtime.backends.tensorrt.torch_bridge``) and the LLM as in ``cudagraph``.

The returned object satisfies ``protocols.BackendModel``: its ``.llm`` / ``.flow`` / ``.hift`` have the methods
the runtime calls (prefill, decode_step, flow.inference / inference_with_cache, hift.inference_with_source /
inference; ``protocols.py`` types them), so the runtime does not know which backend it drives. This module
converts the modules it is given in place: pass a copy if the caller still needs the original precision.

Layout: this package is the registry (names, where each was measured, ``accelerate``), ``protocols.py`` the
contract, ``eager.py`` the eager backends and the float16 cast the GPU backends start from; the graph and
TensorRT backends are ``cosydesk.runtime.backends.cudagraph`` / ``cosydesk.runtime.backends.tensorrt``, imported on demand. The
runtime core imports only this package's public names; backends import only the core's public modules.
"""

from __future__ import annotations

from collections.abc import Callable

# torch is imported where a backend is built, so the CLI, the settings and the app can read the names cheaply.
BACKENDS = ("eager-fp32", "eager-fp16", "cudagraph", "tensorrt")
# What a user chooses (--backend, the app's setting): "eager" takes fp32 or fp16 from the precision.
CHOICES = ("auto", "eager", "cudagraph", "tensorrt")
# Backends whose fast path has never executed on a GPU of this project: offered when asked for by name,
# labelled experimental in doctor, the app and the README, never chosen by `auto`.
EXPERIMENTAL = {"tensorrt": "engines are built, cached and their ONNX numerics checked, but no engine has run on "
                            "a GPU here yet (TensorRT-RTX refuses Hopper; full TensorRT was not obtainable)"}
# Where each GPU backend was run and measured (docs/bench): compute capability -> GPU.
MEASURED_ON = {"cudagraph": {(9, 0): "NVIDIA H200"}, "eager-fp16": {(9, 0): "NVIDIA H200"},
               "eager-fp32": {(9, 0): "NVIDIA H200"}}


def measured_note(backend: str, compute_capability: tuple[int, int] | None) -> str:
    """One line on how far ``backend`` has been tried on a GPU of ``compute_capability``: what a user should
    know before trusting its speed."""
    if backend in EXPERIMENTAL:
        return f"{backend} is experimental: {EXPERIMENTAL[backend]}"
    measured = MEASURED_ON.get(backend, {})
    if compute_capability in measured:
        return f"{backend} was measured on this kind of GPU ({measured[compute_capability]})"
    where = ", ".join(f"{name} (cc {cc[0]}.{cc[1]})" for cc, name in measured.items()) or "no GPU"
    return f"{backend} was measured on {where}; on this GPU it runs but its speed has not been measured here"


Progress = Callable[..., None] | None


def _with_graph_llm(model, progress: Progress = None):
    """``model`` with the graph backend's static-cache LLM (``cudagraph.model.static_llm``): the tensorrt backend
    is TensorRT's flow estimator composed here with the cudagraph LLM, so neither backend imports the other."""
    import dataclasses

    import torch

    from cosydesk.runtime.backends.cudagraph.model import static_llm

    pool = torch.cuda.graph_pool_handle() if model.device.type == "cuda" else None
    llm = static_llm(model, None, pool, progress)
    torch.cuda.synchronize()
    return dataclasses.replace(model, llm=llm)


def place_model(model, device, backend: str):
    """``model`` (loaded on the host) moved to ``device`` in the dtypes ``backend`` runs it in, each network cast on
    the way: no float32 copy is made on the GPU first (loading float32 onto the GPU and casting there needs the
    float32 model's memory for a moment and leaves the freed float32 blocks split around the float16 weights).
    For ``cudagraph`` the work whose GPU copies would only be freed again is done on the host first
    (``cudagraph.model.prepare_on_host``). Returns the model with ``device`` set; ``accelerate`` does the rest."""
    import dataclasses

    import torch

    from cosydesk.runtime.backends.eager import cast_except_f0, hift_dtype

    device = torch.device(device)
    name = {"eager": "eager-fp32"}.get(backend, backend)
    dtype = torch.float16 if name != "eager-fp32" and device.type == "cuda" else torch.float32
    if name == "cudagraph":
        from cosydesk.runtime.backends.cudagraph.model import prepare_on_host

        prepare_on_host(model, dtype)
    model.llm.to(device=device, dtype=dtype)
    model.flow.to(device=device, dtype=dtype)
    vocoder_dtype = hift_dtype(model.version, dtype)
    if vocoder_dtype != torch.float32:
        cast_except_f0(model.hift, vocoder_dtype)  # on the host: the dtypes cast_model then keeps
    model.hift.to(device=device)
    return dataclasses.replace(model, device=device)


def accelerate(model, backend: str, progress: Progress = None, engines_dir=None):
    """Return a model-like object running ``backend``; see the module docstring.

    ``engines_dir`` (tensorrt only): the engine cache; default $COSYDESK_ENGINES_DIR, else <repo>/engines in a
    checkout, else <user data dir>/engines.
    """
    import torch

    from cosydesk.runtime.backends.eager import cast_model

    name = {"eager": "eager-fp32"}.get(backend, backend)
    if name == "eager-fp32":
        return cast_model(model, torch.float32)
    if name == "eager-fp16":
        if model.device.type != "cuda":
            raise ValueError("eager-fp16 needs a CUDA device (fp16 on the CPU is slow and not a supported path)")
        return cast_model(model, torch.float16)
    if name == "cudagraph":
        if model.device.type != "cuda" or not torch.cuda.is_available():
            raise ValueError("the cudagraph backend needs a CUDA device")
        from cosydesk.runtime.backends.cudagraph.model import build_graph_model

        return build_graph_model(cast_model(model, torch.float16), progress=progress)
    if name == "tensorrt":
        if model.device.type != "cuda" or not torch.cuda.is_available():
            raise ValueError("the tensorrt backend needs a CUDA device")
        from cosydesk.runtime.backends.tensorrt.torch_bridge import build_tensorrt_model, unavailable_reason

        reason = unavailable_reason()  # before casting: a refused backend leaves the model as it was
        if reason is not None:
            raise ValueError(reason)
        fast = build_tensorrt_model(cast_model(model, torch.float16), progress=progress, engines_dir=engines_dir)
        return _with_graph_llm(fast, progress)
    raise ValueError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")


def __getattr__(name: str):
    if name in ("HalfHift", "cast_model"):  # the eager backends' pieces, with torch
        from cosydesk.runtime.backends import eager

        return getattr(eager, name)
    raise AttributeError(name)


__all__ = ["accelerate", "BACKENDS", "CHOICES", "EXPERIMENTAL", "MEASURED_ON", "HalfHift", "cast_model",
           "measured_note"]
