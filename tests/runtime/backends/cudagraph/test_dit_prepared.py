"""v3's DiT with its time embedding and attention mask prepared outside the captured step (``dit_prepared``): the
plain DiT's velocity in both attention modes, and the graphed solver gives the plain solver's mel with one graph
per bucket serving both modes."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

from cosydesk.model import load
from cosydesk.runtime.backends.cudagraph.dit_prepared import PreparedDiT, use_prepared_dit
from tests.support.paths import fixture_dir


@functools.lru_cache(maxsize=None)
def _flow():
    return load(fixture_dir("v3") / "model").flow


def _inputs(frames: int, valid: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x, mu, cond = (torch.randn(2, 80, frames, generator=g) for _ in range(3))
    mask = torch.zeros(2, 1, frames)
    mask[:, :, :valid] = 1
    return x, mask, mu, torch.tensor([0.3, 0.3]), torch.randn(2, 80, generator=g), cond


@pytest.mark.parametrize("streaming", [False, True])
def test_prepared_inputs_give_the_plain_dit_velocity_cpu(streaming):
    dit = _flow().estimator.eval()
    prepared = PreparedDiT(dit)
    x, mask, mu, t, spks, cond = _inputs(80, 63)
    with torch.inference_mode():
        ref = dit(x, mask, mu, t, spks, cond, streaming=streaming)
        ours = prepared(x, mask, mu, t, spks, cond, streaming=not streaming,  # the mask decides, not the flag
                        times=prepared.time_projections(t), allowed=prepared.attention_mask(mask, streaming))
        plain = prepared(x, mask, mu, t, spks, cond, streaming=streaming)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)
    assert torch.equal(plain, ref)
    assert prepared.static_chunk_size == dit.static_chunk_size  # attributes read through


def test_the_graphed_solver_with_a_prepared_dit_gives_the_plain_solver_cpu():
    """``GraphedSampler`` on the CPU (its step runs eagerly on the bucket's buffers): one graph key per bucket, and
    streaming and full-attention calls give what the plain sampler gives."""
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    sampler = copy.deepcopy(_flow().decoder).eval()
    reference = copy.deepcopy(sampler)
    assert use_prepared_dit(sampler) and not use_prepared_dit(sampler)  # wraps the plain DiT only, once
    graphed = GraphedSampler(sampler, [32, 64], (False, True))
    assert graphed.prepared and graphed._graph_mode(False) == graphed._graph_mode(True)
    _solves_like(graphed, reference, frames=50, seed=2)


def _solves_like(graphed, reference, frames: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Both samplers on one request of ``frames`` frames, in both attention modes, give the same mel; returns the
    request (z, mask, mu, spks, cond)."""
    g = torch.Generator().manual_seed(seed)
    z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
    mask, spks = torch.ones(1, 1, frames), torch.randn(1, 80, generator=g)
    with torch.inference_mode():
        for streaming in (True, False):
            ref = reference(z.clone(), mask, mu, spks, cond, streaming=streaming)
            ours = graphed(z.clone(), mask, mu, spks, cond, streaming=streaming)
            torch.testing.assert_close(ours, ref, rtol=0, atol=1e-4)
    return z, mask, mu, spks, cond


def test_the_time_weights_leave_once_the_table_is_built_and_longer_calls_still_solve_cpu():
    """The sampler's table holds every time-decided modulation, so the time MLP and the AdaLN linears are dropped
    (0.28 GB at full size); a call longer than every bucket (the eager solver) reads the same table."""
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    sampler = copy.deepcopy(_flow().decoder).eval()
    reference = copy.deepcopy(sampler)
    use_prepared_dit(sampler)
    before = sum(p.numel() for p in sampler.estimator.parameters())
    expected = sum(p.numel() for m in [sampler.estimator.dit.time_embed, sampler.estimator.dit.norm_out.linear]
                   + [b.attn_norm for b in sampler.estimator.dit.transformer_blocks] for p in m.parameters())
    graphed = GraphedSampler(sampler, [32], (False, True))
    assert graphed.time_table.shape == (sampler.n_steps, 2, sampler.estimator.width)
    assert before - sum(p.numel() for p in sampler.estimator.parameters()) == expected > 0
    assert all(b.attn_norm is None for b in sampler.estimator.dit.transformer_blocks)
    z, mask, mu, spks, cond = _solves_like(graphed, reference, frames=45, seed=3)  # 45 frames > the 32 bucket
    with torch.inference_mode():
        with pytest.raises(RuntimeError, match="released"):
            sampler.estimator(z.expand(2, -1, -1), mask.expand(2, -1, -1), mu.expand(2, -1, -1),
                              torch.tensor([0.5, 0.5]), spks.expand(2, -1), cond.expand(2, -1, -1))
