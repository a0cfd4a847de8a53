"""GPU probe: where one flow call and one vocoder chunk spend their time, per version, cudagraph backend.

    python3 docs/bench/h200-wave3/stage_profile.py --version v3 --out $OUT/profile-v3.json

Random full-size weights (``cosydesk.synthetic.full_size``), the cudagraph backend as the app builds it.
CUDA-event medians after warm-up of: the whole first-chunk flow call (20 prompt + 33 tokens), the same call's
parts (the CFM solve alone on its bucket, the rest = encoder / pre-lookahead / length handling), flow calls of
growing length (frames beyond the largest captured bucket fall back to the eager solver), one vocoder chunk, and
a torch.profiler table of one flow call and one vocoder chunk (top kernels / ops by CUDA time, kernel counts).
Measurement tool only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.model.hift_stream import CausalHiFTStream  # noqa: E402
from cosydesk.runtime.backends import accelerate  # noqa: E402
from cosydesk.synthetic.full_size import random_model  # noqa: E402


def cuda_ms(fn, warmup: int = 3, repeats: int = 15) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", choices=["v2", "v3"], default="v3")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    master = random_model(args.version, device="cuda", dtype=torch.float32, seed=0)
    model = accelerate(master, "cudagraph")
    flow, device = model.flow, model.device
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 6561, (1, 20), generator=g, dtype=torch.int32).to(device)
    feat = (torch.randn(1, 40, 80, generator=g) * 2 - 5).to(device, model.dtype)
    emb = (torch.randn(1, 192, generator=g) * 5).to(device, model.dtype)
    tokens_all = torch.randint(0, 6561, (1, 700), generator=g, dtype=torch.int32).to(device)
    i32 = lambda n: torch.tensor([n], dtype=torch.int32, device=device)  # noqa: E731

    def flow_call(n: int, streaming: bool = True, finalize: bool = False):
        return flow.inference(tokens_all[:, :n], i32(n), prompt, i32(20), feat, i32(40), emb,
                              streaming=streaming, finalize=finalize)

    result: dict = {"version": args.version, "flow_buckets": list(flow.decoder.buckets)}
    with torch.inference_mode():
        result["flow_first_chunk_ms"] = cuda_ms(lambda: flow_call(33))
        frames = 2 * (20 + 33)
        dec = flow.decoder
        z = torch.randn(1, 80, frames, device=device, dtype=model.dtype)
        mask = torch.ones(1, 1, frames, device=device, dtype=model.dtype)
        spk = torch.randn(1, 80, device=device, dtype=model.dtype)
        result["cfm_solve_first_chunk_ms"] = cuda_ms(lambda: dec(z, mask, z, spk, z, streaming=True))
        result["flow_rest_first_chunk_ms"] = result["flow_first_chunk_ms"] - result["cfm_solve_first_chunk_ms"]
        rows = []
        for n in (33, 83, 183, 283, 383, 483, 583, 663):
            before = dec.eager_calls
            ms_stream = cuda_ms(lambda: flow_call(n), warmup=1, repeats=3)
            ms_final = cuda_ms(lambda: flow_call(n, streaming=False, finalize=True), warmup=1, repeats=3)
            rows.append({"tokens": n, "frames": 2 * (20 + n), "streaming_ms": ms_stream, "final_ms": ms_final,
                         "eager_solver": dec.eager_calls > before})
        result["flow_by_length"] = rows
        hift_param = next(iter(model.hift.parameters()), None) if hasattr(model.hift, "parameters") else None
        mel = torch.randn(1, 80, 100, device=device, dtype=hift_param.dtype if hift_param is not None else model.dtype)
        if args.version == "v3":
            def vocode():
                stream = CausalHiFTStream(model.hift)
                stream.push(mel[:, :, :60], finalize=False)
                stream.push(mel, finalize=False)
            result["vocoder_two_chunks_ms"] = cuda_ms(vocode)
        else:
            src = torch.zeros(1, 1, 0, device=device, dtype=model.dtype)
            result["vocoder_chunk_ms"] = cuda_ms(lambda: model.hift.inference_with_source(mel[:, :, :56], cache_source=src))
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            flow_call(33)
            torch.cuda.synchronize()
        result["flow_profile"] = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        result["flow_call_kernels"] = len(kernels)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            vocode() if args.version == "v3" else model.hift.inference_with_source(mel[:, :, :56], cache_source=src)
            torch.cuda.synchronize()
        result["vocoder_profile"] = prof.key_averages().table(sort_by="cuda_time_total", row_limit=20)
        result["vocoder_kernels"] = len([e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA])
    summary = {k: v for k, v in result.items() if not k.endswith("_profile")}
    print(json.dumps(summary, indent=1))
    print(result["flow_profile"])
    print(result["vocoder_profile"])
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
