"""GPU probe: where the cudagraph backend's reserved-but-unallocated memory sits (per graph pool), which captured
graph made each pool grow, and the largest allocations ever made during the build with their Python stacks.

    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 docs/bench/h200-wave6/memory_probe.py --version v3 \
        --out $OUT/memory-v3.json

Random full-size weights, cast to the GPU as ``cosydesk bench`` does; the backend as the app builds it.
Measurement tool only.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.bench.probes import MemoryProbe  # noqa: E402
from cosydesk.runtime.backends import accelerate  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def frames_of(entry) -> list[str]:
    out = []
    for f in entry.get("frames", []):
        name = f.get("filename", "")
        if "cosydesk" in name or "/torch/nn/" in name or "_inductor" in name:
            out.append(f"{name.split('site-packages/')[-1].split('cosydesk/')[-1]}:{f.get('line')} {f.get('name')}")
    return out[:6]


def analyse(snapshot: dict) -> dict:
    pools = defaultdict(lambda: {"segments": 0, "reserved_mb": 0.0, "allocated_mb": 0.0})
    ranges = []
    for seg in snapshot["segments"]:
        pool = str(seg.get("segment_pool_id"))
        p = pools[pool]
        p["segments"] += 1
        p["reserved_mb"] += seg["total_size"] / 1e6
        p["allocated_mb"] += sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated") / 1e6
        ranges.append((seg["address"], seg["address"] + seg["total_size"], pool))
    allocs = []
    for trace in snapshot.get("device_traces", []):
        for e in trace:
            if e.get("action") == "alloc":
                pool = next((p for lo, hi, p in ranges if lo <= e["addr"] < hi), "gone")
                allocs.append((e["size"], pool, frames_of(e)))
    allocs.sort(key=lambda a: -a[0])
    free = []  # what the largest reserved-but-free blocks held last (frames of their last allocation)
    for seg in snapshot["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "inactive" and b["size"] >= 1 << 20:
                free.append({"mb": round(b["size"] / 1e6, 1), "pool": str(seg.get("segment_pool_id")),
                             "stream": seg.get("stream"), "expandable": seg.get("is_expandable"),
                             "last_held": frames_of(b)})
    free.sort(key=lambda f: -f["mb"])
    return {"free_blocks": free[:40], "free_mb_total": round(sum(f["mb"] for f in free), 1),
            "pools": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in pools.items()},
            "largest_allocs": [{"mb": round(s / 1e6, 1), "pool": p, "frames": f} for s, p, f in allocs[:40]]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v3")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device("cuda")
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    probe = MemoryProbe(device)
    marks = []
    base = dataclasses.replace(master, llm=copy.deepcopy(master.llm), flow=copy.deepcopy(master.flow),
                               hift=copy.deepcopy(master.hift), device=device)
    for module in (base.llm, base.flow, base.hift):
        keep32 = module is base.hift and args.version == "v3"
        module.to(device=device, dtype=torch.float32 if keep32 else torch.float16)
    torch.cuda.synchronize()
    marks.append({"after": "weights", "allocated_mb": torch.cuda.memory_allocated() / 1e6,
                  "reserved_mb": torch.cuda.memory_reserved() / 1e6, "nvml_gb": probe.nvml_gb()})
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=400000)

    def progress(done, total, what=""):
        marks.append({"after": f"{what} {done}/{total}", "allocated_mb": round(torch.cuda.memory_allocated() / 1e6, 1),
                      "reserved_mb": round(torch.cuda.memory_reserved() / 1e6, 1)})

    model = accelerate(base, "cudagraph", progress=progress)
    del base
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    marks.append({"after": "built", "allocated_mb": torch.cuda.memory_allocated() / 1e6,
                  "reserved_mb": torch.cuda.memory_reserved() / 1e6, "nvml_gb": probe.nvml_gb()})
    result = {"version": args.version, "marks": marks, **analyse(torch.cuda.memory._snapshot())}
    torch.cuda.memory._record_memory_history(enabled=None)
    growth = []  # the graphs after which reserved memory grew by more than 4 MB
    for before, after in zip(marks, marks[1:]):
        if after["reserved_mb"] - before["reserved_mb"] > 4:
            growth.append((after["after"], round(after["reserved_mb"] - before["reserved_mb"], 1)))
    result["growth"] = growth
    stats = torch.cuda.memory_stats()
    result["stats_mb"] = {k: round(v / 1e6, 1) for k, v in stats.items()
                          if k.endswith(".all.current") and "bytes" in k}
    torch.cuda.empty_cache()
    result["reserved_mb_after_second_empty_cache"] = torch.cuda.memory_reserved() / 1e6
    print(json.dumps({k: result[k] for k in ("pools", "growth", "stats_mb", "free_mb_total",
                                             "reserved_mb_after_second_empty_cache")}, indent=1))
    for f in result["free_blocks"][:25]:
        print("free", f["mb"], f["pool"], f["stream"], f["expandable"], " | ".join(f["last_held"][:4]))
    print(json.dumps(marks[0]), json.dumps(marks[-1]))
    for a in result["largest_allocs"][:25]:
        print(a["mb"], a["pool"], " | ".join(a["frames"][:4]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
