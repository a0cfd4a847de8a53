"""GPU probe: the device memory a built backend holds outside torch's allocator, and whether the driver's local
memory (per-thread stack, reserved for every thread the GPU can hold) is part of it.

Marks (NVML process memory, torch reserved, the context's stack-size limit) after the CUDA context, after the
build, after a few bench sentences; then the stack limit set back to lower values, NVML read again and the same
sentences re-run (their waves compared with the first run's, bit for bit). Lines of JSON on stdout.

    python3 docs/bench/h200-wave8/lmem_probe.py --version v3 > $OUT/lmem-v3.log

Measurement tool only.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
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

CU_LIMIT_STACK_SIZE = 0
_driver = ctypes.CDLL("libcuda.so.1")


def stack_limit() -> int:
    value = ctypes.c_size_t(0)
    rc = _driver.cuCtxGetLimit(ctypes.byref(value), CU_LIMIT_STACK_SIZE)
    return int(value.value) if rc == 0 else -rc


def set_stack_limit(value: int) -> int:
    return int(_driver.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, ctypes.c_size_t(value)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v1", "v2", "v3"], default="v3")
    parser.add_argument("--corpus", default="short")
    parser.add_argument("--sentences", type=int, default=3)
    parser.add_argument("--limits", default="1024,512,256,128,64,0")
    args = parser.parse_args()
    device = torch.device("cuda")
    probe = MemoryProbe(device)

    def mark(what: str, **extra) -> None:
        torch.cuda.synchronize()
        print(json.dumps({"after": what, "nvml_mb": round(probe.nvml_gb() * 1000, 1),
                          "reserved_mb": round(torch.cuda.memory_reserved() / 1e6, 1),
                          "allocated_mb": round(torch.cuda.memory_allocated() / 1e6, 1),
                          "stack_limit": stack_limit(), **extra}), flush=True)

    torch.zeros(1, device=device)
    mark("context")
    master = random_model(args.version, device="cpu", dtype=torch.float32, seed=0)
    sentences = make_forced_sentences(master.version, read_corpus(args.corpus, args.sentences), seed=0)
    model = accelerate(place_model(master, device, "cudagraph"), "cudagraph")
    torch.cuda.empty_cache()
    mark("built")
    copier = PinnedCopier(device)
    loop = LoopOptions("argmax", True)

    def run() -> list:
        return [synthesize_one(model, s, LLMStats(), copier, seed=i, loop=loop)[2]
                for i, s in enumerate(sentences)]

    reference = run()
    mark("sentences")
    for value in [int(v) for v in args.limits.split(",")]:
        rc = set_stack_limit(value)
        mark(f"stack limit set to {value}", rc=rc)
        try:
            waves = run()
        except Exception as err:  # noqa: BLE001 - a probe: report and stop lowering
            mark(f"sentences at {value} failed", error=f"{type(err).__name__}: {err}"[:300])
            return 0
        same = all(w.shape == r.shape and bool((w == r).all()) for w, r in zip(waves, reference))
        mark(f"sentences at {value}", same_waves=same)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
