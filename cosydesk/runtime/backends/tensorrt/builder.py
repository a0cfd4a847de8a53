"""Build a serialized TensorRT engine from an exported ONNX file, with either TensorRT flavour.

`build_engine(onnx_path, profile, precision, flavour, progress=None) -> bytes`:
strongly typed network (precision is whatever the ONNX graph says; `precision` is checked against it and
recorded), one optimisation profile whose (min, opt, max) shapes cover the bucket ranges, an optional timing
cache file (TensorRT) and a progress monitor that reports (phase, step, total) to a Python callback.

What this module must not do: run engines, allocate GPU memory, or decide where engines are stored (cache.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import TensorProto

from cosydesk.atomic_file import write_atomically
from cosydesk.runtime.buckets import BucketSet
from cosydesk.runtime.backends.tensorrt.flavour import Flavour
from cosydesk.runtime.backends.tensorrt.onnx_export import ESTIMATOR_INPUTS, HIFT_INPUTS, fp16_sensitive_nodes

log = logging.getLogger(__name__)
MAX_TIMING_CACHE_BYTES = 256 * 1024 * 1024  # real ones are a few MB; a larger file is not read into memory

Shape = tuple[int, ...]
ProgressFn = Callable[[str, int, int], None]  # (phase, step done, steps in phase)


class BuildError(RuntimeError):
    """The ONNX file could not be parsed or the engine could not be built."""


class BuildCancelled(BuildError):
    """The progress callback asked to stop (raised `BuildCancelled` itself, or a cancel event was set)."""


@dataclass(frozen=True)
class ShapeProfile:
    """min/opt/max shape of every dynamic input (static inputs may be listed with equal shapes)."""

    shapes: Mapping[str, tuple[Shape, Shape, Shape]]

    def ranges_tag(self) -> str:
        """Stable text of all ranges, used in the engine cache key."""
        parts = []
        for name in sorted(self.shapes):
            lo, opt, hi = self.shapes[name]
            parts.append(f"{name}:{'x'.join(map(str, lo))}/{'x'.join(map(str, opt))}/{'x'.join(map(str, hi))}")
        return ";".join(parts)


def estimator_profile(frames: BucketSet, batch: int = 2, mel_channels: int = 80, spk_dim: int = 80) -> ShapeProfile:
    """Profile of the flow estimator engine covering every frame bucket (batch 2 = the CFG pair)."""
    lo, opt, hi = frames.profile()

    def seq(channels: int) -> tuple[Shape, Shape, Shape]:
        return (batch, channels, lo), (batch, channels, opt), (batch, channels, hi)

    fixed_t = ((batch,),) * 3
    fixed_spks = ((batch, spk_dim),) * 3
    shapes = {"x": seq(mel_channels), "mask": seq(1), "mu": seq(mel_channels), "t": fixed_t,
              "spks": fixed_spks, "cond": seq(mel_channels)}
    assert tuple(shapes) == ESTIMATOR_INPUTS
    return ShapeProfile(shapes)


def hift_head_profile(frames: BucketSet, samples_per_frame: int, hop: int, n_fft: int = 16,
                      mel_channels: int = 80) -> ShapeProfile:
    """Profile of the HiFT conv-stack engine: mel [1, 80, T] and source_spec [1, n_fft+2, T*spf/hop + 1]."""
    assert HIFT_INPUTS == ("mel", "source_spec")
    per = samples_per_frame // hop
    lo, opt, hi = frames.profile()
    return ShapeProfile({
        "mel": tuple((1, mel_channels, n) for n in (lo, opt, hi)),
        "source_spec": tuple((1, n_fft + 2, n * per + 1) for n in (lo, opt, hi)),
    })


def graph_precision(onnx_path: str | Path) -> str:
    """'fp16' if the graph computes in half precision anywhere, else 'fp32' (inputs are fp32 in both)."""
    try:
        model = onnx.load(str(onnx_path), load_external_data=False)
    except Exception as error:  # noqa: BLE001 - DecodeError, OSError...
        raise BuildError(f"{Path(onnx_path).name} is not a readable ONNX file: {error}") from error
    for init in model.graph.initializer:
        if init.data_type == TensorProto.FLOAT16:
            return "fp16"
    for node in model.graph.node:
        if node.op_type == "Cast" and any(a.name == "to" and a.i == TensorProto.FLOAT16 for a in node.attribute):
            return "fp16"
    return "fp32"


def _make_progress_monitor(flavour: Flavour, progress: ProgressFn, cancel: threading.Event | None):
    """An IProgressMonitor subclass instance forwarding (phase, step, total) to `progress`."""
    base = flavour.module.IProgressMonitor

    class _Monitor(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)
            self.totals: dict[str, int] = {}
            self.error: BaseException | None = None

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            self.totals[phase_name] = int(num_steps)
            self._report(phase_name, 0)

        def step_complete(self, phase_name: str, step: int) -> bool:
            self._report(phase_name, int(step) + 1)
            return self.error is None and not (cancel is not None and cancel.is_set())

        def phase_finish(self, phase_name: str) -> None:
            total = self.totals.pop(phase_name, 0)
            self._report(phase_name, total, total)

        def _report(self, phase: str, step: int, total: int | None = None) -> None:
            if self.error is not None:
                return
            try:
                progress(phase, step, self.totals.get(phase, 0) if total is None else total)
            except BaseException as error:  # noqa: BLE001 - exceptions cannot cross into TensorRT; stop instead
                self.error = error

    return _Monitor()


def _parse(flavour: Flavour, network, logger, onnx_path: Path) -> None:
    parser = flavour.module.OnnxParser(network, logger)
    ok = parser.parse_from_file(str(onnx_path))
    if not ok:
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise BuildError(f"{flavour.tag} could not parse {onnx_path.name}: " + "; ".join(errors[:5]))


def _load_timing_cache(flavour: Flavour, config, path: Path | None):
    if path is None or not flavour.has_timing_cache():
        return None
    try:  # a damaged timing cache only costs build time: never a failed build
        blob = path.read_bytes() if path.is_file() and path.stat().st_size <= MAX_TIMING_CACHE_BYTES else b""
        cache = config.create_timing_cache(blob)
        if config.set_timing_cache(cache, ignore_mismatch=False):
            return cache
        log.info("timing cache %s does not fit this GPU/version; starting a fresh one", path)
    except Exception as error:  # noqa: BLE001 - OSError, or TensorRT rejecting garbage bytes in its own way
        log.info("timing cache %s is unreadable (%s); starting a fresh one", path, error)
    cache = config.create_timing_cache(b"")
    config.set_timing_cache(cache, ignore_mismatch=False)
    return cache


def _save_timing_cache(config, path: Path) -> None:
    try:
        write_atomically(path, bytes(memoryview(config.get_timing_cache().serialize())))
    except OSError as error:  # e.g. a directory where the file should be: the built engine is still good
        log.warning("could not save the timing cache %s (%s)", path, error)


def build_engine(
    onnx_path: str | Path,
    profile: ShapeProfile,
    precision: str,
    flavour: Flavour,
    progress: ProgressFn | None = None,
    *,
    target_cc: tuple[int, int] | None = None,
    timing_cache_path: str | Path | None = None,
    workspace_bytes: int | None = None,
    cancel: threading.Event | None = None,
) -> bytes:
    """Build and serialize an engine; returns the plan bytes.

    precision: 'fp32' or 'fp16' and must match the graph (strongly typed: the ONNX file decides).
    target_cc: TensorRT for RTX only - build for this compute capability (default: the local GPU, or the
    library's portable default set when there is no GPU); `flavour.target_tag(target_cc)` names that choice.
    """
    onnx_path = Path(onnx_path)
    found = graph_precision(onnx_path)
    if precision != found:
        raise BuildError(f"{onnx_path.name} is an {found} graph, but a {precision} engine was requested")
    if precision == "fp16":
        unsafe = fp16_sensitive_nodes(onnx.load(str(onnx_path)))
        if unsafe:
            raise BuildError(f"{onnx_path.name}: norm/softmax/reduction ops in fp16 would overflow: {unsafe[:5]}")

    trt = flavour.module
    logger = flavour.logger("WARNING")
    builder = trt.Builder(logger)
    network = builder.create_network(flavour.network_flags())
    _parse(flavour, network, logger, onnx_path)

    config = builder.create_builder_config()
    flavour.configure_targets(config, target_cc)
    if workspace_bytes is not None:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))

    opt_profile = builder.create_optimization_profile()
    names = {network.get_input(i).name for i in range(network.num_inputs)}
    missing = names - set(profile.shapes)
    if missing:
        raise BuildError(f"profile has no shapes for inputs {sorted(missing)}")
    for name in sorted(names):
        lo, opt, hi = profile.shapes[name]
        opt_profile.set_shape(name, lo, opt, hi)
    config.add_optimization_profile(opt_profile)

    timing_cache_file = Path(timing_cache_path) if timing_cache_path is not None else None
    timing_cache = _load_timing_cache(flavour, config, timing_cache_file)

    monitor = None
    if (progress is not None or cancel is not None) and flavour.has_progress_monitor():
        monitor = _make_progress_monitor(flavour, progress or (lambda *_: None), cancel)
        config.progress_monitor = monitor

    plan = builder.build_serialized_network(network, config)
    if monitor is not None and monitor.error is not None:
        if isinstance(monitor.error, BuildCancelled):
            raise monitor.error
        raise BuildError(f"progress callback failed: {monitor.error!r}") from monitor.error
    if cancel is not None and cancel.is_set():
        raise BuildCancelled("engine build cancelled")
    if plan is None:
        raise BuildError(f"{flavour.tag} failed to build an engine from {onnx_path.name} (see TensorRT log)")
    if timing_cache is not None and timing_cache_file is not None:
        _save_timing_cache(config, timing_cache_file)
    return bytes(memoryview(plan))

