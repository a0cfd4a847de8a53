"""Engines for one model folder: export -> build -> cache, in one call per hot module.

`ensure_estimator_engine(model_dir, ...)` and `ensure_hift_engine(model_dir, ...)` return the cached plan path,
exporting the ONNX graph and building the engine only when the cache has no valid entry (a second call with
nothing changed touches neither torch export nor TensorRT). Used by `cosydesk engines build` and by the
TensorRT backend on first use.

What this module must not do: run engines (runner.py) or pick the backend.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cosydesk.runtime.buckets import FLOW_FRAME_BUCKETS, HIFT_MEL_BUCKETS, BucketSet
from cosydesk.runtime.backends.tensorrt.builder import ProgressFn, build_engine, estimator_profile, hift_head_profile
from cosydesk.runtime.backends.tensorrt.cache import EngineCache, EngineKey, sha256_files
from cosydesk.runtime.backends.tensorrt.flavour import Flavour

log = logging.getLogger(__name__)

ESTIMATOR_PREFIX = "decoder.estimator."
EXPORT_FORMAT = "onnx-export-1"  # bump when the export changes the graph for the same weights
StageFn = Callable[[str], None]  # "exporting" / "building" notices for a UI


@dataclass(frozen=True)
class EngineRequest:
    model_dir: Path
    flavour: Flavour
    precision: str = "fp16"
    target_cc: tuple[int, int] | None = None


def _load_estimator(model_dir: Path):
    from cosydesk.model.checkpoint import load_strict, read_state_dict
    from cosydesk.model.config import load_model_config

    _, config = load_model_config(model_dir)
    node = config["flow"]["decoder"]["estimator"]
    if node.class_name == "DiT":
        from cosydesk.model.dit import DiT

        estimator = DiT.from_config(node)
    else:
        from cosydesk.model.unet import build_estimator

        estimator = build_estimator(node)
    state = read_state_dict(model_dir / "flow.pt")
    load_strict(estimator, {k: v for k, v in state.items() if k.startswith(ESTIMATOR_PREFIX)}, "flow.pt",
                strip_prefix=ESTIMATOR_PREFIX)
    return estimator.eval()


def _load_hift(model_dir: Path):
    from cosydesk.model.checkpoint import load_strict, read_state_dict
    from cosydesk.model.config import load_model_config
    from cosydesk.model.hift import build_hift

    _, config = load_model_config(model_dir)
    hift = build_hift(config["hift"])
    load_strict(hift, read_state_dict(model_dir / "hift.pt"), "hift.pt")
    return hift.eval()


def _model_files(model_dir: Path, weights: str) -> list[Path]:
    yamls = sorted(p for p in model_dir.glob("*.yaml"))
    return yamls + [model_dir / weights]


def estimator_key(req: EngineRequest, streaming: bool, frames: BucketSet = FLOW_FRAME_BUCKETS) -> EngineKey:
    return EngineKey(
        model_sha256=sha256_files(_model_files(req.model_dir, "flow.pt")),
        module="flow_estimator_streaming" if streaming else "flow_estimator",
        precision=req.precision,
        profile=estimator_profile(frames).ranges_tag(),
        flavour=req.flavour.name,
        trt_version=req.flavour.version,
        gpu=req.flavour.target_tag(req.target_cc),
        extra=EXPORT_FORMAT,
    )


def ensure_estimator_engine(req: EngineRequest, cache: EngineCache, streaming: bool = False,
                            progress: ProgressFn | None = None, stage: StageFn | None = None,
                            frames: BucketSet = FLOW_FRAME_BUCKETS) -> Path:
    """Plan path of the flow estimator engine (batch 2, frames dynamic over `frames`)."""
    from cosydesk.runtime.backends.tensorrt.onnx_export import export_estimator

    key = estimator_key(req, streaming, frames)

    def build(progress_fn: ProgressFn | None) -> bytes:
        with tempfile.TemporaryDirectory(prefix="cosydesk-onnx-") as folder:
            if stage:
                stage(f"exporting {key.module} ({req.precision}) to ONNX")
            graph = export_estimator(_load_estimator(req.model_dir), Path(folder) / "estimator.onnx", req.precision,
                                     streaming=streaming, max_frames=max(frames.largest, 4096))
            if stage:
                stage(f"building {key.module} engine with {req.flavour.tag}")
            return build_engine(graph.path, estimator_profile(frames), req.precision, req.flavour, progress_fn,
                                target_cc=req.target_cc)

    return cache.get_or_build(key, build, progress)


def ensure_hift_engine(req: EngineRequest, cache: EngineCache, progress: ProgressFn | None = None,
                       stage: StageFn | None = None, frames: BucketSet = HIFT_MEL_BUCKETS) -> Path:
    """Plan path of the v1/v2 HiFT conv-stack engine (see onnx_export.HiftHeadForExport)."""
    from cosydesk.model.hift import HiFTGenerator
    from cosydesk.runtime.backends.tensorrt.onnx_export import export_hift_head

    hift = _load_hift(req.model_dir)
    if type(hift) is not HiFTGenerator:  # v3's CausalHiFTGenerator has no conv-stack export
        raise NotImplementedError(f"no TensorRT export for {type(hift).__name__} yet (v3 HiFT stays in torch)")
    profile = hift_head_profile(frames, hift.samples_per_frame, hift.hop_len, hift.n_fft)
    key = EngineKey(sha256_files(_model_files(req.model_dir, "hift.pt")), "hift_head", req.precision,
                    profile.ranges_tag(), req.flavour.name, req.flavour.version, req.flavour.target_tag(req.target_cc),
                    EXPORT_FORMAT)

    def build(progress_fn: ProgressFn | None) -> bytes:
        with tempfile.TemporaryDirectory(prefix="cosydesk-onnx-") as folder:
            if stage:
                stage(f"exporting hift_head ({req.precision}) to ONNX")
            graph = export_hift_head(hift, Path(folder) / "hift.onnx", req.precision,
                                     max_frames=max(frames.largest, 4096))
            if stage:
                stage(f"building hift_head engine with {req.flavour.tag}")
            return build_engine(graph.path, profile, req.precision, req.flavour, progress_fn, target_cc=req.target_cc)

    return cache.get_or_build(key, build, progress)
