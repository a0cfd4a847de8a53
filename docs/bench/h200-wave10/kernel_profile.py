"""GPU probe: which kernels a short sentence's time goes to (issue 28: the short corpora's RTF).

Builds the v2 / v3 backend as the bench does (random full-size weights, forced tokens, the app's streams), runs
warm-up sentences, then profiles ``--sentences`` sentences of the short corpus (the LLM held for the first chunk,
as the app) with torch.profiler's CUDA activity (CUPTI traces the kernels inside graph replays). Prints one JSON
line per kernel name: launches per sentence, device time per sentence, mean duration. With programmatic
dependent launch on (the default) a kernel's duration includes its wait for the previous kernel; run once more
with COSYDESK_PDL=0 for the work alone.

    python3 docs/bench/h200-wave10/kernel_profile.py --version v2 > $OUT/profile-v2.log

Measurement tool only.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.allocator import prefer_expandable_segments  # noqa: E402

prefer_expandable_segments()

from cosydesk.bench.inputs import LLMStats, forced_token_source, make_forced_sentences, read_corpus  # noqa: E402
from cosydesk.runtime.backends import accelerate, place_model  # noqa: E402
from cosydesk.runtime.pipeline import run_sentence  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v2")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--top", type=int, default=60)
    args = parser.parse_args()
    device = torch.device("cuda")
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    sentences = make_forced_sentences(master.version, read_corpus("short", args.sentences + 3), seed=0)
    model = accelerate(place_model(master, device, "cudagraph"), "cudagraph")
    torch.cuda.empty_cache()

    def sentence(i: int) -> None:
        torch.manual_seed(i)
        forced = sentences[i]
        source = forced_token_source(model, forced.speech_ids, LLMStats(), sampler="argmax", seed=i)
        for result in run_sentence(model, forced.inputs, source, stream=True, zero_noise=True, first_chunk_alone=True):
            result.pcm.cpu()
        torch.cuda.synchronize()

    for i in range(3):
        sentence(i)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(3, 3 + args.sentences):
            sentence(i)
    per_name: dict[str, list[float]] = collections.defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA and event.name and "Memcpy" not in event.name:
            per_name[event.name].append(event.time_range.elapsed_us())
    n = args.sentences
    rows = sorted(per_name.items(), key=lambda kv: -sum(kv[1]))
    total_us = sum(sum(v) for v in per_name.values())
    print(json.dumps({"version": args.version, "sentences": n, "kernel_names": len(rows),
                      "launches_per_sentence": round(sum(len(v) for v in per_name.values()) / n, 1),
                      "kernel_ms_per_sentence": round(total_us / n / 1e3, 3)}), flush=True)
    for name, times in rows[: args.top]:
        print(json.dumps({"kernel": name[:120], "per_sentence": round(len(times) / n, 1),
                          "ms_per_sentence": round(sum(times) / n / 1e3, 3), "mean_us": round(sum(times) / len(times), 2),
                          "p50_us": round(sorted(times)[len(times) // 2], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
