"""GPU probe: what a built cudagraph backend allocates while it synthesises (the bench's forced sentences, as
``cosydesk bench`` runs them): NVML and torch memory after the build and after each sentence, and the largest
allocations made during the sentences with their Python stacks and streams.

    python3 docs/bench/h200-wave7/run_memory_probe.py --version v3 --out $OUT/run-mem-v3.json

Measurement tool only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.runtime.allocator import prefer_expandable_segments  # noqa: E402

prefer_expandable_segments()

from cosydesk.bench.backend_run import synthesize_one  # noqa: E402
from cosydesk.bench.inputs import LLMStats, LoopOptions, make_forced_sentences, read_corpus  # noqa: E402
from cosydesk.bench.probes import MemoryProbe  # noqa: E402
from cosydesk.runtime.backends import accelerate, place_model  # noqa: E402
from cosydesk.runtime.host_copy import PinnedCopier  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def frames_of(entry) -> str:
    out = []
    for f in entry.get("frames", []):
        name = f.get("filename", "")
        if "cosydesk" in name or "/torch/nn/" in name:
            out.append(f"{name.split('cosydesk/')[-1]}:{f.get('line')} {f.get('name')}")
    return " | ".join(out[:5])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v3")
    parser.add_argument("--corpus", default="short")
    parser.add_argument("--sentences", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = torch.device("cuda")
    probe = MemoryProbe(device)
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    sentences = make_forced_sentences(master.version, read_corpus(args.corpus, args.sentences), seed=0)
    model = accelerate(place_model(master, device, "cudagraph"), "cudagraph")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    marks = [{"after": "built", "nvml_gb": probe.nvml_gb(), "reserved_mb": torch.cuda.memory_reserved() / 1e6}]
    streams = (torch.cuda.Stream(), torch.cuda.Stream())
    copier = PinnedCopier(device)
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=500000)
    for i, sentence in enumerate(sentences):
        synthesize_one(model, sentence, LLMStats(), copier, streams, seed=i, loop=LoopOptions("argmax", True))
        torch.cuda.synchronize()
        marks.append({"after": f"sentence {i}", "nvml_gb": probe.nvml_gb(),
                      "reserved_mb": torch.cuda.memory_reserved() / 1e6,
                      "allocated_mb": torch.cuda.memory_allocated() / 1e6,
                      "peak_reserved_mb": torch.cuda.max_memory_reserved() / 1e6})
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    allocs = []
    for trace in snapshot.get("device_traces", []):
        for e in trace:
            if e.get("action") == "alloc":
                allocs.append((e["size"], e.get("stream"), frames_of(e)))
            if e.get("action") in ("segment_alloc", "segment_map"):
                allocs.append((e["size"], e.get("stream"), "SEGMENT " + e.get("action") + " " + frames_of(e)))
    by_site = Counter()
    for size, stream, where in allocs:
        by_site[(stream, where)] += size
    segments = [a for a in allocs if a[2].startswith("SEGMENT")]
    result = {"version": args.version, "marks": marks,
              "segment_growth": [{"mb": round(s / 1e6, 2), "stream": st, "where": w} for s, st, w in segments][:60],
              "largest_allocs": [{"mb": round(s / 1e6, 2), "stream": st, "where": w}
                                 for s, st, w in sorted(allocs, key=lambda a: -a[0])[:40]],
              "bytes_by_site_mb": [{"mb": round(v / 1e6, 2), "stream": k[0], "where": k[1]}
                                   for k, v in by_site.most_common(30)],
              "streams": {str(s): round(sum(a[0] for a in allocs if a[1] == s) / 1e6, 1)
                          for s in {a[1] for a in allocs}}}
    for m in marks:
        print(json.dumps(m))
    for key in ("segment_growth", "largest_allocs", "bytes_by_site_mb"):
        print("==", key)
        for row in result[key][:25]:
            print(row["mb"], row["stream"], row["where"][:300])
    print("streams", result["streams"])
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
