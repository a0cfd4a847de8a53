"""GPU probe (wave 11): the v3 DiT step as the app compiles it (``PreparedDiT``, q/k/v fused, Inductor blocks) and
with the feed-forward's bias + tanh-GELU in cuBLASLt's epilogue (``torch._addmm_activation``), timed as one CUDA
graph of the whole estimator call (median of 50 replays, CUDA events), CFG batch 2 x T frames; plus the epilogue's
error against float32 tanh- and erf-GELU (which one cuBLASLt computes), and the kernels of one replay by name
(torch.profiler). Full-size random v3 weights (``synthetic.full_size``). Lines of JSON on stdout. Measurement tool.

    python3 docs/bench/h200-wave11/dit_step_probe.py > $OUT/dit-step-probe.log
"""

from __future__ import annotations

import collections
import copy
import json
import statistics
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.backends.cudagraph.compile import ESTIMATOR_BLOCKS, compile_blocks  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_prepared import use_prepared_dit  # noqa: E402
from cosydesk.synthetic.full_size import build_random_networks  # noqa: E402


class EpilogueFeedForward(nn.Module):
    """FeedForward with Linear + GELU as one cuBLASLt product (bias and GELU in the epilogue)."""

    def __init__(self, ff):
        super().__init__()
        self.up, self.down = ff.ff[0][0], ff.ff[2]

    def forward(self, h):
        flat = h.reshape(-1, h.shape[-1])
        act = torch._addmm_activation(self.up.bias, flat, self.up.weight.t(), use_gelu=True)
        return F.linear(act, self.down.weight, self.down.bias).view(*h.shape[:-1], -1)


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
    names = collections.Counter(e.name for e in prof.events() if e.device_type.name == "CUDA")
    return {"kernels": sum(names.values()), "by_name": dict(names.most_common(14))}


def epilogue_error(device) -> dict:
    g = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(256, 1024, device=device, generator=g)
    w = 0.03 * torch.randn(2048, 1024, device=device, generator=g)
    b = 0.1 * torch.randn(2048, device=device, generator=g)
    pre = torch.addmm(b, x, w.t())
    tanh, erf = F.gelu(pre, approximate="tanh"), F.gelu(pre)
    ours = torch._addmm_activation(b.half(), x.half(), w.half().t(), use_gelu=True).float()
    plain = F.gelu(torch.addmm(b.half(), x.half(), w.half().t()), approximate="tanh").float()
    return {"epilogue_vs_tanh": float((ours - tanh).abs().max()), "epilogue_vs_erf": float((ours - erf).abs().max()),
            "plain_fp16_vs_tanh": float((plain - tanh).abs().max()), "tanh_vs_erf": float((tanh - erf).abs().max())}


def main() -> int:
    device = torch.device("cuda")
    print(json.dumps({"gpu": torch.cuda.get_device_name(), **epilogue_error(device)}), flush=True)
    _, _, _, _, flow, _ = build_random_networks("v3", seed=0)
    dit = flow.decoder.estimator
    variants = {}
    for name in ("fused", "fused+gelu-epilogue"):
        sampler = types.SimpleNamespace(estimator=copy.deepcopy(dit))
        use_prepared_dit(sampler)
        prepared = sampler.estimator
        if name.endswith("epilogue"):
            for block in prepared.dit.transformer_blocks:
                block.ff = EpilogueFeedForward(block.ff)
        prepared.to(device, torch.float16)
        compile_blocks(prepared, ESTIMATOR_BLOCKS, device)
        variants[name] = prepared
    for frames in (128, 256):
        g = torch.Generator(device=device).manual_seed(frames)
        x, mu, cond = (torch.randn(2, 80, frames, device=device, generator=g).half() for _ in range(3))
        spks = torch.randn(2, 80, device=device, generator=g).half()
        mask = torch.ones(2, 1, frames, device=device, dtype=torch.float16)
        t = torch.full((2,), 0.4, device=device, dtype=torch.float16)
        outs = {}
        for name, prepared in variants.items():
            with torch.inference_mode():
                times = prepared.time_projections(t)
                allowed = prepared.attention_mask(mask, True)
                graph, out = graphed(lambda: prepared(x, mask, mu, t, spks, cond, times=times, allowed=allowed))
                outs[name] = out.float()
                row = {"frames": frames, "variant": name, "ms": round(timed(graph), 4), **kernels(graph)}
            print(json.dumps(row), flush=True)
        ref = outs["fused"]
        print(json.dumps({"frames": frames, "epilogue_vs_fused_rel": float((outs["fused+gelu-epilogue"] - ref).abs().max()
                                                                         / ref.abs().max())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
