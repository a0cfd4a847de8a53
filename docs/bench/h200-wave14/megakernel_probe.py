"""H200 probe: the decode megakernel against the Triton decode step (numerics and graph-replay time).

Full-size Qwen2-0.5B decode shapes (24 layers, 896 wide, 14/2 heads, 4864 inner, head 6564 rows), seeded random
float16 weights, the caches filled with noise. For each position: both decoders' logits from the same row and
cache, and a CUDA graph of each step replayed back to back (CUDA events, median of 20 batches of 50 replays).
Writes a JSON summary to argv[1].
"""

import json
import sys
from pathlib import Path
import time

import torch

sys.path.insert(0, str(Path(__file__).parent))
import decode_megakernel as dm  # noqa: E402  (beside this script)

from cosydesk.runtime.backends.cudagraph import decode_kernels as dk  # noqa: E402
from probe_setup import HD, KV, MAXLEN, NH, V, cache0, dev, head_b, head_w, layers, norm, replay_us, rows, run_step  # noqa: E402,E501

out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "cases": {}, "timing_us": {}}
t0 = time.time()
mega = dm.MegakernelDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD, MAXLEN)
out["compile_s"] = round(time.time() - t0, 2)
out["plan"] = mega.plan.__dict__
tri = dk.TritonDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD)
print("plan", mega.plan, "compile", out["compile_s"], "s", flush=True)


# numerics: one step at several positions, each from the same cache
for pos in (0, 1, 70, 255, 256, 300, 1000, MAXLEN - 1):
    res = {}
    for name, d in (("triton", tri), ("mega", mega)):
        caches = cache0.clone()
        logits = torch.zeros(V, device=dev)
        run_step(d, caches, pos, rows[pos % 64], logits)
        torch.cuda.synchronize()
        res[name] = (logits, caches)
    lt, lm = res["triton"][0], res["mega"][0]
    kdiff = (res["triton"][1].float() - res["mega"][1].float()).abs().max().item()
    c = {"max_abs": (lt - lm).abs().max().item(), "scale": lt.abs().max().item(),
         "argmax_equal": int(lt.argmax()) == int(lm.argmax()), "cache_max_abs": kdiff,
         "nan": bool(torch.isnan(lm).any())}
    out["cases"][str(pos)] = c
    print("pos", pos, c, flush=True)

# a run of consecutive steps on one cache (the cache rows written by earlier launches are read back)
seq = {}
for name, d in (("triton", tri), ("mega", mega)):
    caches = cache0.clone()
    logits = torch.zeros(V, device=dev)
    got = []
    for i in range(40):
        run_step(d, caches, 100 + i, rows[i], logits)
        got.append(logits.clone())
    seq[name] = torch.stack(got)
out["sequence_max_abs"] = (seq["triton"] - seq["mega"]).abs().max().item()
print("sequence max abs", out["sequence_max_abs"], flush=True)

# timing: each step captured in a graph, replayed back to back
for pos in (70, 300, 1000):
    for name, d in (("triton", tri), ("mega", mega)):
        median, fastest = replay_us(d, pos)
        out["timing_us"][f"{name}@{pos}"] = median
        print(name, pos, "median us/step", median, "min", fastest, flush=True)

json.dump(out, open(sys.argv[1], "w"), indent=1)
