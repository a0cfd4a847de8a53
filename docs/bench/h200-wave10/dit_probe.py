"""GPU probe: v3's DiT blocks as the Triton kernels of ``dit_kernels.py`` against the module (tile sweep).

22 full-size random DiT blocks (width 1024, 16 heads of 64, feed-forward 2048, float16) chained in one CUDA
graph, as a CFM step runs them, for CFG batches of 2 x T frames; each tile pair's graph replayed after warm-up,
the median of 30 replays timed with CUDA events; the module chain (cuBLAS products and eager element-wise
kernels, not compiled) in a graph as a yardstick. Also the kernels' error against the float32 module, relative
to the block's own contribution. Lines of JSON on stdout. Measurement tool only.

    python3 docs/bench/h200-wave10/dit_probe.py > $OUT/dit-probe.log
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.model.dit import DiTBlock, RotaryTable, attention_masks  # noqa: E402
from cosydesk.runtime.backends.cudagraph import dit_kernels as dk  # noqa: E402
from cosydesk.runtime.backends.cudagraph.pdl import pdl_available  # noqa: E402

LN_TILES = [(64, 128, 64, 4), (64, 64, 64, 4), (128, 128, 64, 8), (64, 256, 64, 8), (32, 128, 64, 4)]
GATE_TILES = [(64, 64, 64, 4), (32, 64, 64, 4), (64, 32, 64, 4), (128, 64, 64, 8), (64, 128, 64, 4)]


def timed(fn, replays: int = 30) -> float:
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(graph):
        fn()
    for _ in range(5):
        graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    device = torch.device("cuda")
    torch.manual_seed(0)
    blocks = []
    for _ in range(22):
        block = DiTBlock(1024, 16, 64, 2.0).eval().requires_grad_(False)
        with torch.no_grad():
            for p in block.parameters():
                p.normal_(0.0, 0.03)
        blocks.append(block.to(device, torch.float16))
    reference = DiTBlock(1024, 16, 64, 2.0).eval().requires_grad_(False).to(device)
    reference.load_state_dict({k: v.float() for k, v in blocks[0].state_dict().items()})
    pdl = pdl_available(device)
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "pdl": pdl}), flush=True)
    for frames in (128, 192, 256):
        g = torch.Generator(device=device).manual_seed(frames)
        h = torch.randn(2, frames, 1024, device=device, generator=g).half()
        modulation = (0.2 * torch.randn(2, 6 * 1024, device=device, generator=g)).half()
        mask = torch.ones(2, 1, frames, device=device)
        mask[1, :, frames - 20:] = 0
        allowed, query_valid = attention_masks(mask, 50)
        rope = RotaryTable(64).to(device)(frames, device)
        with torch.inference_mode():
            exact = reference.modulated(h.float(), modulation.float().chunk(6, -1), allowed, query_valid, rope)
            scale = float((exact - h.float()).abs().max())
            module_err = float((blocks[0].modulated(h, modulation.chunk(6, -1), allowed, query_valid, rope).float()
                                - exact).abs().max()) / scale

            def module_chain():
                x = h
                for block in blocks:
                    x = block.modulated(x, modulation.chunk(6, -1), allowed, query_valid, rope)
                return x

            print(json.dumps({"frames": frames, "form": "module (eager, graphed)", "ms": round(timed(module_chain), 4),
                              "module_err": round(module_err, 5)}), flush=True)
            for ln_tile in LN_TILES:
                for gate_tile in GATE_TILES if ln_tile == LN_TILES[0] else GATE_TILES[:1]:
                    tiles = dk.DiTTiles(ln_linear=ln_tile, gate_residual=gate_tile)
                    try:
                        err = float((dk.dit_block_forward(blocks[0], h, modulation, allowed, rope, pdl, tiles).float()
                                     - exact).abs().max()) / scale

                        def chain():
                            x = h
                            for block in blocks:
                                x = dk.dit_block_forward(block, x, modulation, allowed, rope, pdl, tiles)
                            return x

                        ms = timed(chain)
                        print(json.dumps({"frames": frames, "ln_tile": ln_tile, "gate_tile": gate_tile, "ms": round(ms, 4),
                                          "err": round(err, 5)}), flush=True)
                    except Exception as exc:  # noqa: BLE001 - a probe reports what did not work
                        print(json.dumps({"frames": frames, "ln_tile": ln_tile, "gate_tile": gate_tile,
                                          "error": f"{type(exc).__name__}: {exc}"[:300]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
