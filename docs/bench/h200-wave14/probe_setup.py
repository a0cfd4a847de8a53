"""What the wave-14 probes share: full-size Qwen2-0.5B decode shapes (24 layers, 896 wide, 14/2 heads, 4864
inner, a 6564-row head) with seeded random float16 weights, the rotary tables, a noisy cache and 64 input rows;
and the graph-replay timer. Imported from beside the probes (each puts this folder on sys.path)."""

import torch

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
rows = torch.randn(64, H, generator=g).to(dev, torch.float16)  # the scripts' single "row" was rows[0]


def run_step(d, caches, pos: int, row, logits) -> None:
    """One step of decoder ``d`` from ``row`` at ``pos`` on ``caches`` (k, v), logits into ``logits``."""
    d.x.copy_(row)
    d.step(caches[0], caches[1], cos, sin, torch.tensor([pos], device=dev), logits)


def replay_us(d, pos: int) -> tuple[float, float]:
    """Median and min µs of decoder ``d``'s step at ``pos``, captured in a CUDA graph and replayed back to back
    (20 warm-up replays, then 20 batches of 50 timed with CUDA events)."""
    caches = cache0.clone()
    logits = torch.zeros(V, device=dev)
    position = torch.tensor([pos], device=dev)
    body = lambda: d.step(caches[0], caches[1], cos, sin, position, logits)  # noqa: E731
    body()
    torch.cuda.synchronize()
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
    return round(times[len(times) // 2], 1), round(times[0], 1)
