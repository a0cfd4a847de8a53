"""GPU probe: NVML process memory and torch's reserved / allocated memory at every stage of building the cudagraph
backend (weights placed, each LLM / flow / vocoder graph), and the free blocks left in torch's default pool.

    python3 docs/bench/h200-wave7/memory_probe.py --version v3 --placement place_model --out $OUT/mem-v3.json

``--placement place_model``: as the app and `cosydesk bench` place a model since wave 7 (``place_model``: cast on
the way, v3's DiT table built on the host). ``fp32-then-cast``: as the app did before (float32 onto the GPU, then
cast there by ``accelerate``). Random full-size weights. Measurement tool only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.allocator import prefer_expandable_segments  # noqa: E402

prefer_expandable_segments()

from cosydesk.bench.probes import MemoryProbe  # noqa: E402
from cosydesk.runtime.backends import accelerate, place_model  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def free_blocks(pool_min_mb: float = 1.0) -> list[dict]:
    out = []
    for seg in torch.cuda.memory_snapshot():
        for b in seg["blocks"]:
            if b["state"] == "inactive" and b["size"] >= pool_min_mb * 1e6:
                out.append({"mb": round(b["size"] / 1e6, 1), "pool": str(seg.get("segment_pool_id"))})
    return sorted(out, key=lambda f: -f["mb"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v3")
    parser.add_argument("--placement", choices=["place_model", "fp32-then-cast"], default="place_model")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.cuda.init()
    probe = MemoryProbe(device)
    marks = []

    def mark(what: str) -> None:
        marks.append({"after": what, "nvml_gb": round(probe.nvml_gb() or 0, 4),
                      "reserved_mb": round(torch.cuda.memory_reserved() / 1e6, 1),
                      "allocated_mb": round(torch.cuda.memory_allocated() / 1e6, 1),
                      "peak_allocated_mb": round(torch.cuda.max_memory_allocated() / 1e6, 1)})

    torch.empty(1, device=device)
    mark("context")
    model = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    t0 = time.perf_counter()
    if args.placement == "place_model":
        model = place_model(model, device, "cudagraph")
    else:
        for module in (model.llm, model.flow, model.hift):
            module.to(device=device, dtype=torch.float32)
        import dataclasses

        model = dataclasses.replace(model, device=device)
    torch.cuda.synchronize()
    mark("weights placed")

    def progress(done, total, what=""):
        if done == total or done == 1 or done % 5 == 0:
            torch.cuda.synchronize()
            mark(f"{what} {done}/{total}")

    model = accelerate(model, "cudagraph", progress=progress)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    mark("built")
    blocks = free_blocks()
    result = {"version": args.version, "placement": args.placement, "build_s": round(time.perf_counter() - t0, 1),
              "marks": marks, "free_blocks_default_pool_mb": [b["mb"] for b in blocks if b["pool"] == "(0, 0)"],
              "free_mb_by_pool": {}}
    for b in blocks:
        result["free_mb_by_pool"][b["pool"]] = round(result["free_mb_by_pool"].get(b["pool"], 0) + b["mb"], 1)
    stats = torch.cuda.memory_stats()
    result["segments"] = stats.get("segment.all.current")
    for m in marks:
        print(json.dumps(m))
    print(json.dumps({k: v for k, v in result.items() if k != "marks"}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
