"""GPU probe: where the cudagraph backend's memory goes (torch reserved and NVML process memory after each part is
captured), and for v3 the causal vocoder stream's time, graphed against eager.

    python3 docs/bench/h200-wave4/memory_probe.py --version v3 --out $OUT/bench/memory-v3.json

Random full-size weights on the host, cast to the GPU as ``cosydesk bench`` does; the backend as the app builds it.
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
from cosydesk.model.hift_stream import CausalHiFTStream  # noqa: E402
from cosydesk.runtime.backends import accelerate  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def cuda_ms(fn, warmup: int = 3, repeats: int = 15) -> float:
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v1", "v2", "v3"], default="v3")
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
    mark("built")
    result = {"version": args.version, "marks": marks,
              "param_gb": {name: sum(p.numel() * p.element_size() for p in getattr(master, name).parameters()) / 2e9
                           for name in ("llm", "flow", "hift")}}  # float16 sizes (v3 hift: x2)
    if args.version == "v3":
        hift = model.hift
        g = torch.Generator().manual_seed(1)
        mel = (torch.randn(1, 80, 160, generator=g) * 2 - 5).to(device)

        def vocode(vocoder):
            stream = CausalHiFTStream(vocoder)
            return [stream.push(mel[:, :, :60], finalize=False), stream.push(mel[:, :, 60:110], finalize=False),
                    stream.push(mel[:, :, 110:], finalize=True)]

        graphed, eager = torch.cat(vocode(hift), 1), torch.cat(vocode(hift.hift), 1)
        result["vocoder_stream"] = {
            "graphed_ms": cuda_ms(lambda: vocode(hift)), "eager_ms": cuda_ms(lambda: vocode(hift.hift)),
            "max_abs_diff": float((graphed - eager).abs().max()), "eager_calls": hift.eager_calls,
            "graphs": len(hift.graphs), "what": "three pushes: 60 + 50 frames non-final, 50 final"}
        print(result["vocoder_stream"], flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
