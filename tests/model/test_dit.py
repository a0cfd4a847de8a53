"""DiT estimator (CosyVoice3) against the official v3-tiny fixtures (README V3-5a, V3-8)."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import assert_close
from tests.support.paths import fixture_dir
from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.model.dit import DiT, attention_masks

PREFIX = "decoder.estimator."
ATOL = 1e-4


def _estimator_node():
    return read_yaml(fixture_dir("v3") / "model" / "cosyvoice3.yaml")["flow"]["decoder"]["estimator"]


@pytest.fixture(scope="module")
def dit() -> DiT:
    model = DiT.from_config(_estimator_node()).eval()
    state = read_state_dict(fixture_dir("v3") / "model" / "flow.pt")
    load_strict(model, {k: v for k, v in state.items() if k.startswith(PREFIX)}, "flow.pt", strip_prefix=PREFIX)
    return model


def _inputs(golden, frames: int, mask_kind: str) -> dict[str, torch.Tensor]:
    p = f"est_T{frames}_"
    names = {"x": "x", "mu": "mu", "cond": "cond", "spks": "spks", "t": "t", "mask": f"mask_{mask_kind}"}
    return {arg: torch.from_numpy(golden[p + key]) for arg, key in names.items()}


CASES = [
    (37, "full", False, "out_full"),
    (37, "partial", False, "out_partial"),
    (37, "full", True, "out_full"),  # T <= 50: streaming equals non-streaming (README V3-5a)
    (37, "partial", True, "out_partial"),
    (75, "full", False, "out_full"),
    (75, "partial", False, "out_partial"),
    (75, "full", True, "out_full_streaming"),
    (75, "partial", True, "out_partial_streaming"),
]


@pytest.mark.parametrize("frames,mask_kind,streaming,ref_key", CASES)
def test_estimator_matches_official(dit, golden_v3, frames, mask_kind, streaming, ref_key):
    with torch.no_grad():
        out = dit(**_inputs(golden_v3, frames, mask_kind), streaming=streaming)
    assert_close(out, golden_v3[f"est_T{frames}_{ref_key}"], ATOL, f"T{frames} {ref_key} streaming={streaming}")


def test_streaming_changes_long_inputs(dit, golden_v3):
    """Guards the chunk mask itself: at T=75 streaming must differ from full attention."""
    args = _inputs(golden_v3, 75, "full")
    with torch.no_grad():
        full = dit(**args, streaming=False)
        chunked = dit(**args, streaming=True)
    assert (full - chunked).abs().max() > 1e-3


def test_intermediates(dit, golden_v3):
    args = _inputs(golden_v3, 75, "full")
    with torch.no_grad():
        temb = dit.embed_time(args["t"], batch=2)
        h = dit.embed_input(args["x"], args["cond"], args["mu"], args["spks"])
        block0 = dit.run_blocks(h, temb, args["mask"], streaming=False, n_blocks=1)
    assert_close(temb, golden_v3["est_T75_time_embed_out"], ATOL, "time embedding")
    assert_close(h, golden_v3["est_T75_input_embed_out"], ATOL, "input embedding")
    assert_close(block0, golden_v3["est_T75_block0_out"], ATOL, "block 0")


def test_rotary_buffer_is_persistent_and_official(dit, golden_v3):
    assert "rotary_embed.inv_freq" in dit.state_dict()
    assert_close(dit.rotary_embed.inv_freq, golden_v3["est_rotary_inv_freq"], 0.0, "inv_freq")
    fresh = DiT.from_config(_estimator_node())
    assert_close(fresh.rotary_embed.inv_freq, golden_v3["est_rotary_inv_freq"], 1e-7, "constructed inv_freq")


def test_scalar_time_is_broadcast(dit, golden_v3):
    args = _inputs(golden_v3, 37, "full")
    args["t"] = torch.tensor(0.5)
    with torch.no_grad():
        scalar = dit(**args)
        args["t"] = torch.tensor([0.5, 0.5])
        vector = dit(**args)
    assert torch.equal(scalar, vector)


def test_attention_masks_streaming_layout():
    mask = torch.ones(1, 1, 75)
    mask[..., 60:] = 0
    allowed, query_valid = attention_masks(mask, 50)
    assert allowed.shape == (1, 1, 75, 75)
    assert allowed[0, 0, :50, :50].all() and not allowed[0, 0, :50, 50:].any()
    assert allowed[0, 0, 50:, :60].all() and not allowed[0, 0, 50:, 60:].any()
    assert query_valid[0, :60, 0].all() and not query_valid[0, 60:, 0].any()
    # A batch item without any valid frame opens all keys instead of producing NaN.
    allowed, _ = attention_masks(torch.zeros(1, 1, 5), 0)
    assert allowed.all()


def _half_supported_on_cpu() -> bool:
    try:
        layer = torch.nn.Linear(4, 4).half()
        q = torch.randn(1, 1, 3, 4).half()
        torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(1, 1, 3, 3, dtype=torch.bool))
        torch.nn.functional.conv1d(torch.randn(1, 4, 8).half(), torch.randn(4, 1, 3).half(), groups=4)
        layer(torch.randn(2, 4).half())
    except RuntimeError:
        return False
    return True


def test_fp16_close_to_fp32(dit, golden_v3):
    if not _half_supported_on_cpu():
        pytest.skip("this torch build has no float16 CPU kernels for linear/conv/SDPA")
    args = _inputs(golden_v3, 75, "partial")
    half = DiT.from_config(_estimator_node()).eval()
    half.load_state_dict(dit.state_dict())
    half.half()
    with torch.no_grad():
        ref = dit(**args, streaming=True)
        out = half(**{k: v.half() for k, v in args.items()}, streaming=True)
    assert out.dtype == torch.float16
    assert torch.isfinite(out).all()
    rel = float((out.float() - ref).abs().max() / ref.abs().max())
    assert rel <= 1e-2, f"fp16 relative error {rel:.3g}"
