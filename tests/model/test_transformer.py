"""Transformer building blocks against the official fixtures.

v2: the flow's ``decoder_mu`` = encoder_proj(UpsampleConformerEncoder(input_embedding(tokens) * mask)),
transposed, so the encoder is checked end to end through the stored mu (non-streaming with prompt,
streaming chunk with withheld look-ahead context, no prompt). v1's ConformerEncoder/TransformerEncoder
are checked through the LLM fixtures (tests/model/test_llm_v1.py).
"""

from __future__ import annotations

import torch
from torch import nn

from tests.conftest import assert_close
from tests.support.paths import fixture_dir
from cosydesk.model.attention import RelPositionMultiHeadedAttention, skew_relative_scores
from cosydesk.model.checkpoint import load_strict, read_state_dict
from cosydesk.model.config import read_yaml
from cosydesk.model.positional import relative_position_table
from cosydesk.model.transformer import (
    ConformerEncoder,
    PreLookaheadLayer,
    TransformerEncoder,
    UpsampleConformerEncoder,
    chunk_mask,
)


def _v2_flow_parts():
    cfg = read_yaml(fixture_dir("v2") / "model" / "cosyvoice2.yaml")
    node = cfg["flow"]
    encoder = UpsampleConformerEncoder.from_config(node["encoder"]).eval()
    state = read_state_dict(fixture_dir("v2") / "model" / "flow.pt")
    load_strict(encoder, {k: v for k, v in state.items() if k.startswith("encoder.")}, "flow.pt", strip_prefix="encoder.")
    embedding = nn.Embedding.from_pretrained(state["input_embedding.weight"])
    proj = nn.Linear(*state["encoder_proj.weight"].shape[::-1])
    proj.load_state_dict({"weight": state["encoder_proj.weight"], "bias": state["encoder_proj.bias"]})
    return encoder, embedding, proj


def _mu(encoder, embedding, proj, tokens, streaming, finalize):
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    lens = torch.tensor([tokens.size(1)])
    x = embedding(tokens.clamp(min=0))
    with torch.inference_mode():
        if finalize:
            h, _ = encoder(x, lens, streaming=streaming)
        else:
            h, _ = encoder(x[:, :-3], lens, context=x[:, -3:], streaming=streaming)
        return proj(h).transpose(1, 2)


def test_upsample_encoder_matches_v2_decoder_mu(golden_v2):
    g = golden_v2
    encoder, embedding, proj = _v2_flow_parts()
    prompt = torch.from_numpy(g["spk_zeroshot_prompt_speech_token"]).long()
    tokens60 = torch.from_numpy(g["flow_tokens60"]).long()
    with_prompt = torch.cat([prompt, tokens60], dim=1)
    assert_close(_mu(encoder, embedding, proj, with_prompt, False, True), g["flow_prompt_nonstream_decoder_mu"], 1e-4, "prompt_nonstream mu")
    assert_close(_mu(encoder, embedding, proj, with_prompt, True, False), g["flow_prompt_stream_chunk_decoder_mu"], 1e-4, "prompt_stream_chunk mu")
    tokens30 = torch.from_numpy(g["flow_tokens30"]).long()
    assert_close(_mu(encoder, embedding, proj, tokens30, False, True), g["flow_noprompt_nonstream_decoder_mu"], 1e-4, "noprompt mu")


def test_streaming_changes_the_upsample_encoder_output(golden_v2):
    # 80 tokens > 25-token chunks: with streaming the early frames must not see the later chunks.
    encoder, embedding, proj = _v2_flow_parts()
    tokens = torch.cat([torch.from_numpy(golden_v2["spk_zeroshot_prompt_speech_token"]), torch.from_numpy(golden_v2["flow_tokens60"])], 1)
    full = _mu(encoder, embedding, proj, tokens, False, True)
    streamed = _mu(encoder, embedding, proj, tokens, True, True)
    assert (full - streamed).abs().max() > 1e-3
    # The first chunk (50 frames, minus what the look-ahead conv and the upsampling conv borrow) only
    # depends on the first 25 tokens + 3 look-ahead tokens: changing token 40 leaves frames < 50 unchanged.
    changed = tokens.clone()
    changed[0, 40] = (changed[0, 40] + 1) % 6561
    streamed_changed = _mu(encoder, embedding, proj, changed, True, True)
    assert torch.equal(streamed[..., :50], streamed_changed[..., :50])


def test_relative_table_layout():
    table = relative_position_table(4, 6)
    # row r holds position 3 - r: row 3 is position 0 (sin 0 = 0, cos 0 = 1)
    assert torch.allclose(table[3, 0::2], torch.zeros(3)) and torch.allclose(table[3, 1::2], torch.ones(3))
    assert torch.allclose(table[0, 0], torch.sin(torch.tensor(3.0)))
    assert torch.allclose(table[6, 0], torch.sin(torch.tensor(-3.0)))


def test_skew_picks_query_minus_key_columns():
    n_q, n_k = 3, 5
    cols = n_k + n_q - 1  # relative positions n_k-1 .. -(n_q-1)
    rel = torch.arange(n_k - 1, -n_q, -1, dtype=torch.float32)
    scores = rel.expand(1, 1, n_q, cols).clone()
    skewed = skew_relative_scores(scores, n_k)
    q_pos = torch.arange(n_k - n_q, n_k).unsqueeze(1)
    k_pos = torch.arange(n_k).unsqueeze(0)
    assert torch.equal(skewed[0, 0], (q_pos - k_pos).float())


def test_chunk_mask_shapes():
    m = chunk_mask(5, 2, torch.device("cpu"))
    assert m.tolist()[0] == [True, True, False, False, False]
    assert m.tolist()[2] == [True, True, True, True, False]
    assert torch.equal(chunk_mask(4, 1, torch.device("cpu")), torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_pre_lookahead_context_equals_full_sequence():
    torch.manual_seed(0)
    layer = PreLookaheadLayer(8, 16, 3).eval()
    x = torch.randn(1, 12, 8)
    full = layer(x)
    # Withholding the last 3 frames as context reproduces the first 9 outputs of the full run...
    partial = layer(x[:, :9], x[:, 9:])
    assert torch.allclose(partial, full[:, :9], atol=1e-6)
    # ...while without context the last frames see zeros instead.
    assert not torch.allclose(layer(x[:, :9]), full[:, :9], atol=1e-4)


def _random_encoder(cls, **kw):
    torch.manual_seed(0)
    enc = cls(input_size=16, output_size=24, attention_heads=2, linear_units=32, num_blocks=2, input_layer=kw.pop("input_layer", "linear"), **kw).eval()
    for p in enc.parameters():
        p.data.add_(0.1 * torch.randn_like(p))
    return enc


def test_incremental_decoding_equals_causal_forward():
    enc = _random_encoder(TransformerEncoder, input_layer="linear_legacy", static_chunk_size=1, activation_type="relu")
    x = torch.randn(1, 9, 16)
    with torch.inference_mode():
        full, _ = enc(x, torch.tensor([9]))
        cache = enc.new_cache(initial_capacity=2)  # forces growth of the preallocated cache
        pieces = [enc.forward_incremental(x[:, :5], cache)]
        pieces += [enc.forward_incremental(x[:, i : i + 1], cache) for i in range(5, 9)]
    assert torch.allclose(torch.cat(pieces, 1), full, atol=1e-5)


def test_padding_does_not_leak_into_valid_frames():
    enc = _random_encoder(ConformerEncoder)
    x = torch.randn(2, 7, 16)
    with torch.inference_mode():
        batched, mask = enc(x, torch.tensor([7, 4]))
        alone, _ = enc(x[1:, :4], torch.tensor([4]))
    assert mask[1, 0].tolist() == [True] * 4 + [False] * 3
    assert torch.allclose(batched[1, :4], alone[0], atol=1e-5)


def test_attention_rejects_bad_width():
    try:
        RelPositionMultiHeadedAttention(3, 8)
    except ValueError:
        return
    raise AssertionError("8 channels cannot be split into 3 heads")
