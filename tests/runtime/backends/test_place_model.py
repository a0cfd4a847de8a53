"""``place_model``: a host-loaded model moved to its device in the dtypes its backend runs, with the cudagraph
backend's host-side work (v3's DiT modulation table) done before the move, so the time weights never reach the
GPU and no float32 copy is made there."""

from __future__ import annotations

import copy

import pytest
import torch

from cosydesk.model import load
from cosydesk.runtime.backends import place_model
from cosydesk.runtime.backends.cudagraph.dit_prepared import PreparedDiT
from tests.conftest import cuda
from tests.support.paths import fixture_dir


def _time_weight_count(dit) -> int:
    modules = [dit.time_embed, dit.norm_out.linear] + [b.attn_norm for b in dit.transformer_blocks]
    return sum(p.numel() for m in modules for p in m.parameters())


def test_v3_for_cudagraph_leaves_the_host_with_its_table_and_without_its_time_weights():
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    model = load(fixture_dir("v3") / "model")
    reference = copy.deepcopy(model.flow.decoder)
    before = sum(p.numel() for p in model.flow.parameters())
    dropped = _time_weight_count(model.flow.decoder.estimator)
    placed = place_model(model, "cpu", "cudagraph")
    estimator = placed.flow.decoder.estimator
    assert isinstance(estimator, PreparedDiT) and estimator.released
    # q/k/v stacked on the host too, before the move: one weight per block, none held twice
    assert all(type(b.attn).__name__ == "FusedQKVAttention" for b in estimator.dit.transformer_blocks)
    assert before - sum(p.numel() for p in placed.flow.parameters()) == dropped > 0
    n_steps = placed.flow.decoder.n_steps
    assert estimator.host_time_table.shape == (n_steps, 2, estimator.width)
    assert "host_time_table" in dict(estimator.named_buffers())  # moves with the module to the device
    # the table is what the graphed solver computes from the weights when it finds none
    computed = GraphedSampler(_prepared_copy(reference), [32], (False, True)).time_table
    torch.testing.assert_close(estimator.host_time_table, computed, rtol=0, atol=1e-6)
    # the graphed solver takes the host table and solves as the plain sampler does
    graphed = GraphedSampler(placed.flow.decoder, [32], (False, True))
    assert torch.equal(graphed.time_table, estimator.host_time_table)
    g = torch.Generator().manual_seed(4)
    z, mu, cond = (torch.randn(1, 80, 30, generator=g) for _ in range(3))
    mask, spks = torch.ones(1, 1, 30), torch.randn(1, 80, generator=g)
    with torch.inference_mode():
        for streaming in (True, False):
            ref = reference(z.clone(), mask, mu, spks, cond, streaming=streaming)
            ours = graphed(z.clone(), mask, mu, spks, cond, streaming=streaming)
            torch.testing.assert_close(ours, ref, rtol=0, atol=1e-4)


def _prepared_copy(sampler):
    from cosydesk.runtime.backends.cudagraph.dit_prepared import use_prepared_dit

    sampler = copy.deepcopy(sampler)
    assert use_prepared_dit(sampler)
    return sampler


@pytest.mark.parametrize("backend", ["eager-fp32", "eager", "tensorrt"])
def test_other_backends_get_the_v3_dit_untouched(backend):
    placed = place_model(load(fixture_dir("v3") / "model"), "cpu", backend)
    assert type(placed.flow.decoder.estimator).__name__ == "DiT"
    assert placed.device == torch.device("cpu")
    assert all(p.dtype == torch.float32 for m in (placed.llm, placed.flow, placed.hift) for p in m.parameters())


def test_v2_for_cudagraph_is_moved_as_it_is():
    model = load(fixture_dir("v2") / "model")
    estimator_type = type(model.flow.decoder.estimator)
    placed = place_model(model, "cpu", "cudagraph")
    assert type(placed.flow.decoder.estimator) is estimator_type
    assert all(p.dtype == torch.float32 for p in placed.flow.parameters())  # float16 is for CUDA only


@cuda
@pytest.mark.parametrize("version", ["v2", "v3"])
def test_on_cuda_the_networks_arrive_cast_and_nothing_more_is_ever_allocated(version):
    """The peak of allocated GPU memory while placing is what stays: no float32 copy on the GPU first and (v3) no
    time weights that are freed again; float16 networks except v3's float32 vocoder and v2's float32 f0 predictor."""
    model = load(fixture_dir(version) / "model")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    start = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    placed = place_model(model, "cuda", "cudagraph")
    torch.cuda.synchronize()
    kept = torch.cuda.memory_allocated()
    assert torch.cuda.max_memory_allocated() == kept > start
    for name in ("llm", "flow", "hift"):
        want = torch.float32 if (name == "hift" and version == "v3") else torch.float16
        params = list(getattr(placed, name).named_parameters())
        f0_dtype = lambda key: torch.float32 if name == "hift" and key.startswith("f0_predictor.") else want  # noqa: E731
        assert params and all(p.is_cuda and p.dtype == f0_dtype(key) for key, p in params), name
    if version == "v3":
        assert placed.flow.decoder.estimator.host_time_table.dtype == torch.float16
