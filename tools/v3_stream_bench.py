"""Per-chunk v3 vocoder time vs utterance length: official re-vocoding vs bounded-work streaming.

    python -m tools.v3_stream_bench --model tiny --seconds 60 --at 5,10,20,40,60
    python -m tools.v3_stream_bench --model full --device cuda --seconds 60

Streams a random mel (50 frames/s) in 25-token chunks (50 frames; the first 60) through ``CausalHiFTStream``,
timing every push, and times the official call (HiFT over the whole accumulated mel, finalize=False) at the
utterance positions given by ``--at`` (best of ``--repeats``). Prints a markdown table; rows marked * lie past
the streamed chunks (``--bounded-chunks``) and show the steady-state window, whose size does not change. Random weights for ``full`` (timing only).
Measurement tool: not imported by the application.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from cosydesk.model.hift_stream import CausalHiFTStream

FRAMES_PER_SECOND = 50


def build_hift(kind: str, device: str) -> torch.nn.Module:
    if kind == "tiny":
        from cosydesk.model import load
        from tests.conftest import fixture_dir

        hift = load(fixture_dir("v3") / "model").hift
    else:
        from cosydesk.model.config import read_yaml
        from cosydesk.model.hift import CausalHiFTGenerator
        from cosydesk.synthetic.full_size import write_full_size_config

        folder = write_full_size_config(tempfile.mkdtemp(prefix="cosydesk-v3-hift-"), "v3")
        torch.manual_seed(0)
        hift = CausalHiFTGenerator.from_config(read_yaml(folder / "cosyvoice3.yaml")["hift"])
    return hift.eval().requires_grad_(False).to(device)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str):
    _sync(device)
    start = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "full"], default="tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--at", default="5,10,20,40,60", help="utterance positions (s) for the official call")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--bounded-chunks", type=int, default=0, help="stream only this many chunks (slow models)")
    parser.add_argument("--repeats", type=int, default=2, help="official timings: best of this many runs")
    parser.add_argument("--check", action="store_true", help="also compare all samples with one official call")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    hift = build_hift(args.model, args.device)
    total = int(args.seconds * FRAMES_PER_SECOND)
    mel = (torch.randn(1, 80, total, generator=torch.Generator().manual_seed(0)) * 2 - 5).to(args.device)
    hift.fixed_noise.reserve(total * hift.samples_per_frame, args.device)
    sizes = [60] + [50] * ((total - 60) // 50)
    total = sum(sizes)  # the official rows below use positions this stream can reach
    if args.bounded_chunks:  # stream only the first chunks; later rows show the steady-state window's time
        sizes = sizes[:args.bounded_chunks]
    with torch.inference_mode():
        hift.inference(mel[:, :, :120], finalize=False)  # warm-up
        stream = CausalHiFTStream(hift)
        bounded = []  # (accumulated frames after the push, window frames, seconds)
        waves = []
        start = 0
        for size in sizes:
            wave, seconds = timed(lambda: stream.push(mel[:, :, start:start + size], False), args.device)
            waves.append(wave)
            start += size
            bounded.append((start, stream.last_window_frames, seconds))
        print(f"model={args.model} device={args.device} threads={torch.get_num_threads()} "
              f"left_context={stream.left_context}+{stream.f0_context} frames")
        print("| position (s) | official: frames vocoded | official: s/chunk | bounded: frames vocoded | "
              "bounded: s/chunk, min / median of the 5 chunks there |")
        print("|---|---|---|---|---|")
        for position in [float(p) for p in args.at.split(",")]:
            frames = min(total, 60 + 50 * round((position * FRAMES_PER_SECOND - 60) / 50))
            index = min(range(len(bounded)), key=lambda i: abs(bounded[i][0] - frames))
            steady = bounded[index][0] != frames  # not streamed that far: the steady window applies (*)
            official = min(timed(lambda: hift.inference(mel[:, :, :frames], finalize=False), args.device)[1]
                           for _ in range(args.repeats))
            near = [b[2] for b in bounded[max(1, index - 2): index + 3]]
            print(f"| {frames / FRAMES_PER_SECOND:.1f} | {frames} | {official:.3f} | {bounded[index][1]}"
                  f"{'*' if steady else ''} | {min(near):.3f} / {statistics.median(near):.3f}"
                  f"{'*' if steady else ''} |", flush=True)
        print(f"bounded, all {len(bounded)} chunks: total {sum(b[2] for b in bounded):.2f} s, "
              f"max window {max(b[1] for b in bounded)} frames")
        if args.check:  # the official last call returns the whole utterance so far (earlier calls: prefixes)
            official = hift.inference(mel[:, :, :start], finalize=False)
            ours = torch.cat(waves, dim=1)
            print(f"check: {ours.shape[1]} samples, max |bounded - official| = "
                  f"{(ours - official).abs().max().item():.3g}")


if __name__ == "__main__":
    main()
