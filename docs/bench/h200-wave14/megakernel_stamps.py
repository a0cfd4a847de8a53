"""H200 probe 6: where a layer's time goes in every block of the megakernel (USE_TMA, NO_FENCE, PREFETCH_NORMS,
PROBE_TIMES: thread 0's clock at 20 points of each layer). For each segment between consecutive points: the
median over layers 1-22 per block, then the median, the max and the slowest block over blocks, in SM cycles
(1.98 GHz). Position 70 and 300. Writes JSON to argv[1]."""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import decode_megakernel as dm  # noqa: E402  (beside this script)

from probe_setup import HD, KV, MAXLEN, NH, V, cache0, dev, head_b, head_w, layers, norm, rows, run_step  # noqa: E402,E501

row = rows[0]
# the points in the order a layer passes them (12-14 only in the attention blocks, 11 / 16 only where the warp
# 0 of the block has rows)
# (with ATTN_SPLIT, 12-14 are: rotated, probabilities, partial state stored and ticket taken)
ORDER = [(0, "top"), (10, "qkv slice ready"), (11, "qkv normed"), (1, "qkv done"), (2, "barrier 1"),
         (12, "attn rotated"), (13, "attn keys"), (14, "attn lanes merged"), (3, "attn done"), (4, "barrier 2"),
         (5, "output done"), (6, "barrier 3"), (15, "gu slice ready"), (16, "gu normed"), (7, "gu done"),
         (8, "barrier 4"), (17, "down slice ready"), (18, "down math"), (9, "down done")]
d = dm.MegakernelDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD, MAXLEN,
                         extra_defines=("-DUSE_TMA", "-DNO_FENCE", "-DPREFETCH_NORMS", "-DATTN_SPLIT", "-DPROBE_TIMES=1"))
out = {}
for pos in (70, 300):
    logits = torch.zeros(V, device=dev)
    caches = cache0.clone()
    for _ in range(5):  # warm; the last run's stamps are read
        run_step(d, caches, pos, row, logits)
    torch.cuda.synchronize()
    st = d.stamps()
    segs = {}
    for b in range(d.plan.blocks):
        seen = [(i, n) for i, n in ORDER if bool((st[b, 1:-1, i] > 0).all())]
        for (i0, n0), (i1, n1) in zip(seen, seen[1:]):
            segs.setdefault(f"{n0} -> {n1}", {})[b] = float((st[b, 1:-1, i1] - st[b, 1:-1, i0]).median())
        nxt = float((st[b, 2:-1, 0] - st[b, 1:-2, 9]).median())
        segs.setdefault("down done -> next top (barrier 5)", {})[b] = nxt
        segs.setdefault("layer", {})[b] = float((st[b, 2:, 0] - st[b, 1:-1, 0]).median())
    res = {}
    for name, per_block in segs.items():
        vals = torch.tensor(list(per_block.values()))
        worst = max(per_block, key=per_block.get)
        res[name] = {"blocks": len(per_block), "median": round(float(vals.median())), "max": round(float(vals.max())),
                     "slowest block": worst}
    out[str(pos)] = res
    print("position", pos, flush=True)
    for name, v in res.items():
        print(f"  {name:45s} {v}", flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
