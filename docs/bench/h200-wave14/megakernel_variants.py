"""H200 probe 2: where the megakernel's step time goes. Variants of decode_megakernel.cu (macros): the arrival
counter or per-block flags as the grid barrier; each alone (PROBE_MODE=1: the 119 barriers, nothing else) and
without barriers (PROBE_MODE=2: the phases alone, wrong results). Graph replays at position 70, median of 20
batches of 50. Writes JSON to argv[1]."""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import decode_megakernel as dm  # noqa: E402  (beside this script)

from cosydesk.runtime.backends.cudagraph.qwen import LayerWeights

L, H, I, NH, KV, HD, V, MAXLEN = 24, 896, 4864, 14, 2, 64, 6564, 1536
dev = torch.device("cuda")
g = torch.Generator().manual_seed(0)
r = lambda *s, k=0.03: (torch.randn(*s, generator=g) * k).to(dev, torch.float16)  # noqa: E731
layers = [LayerWeights(1 + r(H, k=0.1), r((NH + 2 * KV) * HD, H), r((NH + 2 * KV) * HD, k=0.3), r(H, H),
                       1 + r(H, k=0.1), r(2 * I, H), r(H, I), 1e-6) for _ in range(L)]
norm, head_w, head_b = 1 + r(H, k=0.1), r(V, H, k=0.05), r(V, k=0.1)
inv = 1.0 / (1e6 ** (torch.arange(0, HD, 2, dtype=torch.float32) / HD))
table = torch.cat([torch.outer(torch.arange(MAXLEN, dtype=torch.float32), inv)] * 2, -1)
cos, sin = table.cos().to(dev), table.sin().to(dev)
cache0 = (torch.randn(2, L, 1, KV, MAXLEN, HD, generator=g) * 0.5).to(dev, torch.float16)
row = torch.randn(H, generator=g).to(dev, torch.float16)
variants = {"counter": (), "flags": ("-DFLAG_BARRIER",), "counter-barriers-only": ("-DPROBE_MODE=1",),
            "flags-barriers-only": ("-DFLAG_BARRIER", "-DPROBE_MODE=1"), "no-barriers": ("-DPROBE_MODE=2",),
            "copies-only": ("-DPROBE_MODE=3",)}
out = {}
ref = None
for name, extra in variants.items():
    d = dm.MegakernelDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD, MAXLEN, extra_defines=extra)
    caches = cache0.clone()
    logits = torch.zeros(V, device=dev)
    position = torch.tensor([70], device=dev)

    def body():
        d.x.copy_(row)
        d.step(caches[0], caches[1], cos, sin, position, logits)

    body()
    torch.cuda.synchronize()
    if ref is None:
        ref = logits.clone()
    diff = (logits - ref).abs().max().item()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    for _ in range(20):
        graph.replay()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(50):
            graph.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000 / 50)
    times.sort()
    out[name] = {"us": round(times[10], 1), "max_abs_vs_counter": diff}
    print(name, out[name], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
