"""GPU probe (wave 12): v3's DiT estimator call as the app compiles it, against (a) the attention on SDPA's
memory-efficient kernel instead of cuDNN's, (b) the blocks compiled with Inductor's max-autotune (its Triton
matrix templates benchmarked against cuBLAS, epilogues fused into the winners), (c) both. One variant per process
(the SDPA choice is made when the blocks are traced). Timed as one CUDA graph of the estimator call, CFG batch
2 x T, median of 50 replays (CUDA events), frames 128 / 192 / 256; kernels of one replay by name; the output's
error against the app's variant is printed by the shell that compares the saved outputs. Full-size random v3
weights (``synthetic.full_size``). Lines of JSON on stdout. Measurement tool.

    python3 docs/bench/h200-wave12/dit_variants_probe.py VARIANT OUTDIR   # app | efficient | autotune | both
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.backends.cudagraph.compile import ESTIMATOR_BLOCKS, _configure_inductor  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_prepared import use_prepared_dit  # noqa: E402
from cosydesk.synthetic.full_size import build_random_networks  # noqa: E402

FRAMES = (128, 192, 256)


def graphed(fn):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def timed(graph, replays: int = 50) -> float:
    for _ in range(10):
        graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def kernels(graph) -> dict:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    names = collections.Counter(e.name[:60] for e in events)
    busy = collections.defaultdict(float)
    for e in events:
        busy[e.name[:60]] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    top = sorted(busy.items(), key=lambda kv: -kv[1])[:10]
    return {"kernels": sum(names.values()), "top_us": {k: [names[k], round(v, 1)] for k, v in top}}


def main() -> int:
    variant, outdir = sys.argv[1], Path(sys.argv[2])
    device = torch.device("cuda")
    _, _, _, _, flow, _ = build_random_networks("v3", seed=0)
    sampler = types.SimpleNamespace(estimator=flow.decoder.estimator)
    use_prepared_dit(sampler)
    prepared = sampler.estimator.to(device, torch.float16)
    if variant in ("efficient", "both"):
        torch.backends.cuda.enable_cudnn_sdp(False)
        torch.backends.cuda.enable_flash_sdp(False)
    _configure_inductor()
    options = {"max_autotune": True} if variant in ("autotune", "both") else None
    for module in prepared.modules():
        if type(module) in ESTIMATOR_BLOCKS:
            module.compile(backend="inductor", options=options)
    outs = {}
    for frames in FRAMES:
        g = torch.Generator(device=device).manual_seed(frames)
        x, mu, cond = (torch.randn(2, 80, frames, device=device, generator=g).half() for _ in range(3))
        spks = torch.randn(2, 80, device=device, generator=g).half()
        mask = torch.ones(2, 1, frames, device=device, dtype=torch.float16)
        mask[:, :, frames - 9:] = 0  # a padded bucket's tail
        t = torch.full((2,), 0.4, device=device, dtype=torch.float16)
        with torch.inference_mode():
            times = prepared.time_projections(t)
            allowed = prepared.attention_mask(mask, True)
            t0 = time.perf_counter()
            graph, out = graphed(lambda: prepared(x, mask, mu, t, spks, cond, times=times, allowed=allowed))
            setup = time.perf_counter() - t0
            outs[frames] = out.float().cpu()
            row = {"variant": variant, "frames": frames, "ms": round(timed(graph), 4), "setup_s": round(setup, 1),
                   **kernels(graph)}
        print(json.dumps(row), flush=True)
    torch.save(outs, outdir / f"dit-{variant}.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
