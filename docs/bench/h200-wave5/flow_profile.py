"""GPU probe: the v3 cudagraph backend's memory by part, and where one first-chunk flow call's time goes (CUDA-event
median of the graphed call; kernel totals of a profiled call by name).

    python3 docs/bench/h200-wave5/flow_profile.py --version v3 --frames 106 --out $OUT/profile-v3.json

Random full-size weights, cast to the GPU as ``cosydesk bench`` does; the backend as the app builds it.
Measurement tool only.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.bench.probes import MemoryProbe  # noqa: E402
from cosydesk.runtime.backends import accelerate  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def cuda_ms(fn, warmup: int = 3, repeats: int = 20) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def memory_accounting(model) -> dict:
    """Parameter and buffer bytes per part, the allocator's totals and the largest live CUDA tensors (by storage)."""
    import gc

    def module_bytes(module) -> int:
        seen, total = set(), 0
        for t in list(module.parameters()) + list(module.buffers()):
            if t.is_cuda and t.untyped_storage().data_ptr() not in seen:
                seen.add(t.untyped_storage().data_ptr())
                total += t.untyped_storage().nbytes()
        return total

    parts = {"llm": model.llm, "flow": model.flow, "hift": getattr(model.hift, "hift", model.hift)}
    stats = torch.cuda.memory_stats()
    storages = {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj.is_cuda:
                st = obj.untyped_storage()
                storages[st.data_ptr()] = (st.nbytes(), f"{tuple(obj.shape)} {obj.dtype}")
        except Exception:  # noqa: BLE001 - some objects refuse inspection
            pass
    largest = sorted(storages.values(), reverse=True)[:30]
    return {"module_gb": {k: module_bytes(m) / 1e9 for k, m in parts.items() if isinstance(m, torch.nn.Module)},
            "allocated_gb": stats["allocated_bytes.all.current"] / 1e9,
            "reserved_gb": stats["reserved_bytes.all.current"] / 1e9,
            "inactive_split_gb": stats["inactive_split_bytes.all.current"] / 1e9,
            "live_tensor_storages_gb": sum(n for n, _ in storages.values()) / 1e9,
            "largest_storages": [[round(n / 1e6, 2), what] for n, what in largest]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v3")
    parser.add_argument("--frames", type=int, default=106)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device("cuda")
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    probe = MemoryProbe(device)
    marks = []

    def mark(label: str) -> None:
        torch.cuda.synchronize()
        marks.append({"after": label, "reserved_gb": round(probe.reserved_gb(), 4), "nvml_gb": probe.nvml_gb()})
        print(marks[-1], flush=True)

    mark("start")
    base = dataclasses.replace(master, llm=copy.deepcopy(master.llm), flow=copy.deepcopy(master.flow),
                               hift=copy.deepcopy(master.hift), device=device)
    for module in (base.llm, base.flow, base.hift):
        keep32 = module is base.hift and args.version == "v3"
        module.to(device=device, dtype=torch.float32 if keep32 else torch.float16)
    mark("weights")
    seen = []

    def progress(done, total, what=""):
        if done == total and what not in seen:
            seen.append(what)
            mark(f"{what} ({total} graphs)")

    model = accelerate(base, "cudagraph", progress=progress)
    del base
    torch.cuda.empty_cache()
    mark("built")
    sampler = model.flow.decoder
    frames = args.frames
    g = torch.Generator(device=device).manual_seed(0)
    z, mu, cond = (torch.randn(1, 80, frames, device=device, generator=g).half() for _ in range(3))
    mask = torch.ones(1, 1, frames, device=device, dtype=torch.float16)
    spks = torch.randn(1, 80, device=device, generator=g).half()
    call = lambda: sampler(z, mask, mu, spks, cond, streaming=True)  # noqa: E731
    result = {"version": args.version, "frames": frames, "marks": marks,
              "flow_call_ms": cuda_ms(call), "memory": memory_accounting(model)}
    print(json.dumps(result["memory"], indent=1), flush=True)
    print("flow call ms", result["flow_call_ms"], flush=True)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            call()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if t and ev.device_type.name == "CUDA":
            rows.append({"name": ev.key[:140], "calls_per_flow_call": ev.count / 3, "us_per_flow_call": t / 3})
    rows.sort(key=lambda r: -r["us_per_flow_call"])
    result["kernels"] = rows[:40]
    result["kernel_total_us_per_call"] = sum(r["us_per_flow_call"] for r in rows)
    result["kernel_launches_per_call"] = sum(r["calls_per_flow_call"] for r in rows)
    for r in rows[:25]:
        print(f"{r['us_per_flow_call']:9.1f} us {r['calls_per_flow_call']:7.1f}x {r['name'][:100]}", flush=True)
    print("total kernel us per call", result["kernel_total_us_per_call"], "launches", result["kernel_launches_per_call"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
