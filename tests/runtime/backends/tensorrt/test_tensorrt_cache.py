"""Engine cache: hit / miss / corrupt / stale / foreign, atomic writes, and the real RTX build path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from cosydesk.runtime.buckets import BucketSet
from cosydesk.runtime.backends.tensorrt.builder import build_engine, estimator_profile
from cosydesk.runtime.backends.tensorrt.cache import EngineCache, EngineKey, sha256_files
from cosydesk.runtime.backends.tensorrt.flavour import load_flavour
from cosydesk.runtime.backends.tensorrt.onnx_export import export_estimator
from tests.runtime.backends.tensorrt.test_tensorrt_export import StandInEstimator

KEY = EngineKey(model_sha256="a" * 64, module="flow_estimator", precision="fp16", profile="x:2x80x16/2x80x240/2x80x3008",
                flavour="tensorrt_rtx", trt_version="1.7.1.116", gpu="sm86")


class CountingBuilder:
    def __init__(self, payload: bytes = b"PLAN" * 1000):
        self.calls = 0
        self.payload = payload

    def __call__(self, progress):
        self.calls += 1
        if progress is not None:
            progress("build", 1, 1)
        return self.payload + bytes([self.calls])


def test_miss_then_hit_builds_once(tmp_path):
    cache, build = EngineCache(tmp_path / "engines"), CountingBuilder()
    first = cache.get_or_build(KEY, build)
    second = cache.get_or_build(KEY, build)
    assert first == second and first.is_file() and build.calls == 1
    assert cache.events == [(KEY.slot, "miss"), (KEY.slot, "hit")]
    sidecar = json.loads(cache.sidecar_path(KEY).read_text())
    assert sidecar["key"] == KEY.as_dict() and sidecar["plan_bytes"] == first.stat().st_size
    # A fresh cache object (next app start) also hits.
    assert EngineCache(tmp_path / "engines").get_or_build(KEY, build) == first and build.calls == 1


def test_progress_is_passed_to_the_build(tmp_path):
    seen = []
    EngineCache(tmp_path).get_or_build(KEY, CountingBuilder(), progress=lambda *a: seen.append(a))
    assert seen == [("build", 1, 1)]


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "empty", "sidecar_garbage", "sidecar_missing_field"])
def test_corrupt_entries_are_rebuilt(tmp_path, damage):
    cache, build = EngineCache(tmp_path), CountingBuilder()
    plan = cache.get_or_build(KEY, build)
    data = bytearray(plan.read_bytes())
    if damage == "flip_byte":
        data[len(data) // 2] ^= 0xFF
        plan.write_bytes(bytes(data))
    elif damage == "truncate":
        plan.write_bytes(bytes(data[:100]))
    elif damage == "empty":
        plan.write_bytes(b"")
    elif damage == "sidecar_garbage":
        cache.sidecar_path(KEY).write_text("{not json")
    else:
        meta = json.loads(cache.sidecar_path(KEY).read_text())
        del meta["plan_sha256"]
        cache.sidecar_path(KEY).write_text(json.dumps(meta))
    assert cache.state(KEY) == "corrupt"
    cache.get_or_build(KEY, build)
    assert build.calls == 2 and cache.state(KEY) == "hit"


def _sidecar_garbage(meta: dict, kind: str) -> bytes:
    """Garbage in the three kinds of issue 31 (binary junk, JSON of the wrong types, a truncated file) and more."""
    if kind == "binary_junk":
        return bytes(range(256)) * 8
    if kind == "truncated":
        return json.dumps(meta).encode()[:57]
    if kind == "deeply_nested":
        return b"[" * 100_000 + b"]" * 100_000
    if kind == "huge":
        return b" " * (2 * 1024 * 1024) + json.dumps(meta).encode()
    if kind == "top_level_list":
        return b"[1, 2, 3]"
    bad = dict(meta)
    if kind == "plan_bytes_infinite":
        return json.dumps(bad).replace(str(meta["plan_bytes"]), "1e400").encode()
    bad.update({"plan_bytes_string": {"plan_bytes": "many"}, "plan_bytes_bool": {"plan_bytes": True},
                "sha_number": {"plan_sha256": 5}, "key_list": {"key": [1, 2]}, "format_list": {"format": [1]},
                "key_values_objects": {"key": {field: {"x": 1} for field in meta["key"]}}}[kind])
    return json.dumps(bad).encode()


SIDECAR_GARBAGE = ["binary_junk", "truncated", "deeply_nested", "huge", "top_level_list", "plan_bytes_infinite",
                   "plan_bytes_string", "plan_bytes_bool", "sha_number", "key_list", "format_list", "key_values_objects"]


@pytest.mark.parametrize("kind", SIDECAR_GARBAGE)
def test_garbage_sidecars_are_a_rebuild_never_an_exception(tmp_path, kind):
    """The module's promise: a damaged cache is rebuilt, never raised (issue 31: three kinds raised)."""
    cache, build = EngineCache(tmp_path), CountingBuilder()
    cache.get_or_build(KEY, build)
    meta = json.loads(cache.sidecar_path(KEY).read_text())
    cache.sidecar_path(KEY).write_bytes(_sidecar_garbage(meta, kind))
    assert cache.state(KEY) in ("corrupt", "foreign", "stale")
    cache.get_or_build(KEY, build)
    assert build.calls == 2 and cache.state(KEY) == "hit"


@pytest.mark.parametrize("kind", ["directory", "dangling_symlink", "fifo"])
@pytest.mark.parametrize("which", ["plan", "sidecar"])
def test_something_else_in_a_slot_is_a_miss_and_gets_replaced(tmp_path, kind, which):
    import os

    cache, build = EngineCache(tmp_path), CountingBuilder()
    cache.get_or_build(KEY, build)
    path = cache.plan_path(KEY) if which == "plan" else cache.sidecar_path(KEY)
    path.unlink()
    if kind == "directory":
        (path / "inside").mkdir(parents=True)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(tmp_path / "nowhere")
    assert cache.state(KEY) == "miss"
    cache.get_or_build(KEY, build)
    assert build.calls == 2 and cache.state(KEY) == "hit" and path.is_file() and not path.is_symlink()


def test_a_plan_whose_size_disagrees_is_not_read(tmp_path, monkeypatch):
    """A garbage plan of any size is judged by its stat before its bytes are read into memory."""
    cache, build = EngineCache(tmp_path), CountingBuilder()
    plan = cache.get_or_build(KEY, build)
    with plan.open("ab") as handle:
        handle.truncate(8 * 1024 * 1024 * 1024)  # sparse: 8 GB that take no disk
    read_bytes = Path.read_bytes

    def no_plan_reads(self):
        if self.suffix == ".plan":
            pytest.fail(f"read {self.name} whole")
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", no_plan_reads)
    assert cache.state(KEY) == "corrupt"


class FakeTimingConfig:
    """Stands in for a TensorRT builder config: garbage bytes make create_timing_cache raise, as TensorRT may."""

    def __init__(self):
        self.caches = []

    def create_timing_cache(self, blob: bytes):
        if blob and not blob.startswith(b"TIMING"):
            raise RuntimeError("[TRT] invalid timing cache")
        self.caches.append(blob)
        return blob

    def set_timing_cache(self, cache, ignore_mismatch: bool) -> bool:
        return True


class FakeRuntimeConfig:
    """Stands in for a TensorRT-for-RTX runtime config: deserialize() raises on junk, returns False on a mismatch."""

    class Cache:
        def __init__(self):
            self.data = b""

        def deserialize(self, blob: bytes) -> bool:
            if blob.startswith(b"JUNK"):
                raise RuntimeError("[TRT] runtime cache corrupt")
            self.data = blob
            return blob.startswith(b"RTC")

    def create_runtime_cache(self):
        return self.Cache()


@pytest.mark.parametrize("content", [b"JUNK" + bytes(range(256)), b"TIMING"[:3], None])
def test_garbage_timing_cache_starts_fresh(tmp_path, content):
    from cosydesk.runtime.backends.tensorrt.builder import _load_timing_cache

    class Flavour:
        def has_timing_cache(self):
            return True

    path = tmp_path / "timing.cache"
    if content is None:
        (path / "not-a-file").mkdir(parents=True)
    else:
        path.write_bytes(content)
    config = FakeTimingConfig()
    assert _load_timing_cache(Flavour(), config, path) == b""  # a fresh cache, no exception


@pytest.mark.parametrize("content", [b"JUNK" + bytes(range(256)), b"other version", b"", None])
def test_garbage_runtime_cache_starts_fresh(tmp_path, content):
    from cosydesk.runtime.backends.tensorrt.runner import load_runtime_cache

    path = tmp_path / "runtime.cache"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    cache = load_runtime_cache(FakeRuntimeConfig(), path)
    assert cache.data == b""  # a fresh cache (a failed or mismatched deserialize leaves nothing behind)
    good = tmp_path / "good.cache"
    good.write_bytes(b"RTC kernels")
    assert load_runtime_cache(FakeRuntimeConfig(), good).data == b"RTC kernels"


def test_validator_rejection_counts_as_corrupt(tmp_path):
    build = CountingBuilder()
    EngineCache(tmp_path).get_or_build(KEY, build)
    picky = EngineCache(tmp_path, validate=lambda plan: False)
    assert picky.state(KEY) == "corrupt"
    crashing = EngineCache(tmp_path, validate=lambda plan: 1 / 0)
    assert crashing.state(KEY) == "corrupt"


@pytest.mark.parametrize("field,value,expected", [
    ("model_sha256", "b" * 64, "stale"),
    ("profile", "x:2x80x16/2x80x240/2x80x4096", "stale"),
    ("extra", "streaming", "stale"),
    ("trt_version", "1.8.0", "foreign"),
    ("flavour", "tensorrt", "foreign"),
    ("gpu", "sm120", "foreign"),
])
def test_stale_and_foreign_entries_are_rebuilt_in_place(tmp_path, field, value, expected):
    cache, build = EngineCache(tmp_path), CountingBuilder()
    cache.get_or_build(KEY, build)
    changed = dataclasses.replace(KEY, **{field: value})
    assert changed.slot == KEY.slot  # same slot: old engines do not pile up
    assert cache.state(changed) == expected
    path = cache.get_or_build(changed, build)
    assert build.calls == 2 and cache.state(changed) == "hit" and cache.state(KEY) == expected
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == sorted([path.name, cache.sidecar_path(KEY).name])


def test_invalidate_forces_rebuild(tmp_path):
    cache, build = EngineCache(tmp_path), CountingBuilder()
    cache.get_or_build(KEY, build)
    cache.invalidate(KEY)
    assert cache.state(KEY) == "miss"
    cache.get_or_build(KEY, build)
    assert build.calls == 2


def test_failed_build_leaves_no_entry(tmp_path):
    cache = EngineCache(tmp_path)

    def failing(progress):
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        cache.get_or_build(KEY, failing)
    assert cache.state(KEY) == "miss"
    assert not any(p.name.endswith(".tmp") for p in Path(tmp_path).iterdir())
    with pytest.raises(RuntimeError, match="no bytes"):
        cache.get_or_build(KEY, lambda progress: b"")


def test_sha256_files_depends_on_content_and_order(tmp_path):
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    a.write_bytes(b"1"), b.write_bytes(b"2")
    h = sha256_files([a, b])
    assert h == sha256_files([a, b]) and h != sha256_files([b, a])
    b.write_bytes(b"3")
    assert sha256_files([a, b]) != h


RTX = load_flavour("tensorrt_rtx")


@pytest.mark.skipif(RTX is None, reason="tensorrt_rtx not installed (pip install tensorrt-rtx-cu13)")
def test_real_rtx_engine_cached_and_second_run_rebuilds_nothing(tmp_path):
    torch.manual_seed(0)
    onnx_path = export_estimator(StandInEstimator().eval(), tmp_path / "est.onnx", "fp16", max_frames=512).path
    profile = estimator_profile(BucketSet("frames", (16, 64, 256)))
    key = EngineKey(sha256_files([onnx_path]), "flow_estimator", "fp16", profile.ranges_tag(), RTX.name,
                    RTX.version, RTX.target_tag())
    builds = []

    def build(progress):
        builds.append(1)
        return build_engine(onnx_path, profile, "fp16", RTX, progress)

    validate = lambda plan: RTX.malformed(plan) is not True  # noqa: E731
    events = []
    path = EngineCache(tmp_path / "engines", validate).get_or_build(key, build, lambda *a: events.append(a))
    assert len(builds) == 1 and events and RTX.malformed(path.read_bytes()) is False
    again = EngineCache(tmp_path / "engines", validate)
    assert again.get_or_build(key, build) == path and len(builds) == 1 and again.events[-1][1] == "hit"
    # Bytes replaced by something the library rejects but with a matching sidecar hash -> validator catches it.
    garbage = b"\x00" * 5000
    path.write_bytes(garbage)
    meta = json.loads(again.sidecar_path(key).read_text())
    import hashlib

    meta.update(plan_sha256=hashlib.sha256(garbage).hexdigest(), plan_bytes=len(garbage))
    again.sidecar_path(key).write_text(json.dumps(meta))
    assert again.state(key) == "corrupt"
    again.get_or_build(key, build)
    assert len(builds) == 2 and again.state(key) == "hit"
