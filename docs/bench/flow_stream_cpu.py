"""CPU probe: per-call streaming flow time, recomputing vs incremental (cosydesk.model.flow_stream).

    python docs/bench/flow_stream_cpu.py --version v2 --tokens 500 --threads 2 --out docs/bench/cpu-flow-stream-v2.json

A seeded random flow of ``tests.support.random_flow.MID`` size (or ``--sizes tiny``), a random prompt and
random speech tokens, the official v2/v3 chunk schedule (hops 25 -> 50 -> 100, 3 look-ahead tokens). For every
non-final call: wall time of the incremental call (in sequence, one state per repetition) and of the recomputing
call on the same tokens, the frames each ran the estimator on, and max |incremental - recompute| of the mel.
The final call (full attention) recomputes in both modes and is timed once per repetition. Times are the minimum
over ``--repeats`` repetitions (the machine may be shared); a first, untimed pass counts each call's floating-point
operations with torch's FlopCounterMode (matmuls and convolutions: a machine-independent work measure; it does
not see the CPU attention kernel, so the estimator's attention products, 4 * queries * keys * width per layer, CFG
row and step, are counted separately from the shapes).
Independent of ``cosydesk bench``: flow only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cosydesk.runtime.schedule import CausalChunkSchedule  # noqa: E402
from cosydesk.synthetic.model_yaml import TINY  # noqa: E402
from tests.support.random_flow import MID, random_flow  # noqa: E402


def _calls(n_tokens: int, n_prompt: int):
    schedule, calls = CausalChunkSchedule(n_prompt), []
    while True:
        call = schedule.next_call(n_tokens, done=True)
        calls.append(call)
        if call.finalize:
            return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", choices=["v2", "v3"], default="v2")
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--prompt", type=int, default=17)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sizes", choices=["mid", "tiny"], default="mid")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    flow = random_flow(args.version, MID if args.sizes == "mid" else TINY, seed=0)
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 6561, (1, args.tokens), generator=generator, dtype=torch.int32)
    prompt_token = torch.randint(0, 6561, (1, args.prompt), generator=generator, dtype=torch.int32)
    prompt_feat = torch.randn(1, 2 * args.prompt, 80, generator=generator) * 2 - 5
    embedding = torch.randn(1, 192, generator=generator) * 5
    prompt_len, feat_len = torch.tensor([args.prompt]), torch.tensor([2 * args.prompt])

    def run(end: int, streaming: bool, finalize: bool, state=None) -> tuple[torch.Tensor, float]:
        start = time.perf_counter()
        mel = flow.inference(tokens[:, :end], torch.tensor([end]), prompt_token, prompt_len, prompt_feat, feat_len,
                             embedding, streaming=streaming, finalize=finalize, stream_state=state)
        return mel, time.perf_counter() - start

    # summed q/k/v width of the estimator's attention layers (U-Net SelfAttention / DiT Attention)
    attention_width = sum(m.heads * m.dim_head for m in flow.estimator.modules() if hasattr(m, "dim_head"))

    def attention_gflop(queries: int, keys: int) -> float:
        return flow.decoder.n_steps * 2 * 4 * queries * keys * attention_width / 1e9

    def flops(end: int, streaming: bool, finalize: bool, state=None) -> int:
        with FlopCounterMode(display=False) as counter:
            run(end, streaming, finalize, state)
        return counter.get_total_flops()

    calls = _calls(args.tokens, args.prompt)
    rows = [dict(tokens=c.end, final=c.finalize, incremental_s=float("inf"), recompute_s=float("inf")) for c in calls]
    with torch.inference_mode():
        state = flow.stream_state()
        for row, call in zip(rows, calls):
            if call.finalize:
                frames = 2 * (args.prompt + call.end)
                row["recompute_gflop"] = row["incremental_gflop"] = flops(call.end, False, True) / 1e9
                row["recompute_attention_gflop"] = row["incremental_attention_gflop"] = attention_gflop(frames, frames)
            else:
                row["incremental_gflop"] = flops(call.end, True, False, state) / 1e9
                record = state.calls[-1]
                row["incremental_attention_gflop"] = attention_gflop(record.computed_frames, record.total_frames)
                row["recompute_gflop"] = flops(call.end, True, False) / 1e9
                row["recompute_attention_gflop"] = attention_gflop(record.total_frames, record.total_frames)
        for _ in range(args.repeats):
            state = flow.stream_state()
            for row, call in zip(rows, calls):
                if call.finalize:
                    _, seconds = run(call.end, streaming=False, finalize=True)
                    frames = 2 * (args.prompt + call.end)
                    row.update(total_frames=frames, computed_incremental=frames)
                    row["incremental_s"] = row["recompute_s"] = min(row["recompute_s"], seconds)
                    continue
                mel, seconds = run(call.end, streaming=True, finalize=False, state=state)
                record = state.calls[-1]
                assert record.incremental, "the probe's state fell back to recomputing"
                reference, recompute_seconds = run(call.end, streaming=True, finalize=False)
                row.update(total_frames=record.total_frames, computed_incremental=record.computed_frames,
                           max_abs_diff=float((mel - reference).abs().max()),
                           state_mb=round(state.nbytes() / 2**20, 1))
                row["incremental_s"] = min(row["incremental_s"], seconds)
                row["recompute_s"] = min(row["recompute_s"], recompute_seconds)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = dict(
        probe="docs/bench/flow_stream_cpu.py", commit=commit, version=args.version, sizes=args.sizes,
        flow_parameters=sum(p.numel() for p in flow.parameters()), prompt_tokens=args.prompt, tokens=args.tokens,
        threads=args.threads, repeats=args.repeats, cpu=platform.processor() or platform.machine(),
        cpu_count=os.cpu_count(), load_average=os.getloadavg(), torch=torch.__version__, calls=rows,
    )
    print(f"{args.version} {args.sizes} flow ({result['flow_parameters'] / 1e6:.1f} M parameters), "
          f"prompt {args.prompt} "
          f"tokens, {args.threads} threads, min of {args.repeats}; load average {os.getloadavg()[0]:.1f}")
    print("| call tokens | frames | computed (incr.) | GFLOP recompute (+attn) | GFLOP incr. (+attn) | recompute s "
          "| incremental s | speed-up | max diff | state MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        kind = " (final, full attention)" if row["final"] else ""
        print(f"| {row['tokens']}{kind} | {row['total_frames']} | {row['computed_incremental']} | "
              f"{row['recompute_gflop']:.1f} (+{row['recompute_attention_gflop']:.1f}) | "
              f"{row['incremental_gflop']:.1f} (+{row['incremental_attention_gflop']:.1f}) | "
              f"{row['recompute_s']:.2f} | {row['incremental_s']:.2f} | "
              f"{row['recompute_s'] / row['incremental_s']:.1f}x | "
              f"{row.get('max_abs_diff', 0):.2g} | {row.get('state_mb', '-')} |")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
