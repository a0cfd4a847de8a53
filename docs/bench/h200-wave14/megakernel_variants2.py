"""H200 probe 3: the megakernel after the first reading. Changes in decode_megakernel.cu: the barrier split into
arrive / wait with the next slice's copies issued between them (the copies no longer delay the arrival), and
the down projection's activation loads issued together. Variants: cp.async or Hopper bulk copies (USE_TMA);
each with and without barriers (PROBE_MODE=2); one run with clock stamps (PROBE_TIMES) for where a layer's time
goes per block. Numerics against the Triton step; graph replays at positions 70 and 300 (median of 20 batches
of 50). Writes JSON to argv[1]."""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import decode_megakernel as dm  # noqa: E402  (beside this script)

from cosydesk.runtime.backends.cudagraph import decode_kernels as dk  # noqa: E402
from probe_setup import HD, KV, MAXLEN, NH, V, cache0, dev, head_b, head_w, layers, norm, rows, run_step  # noqa: E402,E501
from probe_setup import replay_us as timed  # noqa: E402

def logits_at(d, pos, caches, row):
    logits = torch.zeros(V, device=dev)
    run_step(d, caches, pos, row, logits)
    torch.cuda.synchronize()
    return logits


def replay_us(d, pos):
    return timed(d, pos)[0]


tri = dk.TritonDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD)
ref = {pos: logits_at(tri, pos, cache0.clone(), rows[pos % 64]) for pos in (0, 70, 300, 1535)}
out = {"triton_us": {p: replay_us(tri, p) for p in (70, 300)}}
print("triton", out["triton_us"], flush=True)
VARIANTS_CALL5 = {"tma": ("-DUSE_TMA",), "tma-no-fence": ("-DUSE_TMA", "-DNO_FENCE"),
                  "tma-prefetch-norms": ("-DUSE_TMA", "-DPREFETCH_NORMS"),
                  "tma-both": ("-DUSE_TMA", "-DNO_FENCE", "-DPREFETCH_NORMS"),
                  "tma-both-stamps": ("-DUSE_TMA", "-DNO_FENCE", "-DPREFETCH_NORMS", "-DPROBE_TIMES=1")}
VARIANTS_CALL7 = {"tma-no-fence": ("-DUSE_TMA", "-DNO_FENCE"),
                  "split-attention": ("-DUSE_TMA", "-DNO_FENCE", "-DATTN_SPLIT"),
                  "split-attention-prefetch-norms": ("-DUSE_TMA", "-DNO_FENCE", "-DATTN_SPLIT", "-DPREFETCH_NORMS")}
BEST = ("-DUSE_TMA", "-DNO_FENCE", "-DATTN_SPLIT")
VARIANTS_CALL9 = {"split-attention": BEST, "split-attention-evict-first": BEST + ("-DEVICT_FIRST",),
                  "split-attention-no-stream (wrong results)": BEST + ("-DPROBE_MODE=4",),
                  "split-attention-no-stream-no-barriers (wrong results)": BEST + ("-DPROBE_MODE=4", "-DPROBE_MODE_NB")}
variants = {"cp.async": (), "tma": ("-DUSE_TMA",), "cp.async-no-barriers": ("-DPROBE_MODE=2",),
            "tma-no-barriers": ("-DUSE_TMA", "-DPROBE_MODE=2"), "tma-copies-only": ("-DUSE_TMA", "-DPROBE_MODE=3"),
            "tma-stamps": ("-DUSE_TMA", "-DPROBE_TIMES=1")}
if len(sys.argv) > 2 and sys.argv[2] == "call5":
    variants = VARIANTS_CALL5
if len(sys.argv) > 2 and sys.argv[2] == "call9":
    variants = VARIANTS_CALL9
if len(sys.argv) > 2 and sys.argv[2] == "call7":  # more positions checked: split edges, one key per block
    variants = VARIANTS_CALL7
    ref.update({pos: logits_at(tri, pos, cache0.clone(), rows[pos % 64]) for pos in (1, 7, 8, 9, 255, 256, 1000)})
for name, extra in variants.items():
    d = dm.MegakernelDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD, MAXLEN, extra_defines=extra)
    res = {"us": {p: replay_us(d, p) for p in (70, 300)}}
    if "PROBE_MODE" not in " ".join(extra) and "wrong" not in name:
        res["max_abs_vs_triton"] = max((logits_at(d, p, cache0.clone(), rows[p % 64]) - ref[p]).abs().max().item()
                                       for p in ref)
    if "-DPROBE_TIMES=1" in extra:
        logits_at(d, 70, cache0.clone(), rows[0])
        st = d.stamps()[:, :, :10]
        seg = st.diff(dim=2)  # segment i: stamp i -> i+1 (cycles)
        names = ["qkv (wait+math)", "barrier 1", "attention", "barrier 2", "output (wait+math)", "barrier 3",
                 "gate/up (wait+math)", "barrier 4", "down (wait+math)"]
        nxt = (st[:, 1:, 0] - st[:, :-1, 9])  # down end -> next layer start: barrier 5
        res["cycles_per_layer"] = {}
        for b in (0, 13, 14, 64, 131):
            row = {n: round(float(seg[b, 1:-1, i].median()), 0) for i, n in enumerate(names)}
            row["barrier 5"] = round(float(nxt[b, 1:].median()), 0)
            row["layer total"] = round(float((st[b, 2:, 0] - st[b, 1:-1, 0]).median()), 0)
            res["cycles_per_layer"][f"block {b}"] = row
    out[name] = res
    print(name, json.dumps(res), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
