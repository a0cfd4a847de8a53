"""The flow encoder's relative-position attention in query blocks (``blocked_attention``): the same output as the
unblocked module on long inputs, with the padding and the streaming chunk masks, and the whole v2 encoder unchanged."""

from __future__ import annotations

import copy

import pytest
import torch

from cosydesk.model.attention import RelPositionMultiHeadedAttention
from cosydesk.model.positional import EspnetRelPositionalEncoding
from cosydesk.model.transformer import attention_mask, padding_mask
from cosydesk.runtime.backends.cudagraph.blocked_attention import QueryBlockedRelPositionAttention, use_query_blocks


def _pair(block: int, threshold: int):
    torch.manual_seed(0)
    plain = RelPositionMultiHeadedAttention(4, 32).eval()
    blocked = copy.deepcopy(plain)
    assert use_query_blocks(blocked, block, threshold) == 1
    return plain, blocked


@pytest.mark.parametrize("frames,valid,chunk,block", [
    (100, 100, 0, 32),   # full attention, blocks that do not divide the length
    (96, 70, 0, 32),     # padded keys masked ([B, 1, K] mask)
    (90, 81, 25, 40),    # the streaming chunk mask ([B, T, K], a row per query)
])
def test_blocked_attention_equals_the_plain_module_cpu(frames, valid, chunk, block):
    plain, blocked = _pair(block, threshold=block)
    x = torch.randn(1, frames, 32, generator=torch.Generator().manual_seed(frames))
    mask = attention_mask(padding_mask(torch.tensor([valid]), frames, 1, torch.device("cpu")), chunk)
    positions = EspnetRelPositionalEncoding(32).relative(frames, frames, torch.device("cpu"), torch.float32)
    with torch.inference_mode():
        ref = plain(x, mask, positions)
        ours = blocked(x, mask, positions)
        no_mask = blocked(x, None, positions)
        assert torch.allclose(no_mask, plain(x, None, positions), atol=1e-6)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)


def test_short_inputs_and_cached_calls_take_the_plain_path_cpu(monkeypatch):
    """At most ``threshold`` queries: the unblocked forward (the short buckets' graphs stay as they were)."""
    _, blocked = _pair(8, threshold=64)
    calls = []
    original = RelPositionMultiHeadedAttention.forward
    monkeypatch.setattr(RelPositionMultiHeadedAttention, "forward",
                        lambda self, *a, **k: calls.append(a[0].shape[1]) or original(self, *a, **k))
    positions = EspnetRelPositionalEncoding(32).relative(64, 64, torch.device("cpu"), torch.float32)
    with torch.inference_mode():
        blocked(torch.randn(1, 64, 32), None, positions)
    assert calls == [64] and isinstance(blocked, QueryBlockedRelPositionAttention)
    with pytest.raises(ValueError, match="query_block"):
        use_query_blocks(blocked, 0)


def test_the_v2_encoder_with_query_blocks_gives_the_same_output_cpu():
    """The tiny v2 flow encoder, every attention blocked from 16 queries on: the same encoder output."""
    from cosydesk.model import load
    from tests.support.paths import fixture_dir

    encoder = load(fixture_dir("v2") / "model").flow.encoder
    blocked = copy.deepcopy(encoder)
    assert use_query_blocks(blocked, 16, threshold=16) > 0
    tokens = torch.randn(1, 40, encoder.embed.out[0].in_features, generator=torch.Generator().manual_seed(1))
    lengths = torch.tensor([40])
    with torch.inference_mode():
        for streaming in (False, True):
            ref, _ = encoder(tokens, lengths, streaming=streaming)
            ours, _ = blocked(tokens, lengths, streaming=streaming)
            torch.testing.assert_close(ours, ref, rtol=0, atol=1e-5)
