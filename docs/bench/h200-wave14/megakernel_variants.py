"""H200 probe 2: where the megakernel's step time goes. Variants of decode_megakernel.cu (macros): the arrival
counter or per-block flags as the grid barrier; each alone (PROBE_MODE=1: the 119 barriers, nothing else) and
without barriers (PROBE_MODE=2: the phases alone, wrong results; PROBE_MODE=3: only the weight copies and their
waits). Graph replays at position 70 (``probe_setup.replay_us``; until call 10 the replayed graph also copied
the input row). Writes JSON to argv[1]."""

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import decode_megakernel as dm  # noqa: E402  (beside this script)

from probe_setup import HD, KV, MAXLEN, NH, V, cache0, dev, head_b, head_w, layers, norm, replay_us, rows, run_step  # noqa: E402,E501

row = rows[0]
variants = {"counter": (), "flags": ("-DFLAG_BARRIER",), "counter-barriers-only": ("-DPROBE_MODE=1",),
            "flags-barriers-only": ("-DFLAG_BARRIER", "-DPROBE_MODE=1"), "no-barriers": ("-DPROBE_MODE=2",),
            "copies-only": ("-DPROBE_MODE=3",)}
out = {}
ref = None
for name, extra in variants.items():
    d = dm.MegakernelDecoder(layers, norm, 1e-6, head_w, head_b, NH, KV, HD, MAXLEN, extra_defines=extra)
    caches = cache0.clone()
    logits = torch.zeros(V, device=dev)
    run_step(d, caches, 70, row, logits)
    torch.cuda.synchronize()
    if ref is None:
        ref = logits.clone()
    diff = (logits - ref).abs().max().item()
    out[name] = {"us": replay_us(d, 70)[0], "max_abs_vs_counter": diff}
    print(name, out[name], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
