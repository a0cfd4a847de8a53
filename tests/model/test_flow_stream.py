"""Incremental streaming flow (cosydesk.model.flow_stream) against the official streaming outputs and against
the recomputing flow, with the frames it computed per call checked (the incremental path really ran)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from cosydesk.model import flow_stream, load
from cosydesk.runtime.schedule import CausalChunkSchedule
from tests.support.random_flow import MID, random_flow
from tests.conftest import assert_close
from tests.support.paths import fixture_dir, load_golden

# Between the tiny fixtures and MID: several layers of every kind, quick enough for the default test run.
SMALL = dict(MID, enc_dim=64, enc_heads=2, enc_units=128, enc_blocks=2, unet_channels_v2="[64]", unet_head_dim=16,
             unet_mid=2, lookahead_channels=64, dit_dim=64, dit_depth=3, dit_heads=4, dit_head_dim=16)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@functools.lru_cache(maxsize=None)
def _fixture_flow(version: str):
    return load(fixture_dir(version) / "model").flow


@functools.lru_cache(maxsize=None)
def _small_flow(version: str):
    return random_flow(version, SMALL, seed=3)


def _i32(n: int) -> torch.Tensor:
    return torch.tensor([n], dtype=torch.int32)


class Request:
    """One request's inputs and a caller for the flow (recompute when state is None)."""

    def __init__(self, flow, tokens, prompt_token, prompt_feat, embedding):
        self.flow, self.tokens = flow, torch.as_tensor(tokens).to(torch.int32)
        self.prompt_token = torch.as_tensor(prompt_token).to(torch.int32)
        self.prompt_feat, self.embedding = torch.as_tensor(prompt_feat), torch.as_tensor(embedding)

    def __call__(self, n: int, state=None, finalize: bool = False) -> torch.Tensor:
        token = self.tokens[:, :n]
        with torch.inference_mode():
            return self.flow.inference(token, _i32(n), self.prompt_token, _i32(self.prompt_token.shape[1]),
                                       self.prompt_feat, _i32(self.prompt_feat.shape[1]), self.embedding,
                                       streaming=True, finalize=finalize, stream_state=state)


def _golden_request(version: str) -> Request:
    golden = load_golden(version)
    return Request(_fixture_flow(version), golden["flow_tokens60"], golden["spk_zeroshot_prompt_speech_token"],
                   golden["spk_zeroshot_prompt_speech_feat"], golden["spk_zeroshot_embedding"])


def _random_request(version: str, n_tokens: int, n_prompt: int = 17, seed: int = 0) -> Request:
    generator = torch.Generator().manual_seed(seed)
    return Request(_small_flow(version), torch.randint(0, 6561, (1, n_tokens), generator=generator),
                   torch.randint(0, 6561, (1, n_prompt), generator=generator),
                   torch.randn(1, 2 * n_prompt, 80, generator=generator) * 2 - 5,
                   torch.randn(1, 192, generator=generator) * 5)


# ------------------------------------------------------------------------------------ official streaming cases


@pytest.mark.parametrize("version", ["v2", "v3"])
@pytest.mark.parametrize("first_call", [None, 33, 37])
def test_official_stream_cases_incrementally(version, first_call):
    """The fixtures' streaming flow cases (60 tokens + 20-token prompt), reached after an earlier call of the same
    request: 33 tokens end on a chunk (50 main tokens), 37 do not (54 main tokens: the last 4 are redone)."""
    golden = load_golden(version)
    request = _golden_request(version)
    state = request.flow.stream_state()
    assert state is not None, flow_stream.why_not_incremental(request.flow)
    committed = 0
    if first_call is not None:
        request(first_call, state)
        committed = (20 + first_call - 3) // 25 * 25
    chunk = request(60, state)  # 77 main tokens, 3 look-ahead
    assert_close(chunk, golden["flow_prompt_stream_chunk_mel"], 1e-4, f"{version} stream chunk mel")
    assert state.calls[-1] == flow_stream.StreamCall(154, 154 - 2 * committed, incremental=True)
    final = request(60, state, finalize=True)  # streaming finalize: frames 150..159 are new
    assert_close(final, golden["flow_prompt_stream_finalize_mel"], 1e-4, f"{version} stream finalize mel")
    assert state.calls[-1] == flow_stream.StreamCall(160, 10, incremental=True)
    assert state.finished and state.nbytes() == 0


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_earlier_frames_of_official_stream_calls_do_not_change(version):
    """The premise, in the official outputs themselves: the second streaming call of the e2e case reproduces the
    first call's frames (float rounding), while the full-attention final call changes every one of them."""
    golden = load_golden(version)
    first, second = golden["e2e_stream_flow_mel_0"], golden["e2e_stream_flow_mel_1"]
    final = golden["e2e_nonstream_flow_mel_0"]
    assert np.abs(second[:, :, :60] - first).max() < 1e-5
    per_frame_change = np.abs(final[:, :, :160] - second).max(axis=1)
    assert per_frame_change.min() > 5e-3  # measured: v2 0.31 .. 2.1, v3 0.0073 .. 0.11


# ------------------------------------------------------------------------------------ long sentences, random model


def _schedule_calls(n_tokens: int, n_prompt: int, **hops) -> list[int]:
    schedule, ends = CausalChunkSchedule(n_prompt, **hops), []
    while True:
        call = schedule.next_call(n_tokens, done=True)
        if call.finalize:
            return ends
        ends.append(call.end)


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_long_sentence_equals_recompute(version):
    """A 17-token prompt and 260 tokens with the official hops 25 -> 50 -> 100: every non-final call's mel equals
    the recomputing flow's (to 1e-5), while the estimator ran only on the new frames."""
    request = _random_request(version, 260)
    ends = _schedule_calls(260, 17)
    assert ends == [36, 86, 186]
    state = request.flow.stream_state()
    previous_total = 0
    for end in ends:
        incremental, recomputed = request(end, state), request(end)
        assert_close(incremental, recomputed, 1e-5, f"{version} call with {end} tokens")
        call = state.calls[-1]
        assert call.incremental and call.total_frames == 2 * (17 + end - 3)
        assert call.computed_frames == call.total_frames - previous_total  # only what is new
        previous_total = call.total_frames
    assert [c.computed_frames for c in state.calls] == [100, 100, 200]


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_hops_off_the_chunk_grid_equal_recompute(version):
    """13-token hops: calls end inside a chunk; the incomplete chunk is redone next call, results still exact."""
    request = _random_request(version, 90, n_prompt=11, seed=1)
    ends = _schedule_calls(90, 11, first_hop=13, max_hop=13, scale=1)
    state = request.flow.stream_state()
    for end in ends:
        assert_close(request(end, state), request(end), 1e-5, f"{version} call with {end} tokens")
    main = [11 + end - 3 for end in ends]
    committed = [0] + [m // 25 * 25 for m in main[:-1]]
    assert [c.computed_frames for c in state.calls] == [2 * (m - c) for m, c in zip(main, committed)]


def test_a_wrong_cache_is_detected():
    """The comparison is sharp: zeroing one CFM step's conv contexts after the first call moves the mel."""
    request = _random_request("v2", 120)
    state = request.flow.stream_state()
    request(36, state)
    state.steps[3].contexts = [torch.zeros_like(c) for c in state.steps[3].contexts]
    assert (request(86, state) - request(86)).abs().max().item() > 1e-3


def test_requests_do_not_share_state():
    """Two requests interleaved call by call, each with its own state, give their own recomputed mels."""
    first, second = _random_request("v3", 120, seed=4), _random_request("v3", 120, seed=5)
    states = {id(first): first.flow.stream_state(), id(second): second.flow.stream_state()}
    for end in (36, 86):
        for request in (first, second):
            assert_close(request(end, states[id(request)]), request(end), 1e-5, f"interleaved call {end}")


# ------------------------------------------------------------------------------------ budget, misuse, capability


def test_over_budget_recomputes_and_frees():
    request = _random_request("v2", 120)
    per_frame = request.flow.stream_state().bytes_per_frame
    state = request.flow.stream_state(max_bytes=per_frame * 180)
    assert_close(request(36, state), request(36), 1e-5, "within budget")  # 100 frames: incremental
    assert 0 < state.nbytes() <= per_frame * 180
    assert_close(request(86, state), request(86), 0.0, "over budget")  # 200 frames: recomputed
    assert state.released and state.nbytes() == 0
    assert [c.incremental for c in state.calls] == [True, False]


def test_misuse_is_refused():
    request = _random_request("v2", 120)
    state = request.flow.stream_state()
    request(36, state)
    changed = Request(request.flow, request.tokens.flip(1), request.prompt_token, request.prompt_feat,
                      request.embedding)
    with pytest.raises(ValueError, match="do not extend"):
        changed(86, state)
    with pytest.raises(ValueError, match="only serves streaming"):
        with torch.inference_mode():
            request.flow.inference(request.tokens[:, :86], _i32(86), request.prompt_token, _i32(17),
                                   request.prompt_feat, _i32(34), request.embedding, streaming=False,
                                   stream_state=state)
    request(86, state, finalize=True)
    with pytest.raises(ValueError, match="already ran its final call"):
        request(90, state)


class _Wrapped(torch.nn.Module):
    """Stands in for a backend's replacement module (defined outside cosydesk.model)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs)


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_replaced_modules_keep_the_recompute_path(version):
    flow = random_flow(version, SMALL, seed=9)
    assert flow.stream_state() is not None
    estimator = flow.decoder.estimator
    flow.decoder.estimator = _Wrapped(estimator)
    assert flow.stream_state() is None and "estimator" in flow_stream.why_not_incremental(flow)
    flow.decoder.estimator = estimator
    if version == "v2":
        block = flow.estimator.mid_blocks[0][1][0]
        flow.estimator.mid_blocks[0][1][0] = _Wrapped(block)
        assert flow.stream_state() is None and "replaced" in flow_stream.why_not_incremental(flow)
        flow.estimator.mid_blocks[0][1][0] = block
    decoder = flow.decoder
    flow.decoder = _Wrapped(decoder)
    assert flow.stream_state() is None and "decoder" in flow_stream.why_not_incremental(flow)


def test_v1_has_no_incremental_path():
    """v1's flow is not frame-causal (full-attention encoder, centred convs, GroupNorm over time) and offers
    no stream_state; changing only its last token changes its first mel frame."""
    flow = _fixture_flow("v1")
    assert not hasattr(flow, "stream_state") and flow_stream.why_not_incremental(flow) is not None
    golden = load_golden("v1")
    tokens = torch.from_numpy(golden["flow_tokens150"])[:, :120].clone()
    changed = tokens.clone()
    changed[0, -1] = (changed[0, -1] + 1) % 4096
    noise = torch.randn(1, 80, 206, generator=torch.Generator().manual_seed(1))
    empty = dict(prompt_token=torch.zeros(1, 0, dtype=torch.int32), prompt_token_len=_i32(0),
                 prompt_feat=torch.zeros(1, 0, 80), prompt_feat_len=_i32(0),
                 embedding=torch.from_numpy(golden["spk_sft_embedding"]), noise=noise)
    with torch.inference_mode():
        mels = [flow.inference(t, _i32(120), **empty) for t in (tokens, changed)]
    assert (mels[0] - mels[1])[:, :, 0].abs().max().item() > 1e-3  # measured 0.02
