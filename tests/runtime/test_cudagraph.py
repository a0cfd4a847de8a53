"""cudagraph backend: bucketing/padding logic and the static-cache Qwen math (CPU), graphs and pools (GPU)."""

from __future__ import annotations

import pytest
import torch

from cosydesk.runtime.cudagraph.buckets import bucket_for, copy_padded, make_buckets, padding_waste

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_make_buckets_and_lookup():
    assert make_buckets(100, 32) == [32, 64, 96, 128]
    assert make_buckets(96, 32, start=64) == [64, 96]
    b = make_buckets(576, 32, start=64)
    assert bucket_for(1, b) == 64 and bucket_for(64, b) == 64 and bucket_for(65, b) == 96
    assert bucket_for(576, b) == 576 and bucket_for(577, b) is None
    with pytest.raises(ValueError):
        make_buckets(10, 0)


def test_padding_waste_bounded_by_step():
    b = make_buckets(512, 32, start=32)
    lengths = list(range(40, 500, 7))
    assert 0 < padding_waste(lengths, b) < 32 / 40
    assert padding_waste([64, 96], b) == 0.0


def test_copy_padded_fills_tail():
    dst = torch.full((1, 2, 6), 7.0)
    copy_padded(dst, torch.ones(1, 2, 4))
    assert torch.equal(dst[..., :4], torch.ones(1, 2, 4)) and torch.equal(dst[..., 4:], torch.zeros(1, 2, 2))
    with pytest.raises(ValueError):
        copy_padded(dst, torch.ones(1, 2, 7))


@pytest.fixture(scope="module")
def tiny_v2_model(tmp_path_factory):
    from cosydesk.testing.full_size import random_model

    # tiny sizes, seeded, no tokenizer files (they need a test-only package the GPU machine lacks)
    return random_model("v2", "cpu", torch.float32, seed=0, workdir=tmp_path_factory.mktemp("cg"), tiny=True)


def _prompt(seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(1000, 20000, (1, 9), generator=g), torch.randint(1000, 20000, (1, 5), generator=g),
            torch.randint(0, 6561, (1, 20), generator=g))


def test_static_qwen_matches_eager_logits_cpu(tiny_v2_model):
    from cosydesk.runtime.cudagraph.qwen import StaticQwenLM

    lm = tiny_v2_model.llm
    static = StaticQwenLM(lm, max_len=96, prefill_buckets=(48,), use_graphs=False)
    text, prompt_text, prompt_speech = _prompt()
    ref_logits, ref_state = lm.prefill(text, prompt_text, prompt_speech, None)
    ours, state = static.prefill(text, prompt_text, prompt_speech, None)
    assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4)
    for token in (5, 77, 6000, 12):
        ref_logits, ref_state = lm.decode_step(token, ref_state)
        ours, state = static.decode_step(token, state)
        assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4), token
    assert state.length == ref_state.length


def test_static_qwen_bucket_padding_junk_is_harmless_cpu(tiny_v2_model):
    """Prefill padded to a bucket writes junk K/V past the prompt; later decode steps must not see it."""
    from cosydesk.runtime.cudagraph.qwen import StaticQwenLM

    lm = tiny_v2_model.llm
    static = StaticQwenLM(lm, max_len=96, prefill_buckets=(48,), use_graphs=False)
    text, prompt_text, prompt_speech = _prompt(1)
    embeds = lm.lm_input(text, prompt_text, prompt_speech, None)
    n = embeds.shape[1]
    static.prefill_in[48][:, :n] = embeds
    static.prefill_in[48][:, n:] = torch.randn(1, 48 - n, embeds.shape[2]) * 3  # junk rows
    static.prefill_last.fill_(n - 1)
    static._prefill_body(48)
    ref_logits, ref_state = lm.prefill(text, prompt_text, prompt_speech, None)
    assert torch.allclose(static.prefill_logits, ref_logits, atol=1e-4, rtol=1e-4)
    from cosydesk.runtime.cudagraph.qwen import StaticDecodeState

    state = StaticDecodeState(length=n)
    for token in (3, 4, 5):
        ref_logits, ref_state = lm.decode_step(token, ref_state)
        ours, state = static.decode_step(token, state)
        assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("streaming", [False, True])
def test_cfm_padding_keeps_valid_frames_cpu(tiny_v2_model, streaming):
    from cosydesk.model.cfm import cosine_time_grid
    from cosydesk.runtime.cudagraph.cfm import solve_cfm

    sampler = tiny_v2_model.flow.decoder
    g = torch.Generator().manual_seed(0)
    frames, padded = 70, 96
    z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
    spks, mask = torch.randn(1, 80, generator=g), torch.ones(1, 1, frames)
    grid = cosine_time_grid(sampler.n_steps)
    ref = sampler(z, mask, mu, spks, cond, streaming=streaming)
    ours = solve_cfm(sampler, z, mask, mu, spks, cond, streaming, grid)
    assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4)
    pad = lambda x: torch.nn.functional.pad(x, (0, padded - frames))  # noqa: E731
    ours_padded = solve_cfm(sampler, pad(z), pad(mask), pad(mu), spks, pad(cond), streaming, grid)
    assert torch.allclose(ours_padded[:, :, :frames], ref, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@cuda
def test_graph_backend_matches_eager_and_allocates_nothing_per_request(tiny_v2_model):
    import copy
    import dataclasses

    from cosydesk.runtime.backends import accelerate

    dev = torch.device("cuda")
    base = dataclasses.replace(tiny_v2_model, llm=copy.deepcopy(tiny_v2_model.llm).to(dev),
                               flow=copy.deepcopy(tiny_v2_model.flow).to(dev),
                               hift=copy.deepcopy(tiny_v2_model.hift).to(dev), device=dev)
    model = accelerate(base, "cudagraph")
    text, prompt_text, prompt_speech = (t.to(dev) for t in _prompt())
    ref, ref_state = tiny_v2_model.llm.prefill(*(t.cpu() for t in (text, prompt_text, prompt_speech)), None)
    ours, state = model.llm.prefill(text, prompt_text, prompt_speech, None)
    assert torch.allclose(ours.cpu(), ref, atol=5e-2, rtol=5e-2)
    for token in (5, 77):
        ref, ref_state = tiny_v2_model.llm.decode_step(token, ref_state)
        ours, state = model.llm.decode_step(token, state)
        assert torch.allclose(ours.cpu(), ref, atol=5e-2, rtol=5e-2)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    for _ in range(3):
        logits, state = model.llm.prefill(text, prompt_text, prompt_speech, None)
        for token in range(20):
            logits, state = model.llm.decode_step(token, state)
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] == before
    assert model.flow.decoder.graphs and not model.flow.decoder.capture_errors
