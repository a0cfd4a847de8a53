"""U-Net flow estimators (v1 ConditionalDecoder, v2 CausalConditionalDecoder) against the official fixtures."""

from __future__ import annotations

import pytest
import torch

from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.model.unet import CausalConditionalDecoder, ConditionalDecoder, attention_allowed, build_estimator
from tests.conftest import assert_close
from tests.support.paths import fixture_dir

YAML = {"v1": "cosyvoice.yaml", "v2": "cosyvoice2.yaml"}
PREFIX = "decoder.estimator."


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from intra-op threads; on a busy 2-core box they only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _estimator(version: str):
    node = read_yaml(fixture_dir(version) / "model" / YAML[version])["flow"]["decoder"]["estimator"]
    estimator = build_estimator(node).eval()
    state = read_state_dict(fixture_dir(version) / "model" / "flow.pt")
    load_strict(estimator, {k: v for k, v in state.items() if k.startswith(PREFIX)}, "flow.pt", strip_prefix=PREFIX)
    return estimator


@pytest.fixture(scope="module")
def estimator_v1():
    return _estimator("v1")


@pytest.fixture(scope="module")
def estimator_v2():
    return _estimator("v2")


def _inputs(golden, case: str, mask_name: str):
    names = ("x", "mask", "mu", "t", "spks", "cond")
    arrays = {n: golden[f"est_{case}_{n}"] for n in names if n != "mask"}
    arrays["mask"] = golden[f"est_{case}_{mask_name}"]
    return [torch.from_numpy(arrays[n]) for n in names]


@pytest.mark.parametrize("mask_name,out_name", [("mask_full", "out_full"), ("mask_partial", "out_partial")])
def test_v1_estimator_T37(estimator_v1, golden_v1, mask_name, out_name):
    assert isinstance(estimator_v1, ConditionalDecoder) and not estimator_v1.causal
    with torch.no_grad():
        out = estimator_v1(*_inputs(golden_v1, "T37", mask_name))
    assert_close(out, golden_v1[f"est_T37_{out_name}"], 1e-4, f"v1 est_T37_{out_name}")


@pytest.mark.parametrize("mask_name,out_name", [("mask_full", "out_full"), ("mask_partial", "out_partial")])
def test_v2_estimator_T37(estimator_v2, golden_v2, mask_name, out_name):
    assert isinstance(estimator_v2, CausalConditionalDecoder)
    with torch.no_grad():
        out = estimator_v2(*_inputs(golden_v2, "T37", mask_name))
    assert_close(out, golden_v2[f"est_T37_{out_name}"], 1e-4, f"v2 est_T37_{out_name}")


@pytest.mark.parametrize("streaming,out_name", [(False, "out_full"), (True, "out_full_streaming")])
def test_v2_estimator_T75(estimator_v2, golden_v2, streaming, out_name):
    with torch.no_grad():
        out = estimator_v2(*_inputs(golden_v2, "T75", "mask_full"), streaming=streaming)
    assert_close(out, golden_v2[f"est_T75_{out_name}"], 1e-4, f"v2 est_T75_{out_name}")


def test_v2_streaming_first_chunk_ignores_the_future(estimator_v2, golden_v2):
    """With chunk masks, frames 0-49 must not depend on frames 50+; without them they do."""
    inputs = _inputs(golden_v2, "T75", "mask_full")
    changed = [t.clone() for t in inputs]
    for index in (0, 2, 5):  # x, mu, cond
        changed[index][..., 50:] += 1.0
    with torch.no_grad():
        chunked = estimator_v2(*inputs, streaming=True)
        chunked_changed = estimator_v2(*changed, streaming=True)
        full = estimator_v2(*inputs)
        full_changed = estimator_v2(*changed)
    assert float((chunked[..., :50] - chunked_changed[..., :50]).abs().max()) < 1e-5
    assert float((full[..., :50] - full_changed[..., :50]).abs().max()) > 1e-3


def test_attention_allowed_chunks_and_empty_rows():
    mask = torch.ones(1, 1, 5)
    allowed = attention_allowed(mask, 2)[0]
    expected = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    assert torch.equal(allowed, expected.bool())
    # A fully padded item opens every key (the official fix-up) instead of producing NaNs.
    assert bool(attention_allowed(torch.zeros(1, 1, 3), 0).all())


def test_v1_estimator_fp16_matches_fp32(estimator_v1, golden_v1):
    inputs = _inputs(golden_v1, "T37", "mask_full")
    half = _estimator("v1").half()
    with torch.no_grad():
        ref = estimator_v1(*inputs)
        out = half(*[t.half() for t in inputs]).float()
    assert torch.isfinite(out).all()
    assert float((out - ref).abs().max()) < 5e-2 * float(ref.abs().max())


def test_full_size_estimator_param_counts():
    """Official sizes (reference doc): v1 [256,256]/64/4/12/8, v2 [256]/64/4/12/8."""
    v1 = ConditionalDecoder(320, 80, (256, 256), 64, 4, 12, 8, "gelu")
    v2 = CausalConditionalDecoder(320, 80, (256,), 64, 4, 12, 8, "gelu", static_chunk_size=50)
    counts = [sum(p.numel() for p in m.parameters()) for m in (v1, v2)]
    assert counts[0] > counts[1] > 50_000_000
