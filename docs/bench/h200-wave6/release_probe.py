"""GPU probe: what happens to reserved memory when a DiT's time weights are released and the rest moved to the host
and back (the test DiT of test_dit_prepared: dim 768, depth 12). Prints allocated / reserved / segments per step."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from cosydesk.model.dit import DiT  # noqa: E402
from cosydesk.runtime.backends.cudagraph.dit_prepared import PreparedDiT  # noqa: E402


def report(label: str) -> None:
    torch.cuda.synchronize()
    snap = torch.cuda.memory_snapshot()
    print(f"{label:34s} allocated {torch.cuda.memory_allocated() / 1e6:8.1f} MB  reserved "
          f"{torch.cuda.memory_reserved() / 1e6:8.1f} MB  segments {len(snap)}  expandable "
          f"{sum(bool(s.get('is_expandable')) for s in snap)}  free blocks >1MB "
          f"{sum(1 for s in snap for b in s['blocks'] if b['state'] == 'inactive' and b['size'] > 1 << 20)}", flush=True)


torch.manual_seed(0)
dit = DiT(dim=768, depth=12, heads=12, dim_head=64, ff_mult=2, mu_dim=80, spk_dim=80).eval().half().cuda()
prepared = PreparedDiT(dit)
report("loaded")
PreparedDiT._return_freed_memory = lambda self: None  # steps by hand below
prepared.release_time_weights()
report("released")
torch.cuda.empty_cache()
report("released + empty_cache")
ids = {id(p): p.data_ptr() for p in prepared.parameters()}
prepared.to("cpu")
report("kept weights on the host")
print("parameter objects kept:", all(id(p) in ids for p in prepared.parameters()), flush=True)
import gc  # noqa: E402

gc.collect()
cuda_left = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.is_cuda]
print("live CUDA tensors:", len(cuda_left), sum(t.untyped_storage().nbytes() for t in cuda_left) / 1e6, "MB",
      [tuple(t.shape) for t in cuda_left[:8]], flush=True)
torch.cuda.empty_cache()
report("host + empty_cache")
prepared.to("cuda")
report("back on the GPU")
torch.cuda.empty_cache()
report("back + empty_cache")
