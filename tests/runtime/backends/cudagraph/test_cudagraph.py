"""cudagraph backend: the static-cache Qwen math and padded graphed parts (CPU), graphs and pools (GPU); the bucket
lists it uses are tested in test_buckets.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.conftest import cuda


@pytest.fixture(scope="module")
def tiny_v2_model(tmp_path_factory):
    from cosydesk.synthetic.full_size import random_model

    # tiny sizes, seeded, no tokenizer files (they need a test-only package the GPU machine lacks)
    return random_model("v2", "cpu", torch.float32, seed=0, workdir=tmp_path_factory.mktemp("cg"), tiny=True)


def _graph_model(cpu_model):
    """A copy of ``cpu_model`` on the GPU with the cudagraph backend (the CPU fixture stays untouched)."""
    import copy
    import dataclasses

    from cosydesk.runtime.backends import accelerate

    dev = torch.device("cuda")
    base = dataclasses.replace(cpu_model, llm=copy.deepcopy(cpu_model.llm).to(dev),
                               flow=copy.deepcopy(cpu_model.flow).to(dev),
                               hift=copy.deepcopy(cpu_model.hift).to(dev), device=dev)
    return accelerate(base, "cudagraph")


def _prompt(seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(1000, 20000, (1, 9), generator=g), torch.randint(1000, 20000, (1, 5), generator=g),
            torch.randint(0, 6561, (1, 20), generator=g))


def test_static_qwen_matches_eager_logits_cpu(tiny_v2_model):
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    import copy

    lm = tiny_v2_model.llm
    # host_text_embeddings: the text table is looked up through the host path (a no-op move on CPU)
    static = StaticQwenLM(copy.deepcopy(lm), max_len=96, prefill_buckets=(48,), use_graphs=False,
                          host_text_embeddings=True)
    assert static.lm.embed_text.__name__ == "embed_text_on_host"
    from cosydesk.runtime.backends.cudagraph.qwen import decoder_layer

    assert static.decode_layer is decoder_layer  # not compiled here, so not the multiply + reduce form
    text, prompt_text, prompt_speech = _prompt()
    ref_logits, ref_state = lm.prefill(text, prompt_text, prompt_speech, None)
    ours, state = static.prefill(text, prompt_text, prompt_speech, None)
    assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4)
    for token in (5, 77, 6000, 12):
        ref_logits, ref_state = lm.decode_step(token, ref_state)
        ours, state = static.decode_step(token, state)
        assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4), token
    assert state.length == ref_state.length


def test_static_qwen_compiled_layer_matches_and_compiles_once_cpu(tiny_v2_model):
    """The decode and prefill layers go through torch.compile (aot_eager here: dynamo + functionalised cache
    writes, no Triton on CI) and must give the same logits; one compiled entry serves every layer (no per-layer
    recompile).
    The device-side id selector is compiled too, once (decode and prefill logits share its entry)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    torch._dynamo.reset()
    counters.clear()
    lm = tiny_v2_model.llm
    static = StaticQwenLM(lm, max_len=96, prefill_buckets=(48,), use_graphs=False, compile_backend="aot_eager")
    text, prompt_text, prompt_speech = _prompt(2)
    ref_logits, ref_state = lm.prefill(text, prompt_text, prompt_speech, None)
    ours, state = static.prefill(text, prompt_text, prompt_speech, None)
    for token in (9, 4000, 17):
        ref_logits, ref_state = lm.decode_step(token, ref_state)
        ours, state = static.decode_step(token, state)
        assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4), token
    assert len(list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, forced=[1, 2, 3]))) == 3
    # the decode layer (shared by every layer), the prefill layer (one symbolic length), the id selector
    assert counters["stats"]["unique_graphs"] == 3
    torch._dynamo.reset()


def test_static_qwen_bucket_padding_junk_is_harmless_cpu(tiny_v2_model):
    """Prefill padded to a bucket writes junk K/V past the prompt; later decode steps must not see it."""
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

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
    from cosydesk.runtime.backends.cudagraph.qwen import StaticDecodeState

    state = StaticDecodeState(length=n)
    for token in (3, 4, 5):
        ref_logits, ref_state = lm.decode_step(token, ref_state)
        ours, state = static.decode_step(token, state)
        assert torch.allclose(ours, ref_logits, atol=1e-4, rtol=1e-4)


def test_static_qwen_default_cache_holds_a_30_s_prompt_cpu(tiny_v2_model):
    """The default cache size takes a MAX_PROMPT_SECONDS zero-shot prompt (25 Hz tokens) with a long transcript
    and sentence (a 512-position cache refused prompts past ~8 s); the prefill, longer than every bucket, runs the
    plain layer, and the logits equal the module's."""
    from cosydesk.frontend.limits import MAX_PROMPT_SECONDS
    from cosydesk.model.sampling import teacher_forced_logits
    from cosydesk.runtime.backends.cudagraph.model import llm_cache_positions
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    lm = tiny_v2_model.llm
    static = StaticQwenLM(lm, max_len=llm_cache_positions("v2"), prefill_buckets=(48,), use_graphs=False)
    g = torch.Generator().manual_seed(2)
    args = (torch.randint(1000, 20000, (1, 80), generator=g), torch.randint(1000, 20000, (1, 170), generator=g),
            torch.randint(0, 6561, (1, int(MAX_PROMPT_SECONDS * 25)), generator=g), None)
    forced = [5, 77, 6000, 12]
    logits, state = static.prefill(*args)
    assert state.length > 1000
    for token in forced[:-1]:
        logits, state = static.decode_step(token, state)
    ref = teacher_forced_logits(lm, *args, forced)
    assert torch.allclose(logits, ref[-1], atol=1e-4, rtol=1e-4)


def _static_lm(lm, max_len=256):
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    return StaticQwenLM(lm, max_len=max_len, prefill_buckets=(48,), use_graphs=False)


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_decode_ahead_greedy_equals_the_shared_loop_cpu(tiny_v2_model, version, tmp_path):
    """The device-side choice + decode-ahead loop yields what the shared host loop yields over the same LLM,
    including the min-length rule and the stop id (made to win once it is allowed)."""
    import copy

    from cosydesk.model.sampling import GreedySampler, generate_speech_tokens

    if version == "v2":
        lm = copy.deepcopy(tiny_v2_model.llm)
    else:
        from cosydesk.synthetic.full_size import random_model

        lm = random_model("v3", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True).llm
    static = _static_lm(lm)
    text, prompt_text, prompt_speech = _prompt(3)
    ref = list(generate_speech_tokens(static, text, prompt_text, prompt_speech, None, GreedySampler()))
    assert len(ref) == 20 * text.shape[1]  # random weights: never stops, runs to max_len
    assert list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True)) == ref
    # eos wins as soon as the min-length rule stops masking it (v3: the rule masks sos, so eos wins at once)
    _biased_decoder(lm, {lm.eos_id: 1e4})
    ref = list(generate_speech_tokens(static, text, prompt_text, prompt_speech, None, GreedySampler()))
    assert len(ref) == (2 * text.shape[1] if version == "v2" else 0)
    assert list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True)) == ref


def test_decode_ahead_sampling_is_seeded_and_forced_ids_are_consumed_cpu(tiny_v2_model):
    static = _static_lm(tiny_v2_model.llm)
    text, prompt_text, prompt_speech = _prompt(4)

    def sampled(seed):
        gen = torch.Generator().manual_seed(seed)
        return list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, generator=gen))

    first = sampled(5)
    assert first == sampled(5) and first != sampled(6)
    assert not set(first) & tiny_v2_model.llm.stop_ids and len(first) == 20 * text.shape[1]
    forced = [7, 6000, 12, 12, 12, 3000]  # the benchmark's forced ids: emitted, and what the LLM is fed
    assert list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, forced=forced)) == forced
    from cosydesk.model.sampling import teacher_forced_logits

    ref = teacher_forced_logits(tiny_v2_model.llm, text, prompt_text, prompt_speech, None, forced)
    assert torch.allclose(static.decode_logits, ref[-1], atol=1e-4, rtol=1e-4)


def _biased_decoder(lm, bias: dict[int, float]) -> None:
    """Give ``lm`` an llm_decoder with a bias (v3's has none) raised at the given ids."""
    decoder = lm.llm_decoder
    biased = torch.nn.Linear(decoder.in_features, decoder.out_features)
    with torch.no_grad():
        biased.weight.copy_(decoder.weight)
        biased.bias.copy_(decoder.bias if decoder.bias is not None else torch.zeros(decoder.out_features))
        for i, value in bias.items():
            biased.bias[i] += value
    lm.llm_decoder = biased


def test_decode_ahead_sampling_follows_the_reference_loop_step_by_step_cpu(tiny_v2_model):
    """The device loop against the reference loop written out on the host (same uniform row per step, the last
    10 ids as the window, min-length masking, stop ids), on a model biased so that repeats trigger the fallback
    and eos competes once allowed: identical tokens and lengths for several seeds."""
    import copy

    from cosydesk.model.sampling import RepetitionAwareSampler, length_limits, ras_select

    lm = copy.deepcopy(tiny_v2_model.llm)
    _biased_decoder(lm, {5: 9.0, 6: 9.0, 7: 9.0, lm.eos_id: 7.5})
    static = _static_lm(lm)
    text, prompt_text, prompt_speech = _prompt(0)
    ras = RepetitionAwareSampler()

    def reference(seed):
        min_len, max_len = length_limits(text.shape[1], 2, 20)
        uniforms = torch.rand(max_len, 2, generator=torch.Generator().manual_seed(seed))
        logits, state = static.prefill(text, prompt_text, prompt_speech, None)
        out = []
        for step in range(max_len):
            scores = logits.float().clone()
            if step < min_len:
                scores[list(lm.min_len_masked_ids)] = float("-inf")
            window = torch.tensor(([-1] * ras.win_size + out)[-ras.win_size:])
            token = int(ras_select(scores, window, uniforms[step], ras.top_p, ras.top_k, ras.repeat_threshold))
            if token in lm.stop_ids:
                return out
            out.append(token)
            logits, state = static.decode_step(token, state)
        return out

    lengths, fallbacks = set(), 0
    for seed in range(4):
        ref = reference(seed)
        assert list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None,
                                                  generator=torch.Generator().manual_seed(seed))) == ref, seed
        lengths.add(len(ref))
        fallbacks += sum(t not in (5, 6, 7) for t in ref)
    assert min(lengths) >= 2 * text.shape[1] and max(lengths) < 20 * text.shape[1]  # eos won after min_len
    assert fallbacks  # the repetition fallback was exercised


def test_decode_ahead_raises_on_non_finite_scores_cpu(tiny_v2_model):
    """A NaN logit (an fp16 overflow) must stop the sentence with a clear error, not pick id 0 at every step."""
    import copy

    from cosydesk.runtime.errors import NumericalError

    lm = copy.deepcopy(tiny_v2_model.llm)
    _biased_decoder(lm, {100: float("nan")})
    static = _static_lm(lm)
    text, prompt_text, prompt_speech = _prompt(0)
    for greedy in (False, True):
        with pytest.raises(NumericalError, match="not finite"):
            list(static.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=greedy))


def test_decode_ahead_stops_at_the_static_cache_like_decode_step_cpu(tiny_v2_model):
    from cosydesk.model.sampling import GreedySampler, generate_speech_tokens
    from cosydesk.runtime.errors import TooLongError

    static = _static_lm(tiny_v2_model.llm, max_len=60)
    text, prompt_text, prompt_speech = _prompt(3)
    counts = []
    for tokens in (generate_speech_tokens(static, text, prompt_text, prompt_speech, None, GreedySampler()),
                   static.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True)):
        got = []
        with pytest.raises(TooLongError, match="past the 60 positions"):
            for token in tokens:
                got.append(token)
        counts.append(got)
    assert counts[0] == counts[1] and counts[0]


@pytest.mark.parametrize("ahead", [2, 3])
def test_more_steps_queued_ahead_change_no_token_cpu(tiny_v2_model, ahead, monkeypatch):
    """``COSYDESK_DECODE_AHEAD`` (default 3): with 2 or 3 steps queued before each read, the same ids as with 1
    (greedy run to its length, seeded sampling, forced ids), the stop id ends at the same token (the extra
    steps are dropped), and the cache-full error comes after the same last token."""
    import copy

    from cosydesk.runtime.errors import TooLongError

    text, prompt_text, prompt_speech = _prompt(3)
    args = (text, prompt_text, prompt_speech, None)
    forced = [7, 6000, 12, 12, 12, 3000]

    def outputs(lm, max_len=256):
        static = _static_lm(lm, max_len=max_len)
        runs = [list(static.generate_speech_tokens(*args, greedy=True)),
                list(static.generate_speech_tokens(*args, generator=torch.Generator().manual_seed(5))),
                list(static.generate_speech_tokens(*args, forced=forced))]
        got = []
        with pytest.raises(TooLongError):
            for token in _static_lm(lm, max_len=60).generate_speech_tokens(*args, greedy=True):
                got.append(token)
        return static.ahead, runs + [got]

    lm = copy.deepcopy(tiny_v2_model.llm)
    monkeypatch.delenv("COSYDESK_DECODE_AHEAD", raising=False)
    assert _static_lm(lm).ahead == 3
    monkeypatch.setenv("COSYDESK_DECODE_AHEAD", "1")
    one, reference = outputs(lm)
    monkeypatch.setenv("COSYDESK_DECODE_AHEAD", str(ahead))
    more, queued = outputs(lm)
    assert (one, more) == (1, ahead) and queued == reference and reference[3]
    _biased_decoder(lm, {lm.eos_id: 1e4})  # eos wins once allowed: the stop lands while steps are queued
    monkeypatch.setenv("COSYDESK_DECODE_AHEAD", "1")
    stopped = list(_static_lm(lm).generate_speech_tokens(*args, greedy=True))
    monkeypatch.setenv("COSYDESK_DECODE_AHEAD", str(ahead))
    assert list(_static_lm(lm).generate_speech_tokens(*args, greedy=True)) == stopped
    assert len(stopped) == 2 * text.shape[1]


def test_decode_layer_gemv_form_matches_gemm_and_sdpa_cpu():
    """The compiled decode layer's multiply + reduce projections and attention equal F.linear + SDPA (GQA)."""
    from cosydesk.runtime.backends.cudagraph.qwen import decoder_layer

    g = torch.Generator().manual_seed(3)
    hidden, heads, kv_heads, head_dim, inter, max_len = 64, 4, 2, 16, 96, 24
    r = lambda *s: torch.randn(*s, generator=g) * 0.2  # noqa: E731
    weights = (1 + r(hidden), r(hidden + 2 * kv_heads * head_dim, hidden), r(hidden + 2 * kv_heads * head_dim),
               r(hidden, hidden), 1 + r(hidden), r(2 * inter, hidden), r(hidden, inter))
    position = torch.tensor([9])
    angles = position.float()[:, None] * torch.rand(head_dim // 2, generator=g)
    cos = torch.cat([angles.cos()] * 2, -1).view(1, 1, 1, head_dim)
    sin = torch.cat([angles.sin()] * 2, -1).view(1, 1, 1, head_dim)
    mask = (torch.arange(max_len) <= position).view(1, 1, 1, max_len)
    x = r(1, 1, hidden)
    caches = [r(1, kv_heads, max_len, head_dim) for _ in range(2)]
    out = {}
    for gemv in (False, True):
        k, v = (c.clone() for c in caches)
        out[gemv] = decoder_layer(x, *weights, 1e-6, k, v, cos, sin, position, mask, heads, kv_heads, gemv=gemv)
        out[gemv, "k"] = k
    torch.testing.assert_close(out[True], out[False], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out[True, "k"], out[False, "k"])


@pytest.mark.parametrize("streaming,finalize", [(True, False), (False, True), (True, True), (False, False)])
def test_graphed_encoder_padding_keeps_valid_frames_cpu(tiny_v2_model, streaming, finalize):
    """The bucketed encoder body (what the graphs capture) equals the plain encoder on the valid frames: look-ahead
    rows, zero padding after the input embedding, masks and relative positions of a longer bucket."""
    from cosydesk.runtime.backends.cudagraph.encoder import GraphedEncoder

    flow = tiny_v2_model.flow
    encoder = flow.encoder
    for projection in (None, flow.encoder_proj):  # the flow's projection inside the body too (as the backend builds it)
        _encoder_matches(flow, GraphedEncoder(encoder, [16, 48], projection=projection), projection, streaming,
                         finalize)


def _encoder_matches(flow, graphed, projection, streaming: bool, finalize: bool) -> None:
    encoder = graphed.encoder
    g = torch.Generator().manual_seed(1)
    for total in (11, 30, 60):  # bucket 16 with 2-5 padded rows, bucket 48, longer than every bucket
        ids = torch.randint(0, 6561, (1, total), generator=g)
        tokens = flow.embed_tokens(ids[:, :4], ids[:, 4:])
        context = None
        if not finalize:
            tokens, context = tokens[:, :-3], tokens[:, -3:]
        lengths = torch.tensor([tokens.shape[1]], dtype=torch.int32)
        with torch.inference_mode():
            ref, _ = encoder(tokens, lengths, context=context, streaming=streaming)
            ref = ref if projection is None else projection(ref)
            ours, mask = graphed(tokens, lengths, context=context, streaming=streaming)
        assert ours.shape == ref.shape and mask.shape == (1, 1, ref.shape[1])
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert graphed.eager_calls == 3  # no graphs on CPU: two bucket bodies, one plain call


@pytest.mark.parametrize("streaming", [False, True])
def test_cfm_padding_keeps_valid_frames_cpu(tiny_v2_model, streaming):
    from cosydesk.model.cfm import cosine_time_grid
    from cosydesk.runtime.backends.cudagraph.cfm import solve_cfm

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
    dev = torch.device("cuda")
    model = _graph_model(tiny_v2_model)
    text, prompt_text, prompt_speech = (t.to(dev) for t in _prompt())
    ref, ref_state = tiny_v2_model.llm.prefill(*(t.cpu() for t in (text, prompt_text, prompt_speech)), None)
    ours, state = model.llm.prefill(text, prompt_text, prompt_speech, None)
    assert torch.allclose(ours.cpu(), ref, atol=5e-2, rtol=5e-2)
    for token in (5, 77):
        ref, ref_state = tiny_v2_model.llm.decode_step(token, ref_state)
        ours, state = model.llm.decode_step(token, state)
        assert torch.allclose(ours.cpu(), ref, atol=5e-2, rtol=5e-2)
    # decode-ahead on the captured graphs: greedy equals the host loop over the same graphs; seeded sampling repeats
    from cosydesk.model.sampling import GreedySampler, generate_speech_tokens

    assert {"decode", "select_prefill"} <= set(model.llm.graphs)
    ref = list(generate_speech_tokens(model.llm, text, prompt_text, prompt_speech, None, GreedySampler()))
    assert list(model.llm.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True)) == ref
    runs = [list(model.llm.generate_speech_tokens(text, prompt_text, prompt_speech, None,
                                                  generator=torch.Generator().manual_seed(9))) for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) == len(ref) and runs[0] != ref
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    for seed in range(3):
        logits, state = model.llm.prefill(text, prompt_text, prompt_speech, None)
        for token in range(20):
            logits, state = model.llm.decode_step(token, state)
        generator = torch.Generator().manual_seed(seed)
        assert len(list(model.llm.generate_speech_tokens(text, prompt_text, prompt_speech, None, generator=generator)))
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] == before
    assert model.flow.decoder.graphs and not model.flow.decoder.capture_errors

    # Whole streamed requests (flow graphs, HiFT graphs incl. the final chunk's padded ones): after one warm-up
    # request, further requests reserve no new device memory and allocate no new segments.
    from cosydesk.runtime.token2wav import stream_token2wav

    g = torch.Generator().manual_seed(0)
    prompt_token = torch.randint(0, 6561, (1, 20), generator=g)
    prompt_feat, embedding = torch.randn(1, 40, 80, generator=g), torch.randn(1, 192, generator=g)
    tokens = torch.randint(0, 6561, (1, 150), generator=g)

    def request():
        return [c for c in stream_token2wav(model, tokens, prompt_token, prompt_feat, embedding, zero_noise=True)]

    first = request()
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    reserved, segments = stats["reserved_bytes.all.current"], stats["segment.all.current"]
    eager_hift = model.hift.eager_calls
    for _ in range(3):
        again = request()
        assert all(np.array_equal(a, b) for a, b in zip(first, again))
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    assert stats["reserved_bytes.all.current"] == reserved and stats["segment.all.current"] == segments
    assert model.hift.eager_calls == eager_hift  # every chunk, the free-length final one too, replays a graph


def _sentence_inputs(seed: int):
    """Pipeline inputs for one sentence and 80 forced speech tokens."""
    from cosydesk.runtime.pipeline import SentenceInputs

    text, prompt_text, prompt_speech = _prompt(seed)
    g = torch.Generator().manual_seed(seed)
    inputs = SentenceInputs(text=text, prompt_text=prompt_text, llm_prompt_speech_token=prompt_speech,
                            llm_embedding=torch.randn(1, 192, generator=g), flow_prompt_speech_token=prompt_speech,
                            prompt_speech_feat=torch.randn(1, 40, 80, generator=g),
                            flow_embedding=torch.randn(1, 192, generator=g))
    return inputs, torch.randint(0, 6561, (80,), generator=g).tolist()


def _pipeline_sentence(model, seed: int = 0, first_chunk_alone: bool = False) -> list[np.ndarray]:
    """One streamed sentence through run_sentence (LLM producer thread + token2wav, as the app and the bench run
    it) with 80 forced speech tokens; returns the chunks on the host."""
    from cosydesk.runtime.pipeline import run_sentence

    dev = model.device
    inputs, forced = _sentence_inputs(seed)

    def source(inp, stop):
        args = (inp.text.to(dev), inp.prompt_text.to(dev), inp.llm_prompt_speech_token.to(dev), None)
        if hasattr(model.llm, "generate_speech_tokens"):  # the graph LLM's own (decode-ahead) loop
            yield from model.llm.generate_speech_tokens(*args, forced=forced)
            return
        logits, state = model.llm.prefill(*args)
        for token in forced:
            if stop.is_set():
                return
            yield token
            logits, state = model.llm.decode_step(token, state)
            int(torch.argmax(logits))  # the sampler's per-token host sync

    return [r.pcm.float().cpu().numpy() for r in run_sentence(model, inputs, source, stream=True, zero_noise=True,
                                                               first_chunk_alone=first_chunk_alone)]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, cuda])])
def test_first_chunk_alone_holds_the_llm_until_the_first_chunk_is_done(tiny_v2_model, monkeypatch, device):
    """The producer asks for the token after the first chunk's only once that chunk is finished - on a GPU,
    finished on the device (its work is asynchronous), not merely launched; the audio is the same either way.
    ``shared_steps=0`` (the default) pins the whole-chunk hold (shared steps let the graphed solver release the LLM
    for the last CFM steps, tested in ``test_release_during_flow_fires_once_the_last_shared_steps_remain_cpu``)."""
    from cosydesk.runtime import pipeline
    from cosydesk.runtime.schedule import make_schedule

    model = tiny_v2_model if device == "cpu" else _graph_model(tiny_v2_model)
    finished = []  # one entry per token2wav call: a CUDA event recorded after its work (None on the CPU)

    class CountingToken2Wav(pipeline.Token2Wav):
        def __call__(self, *args, **kwargs):
            out = super().__call__(*args, **kwargs)
            event = None
            if model.device.type == "cuda":
                event = torch.cuda.Event()
                event.record()
            finished.append(event)
            return out

    monkeypatch.setattr(pipeline, "Token2Wav", CountingToken2Wav)
    inputs, forced = _sentence_inputs(0)
    when_asked = []  # (token2wav calls so far, all of their work done) at each request for a token

    def source(inp, stop):
        for token in forced:
            when_asked.append((len(finished), all(e is None or e.query() for e in finished)))
            yield token

    alone = [r.pcm.float().cpu().numpy() for r in pipeline.run_sentence(model, inputs, source, stream=True,
                                                                        zero_noise=True, first_chunk_alone=True,
                                                                        shared_steps=0)]
    first = make_schedule("v2", inputs.flow_prompt_speech_token.shape[1]).tokens_needed()
    assert [calls for calls, _ in when_asked[:first]] == [0] * first
    assert when_asked[first] == (1, True)
    shared = _pipeline_sentence(model)
    assert len(alone) == len(shared) and all(np.array_equal(a, b) for a, b in zip(alone, shared))


def _graphed_flow_copy(cpu_model):
    """A copy of the CPU model whose flow solver is a ``GraphedSampler`` (its steps run eagerly on the CPU)."""
    import copy
    import dataclasses

    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler

    flow = copy.deepcopy(cpu_model.flow)
    flow.decoder = GraphedSampler(flow.decoder, [128, 256, 512], (False, True))
    return dataclasses.replace(cpu_model, flow=flow)


@pytest.mark.parametrize("shared", [0, 1, 3, 10, 12])
def test_release_during_flow_fires_once_the_last_shared_steps_remain_cpu(tiny_v2_model, shared):
    """The graphed solver calls the release right after launching the step that leaves ``shared`` steps (at
    the latest after its first step); 0 leaves the release to the caller; the hook is removed afterwards."""
    from cosydesk.runtime.pipeline import release_during_flow

    model = _graphed_flow_copy(tiny_v2_model)
    solver = model.flow.decoder
    launched, released_at = [], []
    real_set_time = solver._set_time
    solver._set_time = lambda step: (launched.append(step), real_set_time(step))[1]
    g = torch.Generator().manual_seed(0)
    z, mu, cond = (torch.randn(1, 80, 100, generator=g) for _ in range(3))
    with release_during_flow(model, shared, lambda: released_at.append(len(launched))):
        solver(z, torch.ones(1, 1, 100), mu, torch.randn(1, 80, generator=g), cond, streaming=True)
    assert len(launched) == solver.n_steps == 10
    expected = [] if shared == 0 else [max(1, solver.n_steps - shared)]
    assert released_at == expected
    assert solver.after_step is None
    plain = []  # a solver without the hook (the plain sampler): nothing released early
    with release_during_flow(tiny_v2_model, 3, lambda: plain.append(1)):
        pass
    assert plain == [] and not hasattr(tiny_v2_model.flow.decoder, "after_step")


def test_first_chunk_shared_steps_release_the_llm_from_the_solver_same_audio_cpu(tiny_v2_model, monkeypatch):
    """With shared steps the held-back LLM is released from inside the first chunk's solve (once), and the
    sentence's audio is the same as with the LLM held for the whole chunk; the A/B switch is read per sentence."""
    from cosydesk.runtime import pipeline

    model = _graphed_flow_copy(tiny_v2_model)
    hooks = []
    real = pipeline.release_during_flow

    def spy(model_, shared, release):
        return real(model_, shared, lambda: (hooks.append(shared), release()))

    monkeypatch.setattr(pipeline, "release_during_flow", spy)
    monkeypatch.setenv("COSYDESK_FIRST_CHUNK_SHARED_STEPS", "0")
    held = _pipeline_sentence(model, first_chunk_alone=True)
    assert hooks == [] and pipeline.first_chunk_shared_steps() == 0
    monkeypatch.setenv("COSYDESK_FIRST_CHUNK_SHARED_STEPS", "3")
    shared = _pipeline_sentence(model, first_chunk_alone=True)
    assert hooks == [3]
    assert len(held) == len(shared) and all(np.array_equal(a, b) for a, b in zip(held, shared))


def test_pipeline_sentence_helper_streams_cpu(tiny_v2_model):
    chunks = _pipeline_sentence(tiny_v2_model)
    assert len(chunks) >= 2 and all(np.isfinite(c).all() for c in chunks)


@pytest.mark.gpu
@cuda
def test_pipeline_sentences_reserve_nothing_new_on_the_graph_backend(tiny_v2_model):
    """Sentences through the real pipeline (threads, streams, graphs): after two warm-up sentences, 40 more - more
    than torch's pool of 32 streams, so a stream taken per sentence would show up - reserve no new memory.
    (A per-sentence consumer stream once grew the H200 bench's reserved memory from 1.5 to 3.7 GB.)"""
    model = _graph_model(tiny_v2_model)
    for _ in range(2):
        _pipeline_sentence(model)
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    for i in range(40):  # (the chunk count depends on thread timing, so chunks are not compared here)
        chunks = _pipeline_sentence(model, first_chunk_alone=bool(i % 2))  # also the event-gated first chunk
        assert all(np.isfinite(c).all() for c in chunks)
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] == reserved


@pytest.mark.gpu
@cuda
def test_a_request_on_a_stream_of_its_own_makes_cublas_allocate_no_workspace(tiny_v2_model):
    """The request path runs no cuBLAS product outside the graphs: a sentence on a stream the build never used
    reserves less than the 32 MiB workspace cuBLAS allocates for each new stream (the speaker projection did,
    H200 wave 7: a 42 MB mapping in the bench's first sentence)."""
    model = _graph_model(tiny_v2_model)
    _pipeline_sentence(model)
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_stats()["reserved_bytes.all.current"]
    with torch.cuda.stream(torch.cuda.Stream()):
        chunks = _pipeline_sentence(model, seed=1)
    torch.cuda.synchronize()
    assert all(np.isfinite(c).all() for c in chunks)
    assert torch.cuda.memory_stats()["reserved_bytes.all.current"] - reserved < 32 << 20


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_the_speaker_projection_without_cublas_is_the_linear_cpu(version):
    import copy

    from cosydesk.model import load
    from cosydesk.model.flow_common import project_speaker
    from cosydesk.runtime.backends.cudagraph.fuse import ReducedLinear, speaker_projection_without_cublas
    from tests.support.paths import fixture_dir

    flow = load(fixture_dir(version) / "model").flow
    reference = copy.deepcopy(flow.spk_embed_affine_layer)
    assert speaker_projection_without_cublas(flow) and not speaker_projection_without_cublas(flow)
    assert type(flow.spk_embed_affine_layer) is ReducedLinear
    embedding = torch.randn(1, 192, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        torch.testing.assert_close(project_speaker(flow.spk_embed_affine_layer, embedding),
                                   project_speaker(reference, embedding), rtol=1e-5, atol=1e-6)
        half = copy.deepcopy(flow.spk_embed_affine_layer).half()
        assert half(embedding.half()).dtype == torch.float16


def test_convs_as_gemm_match_the_convolutions_cpu(tiny_v2_model):
    """GemmConv1d equals the convolution it replaces (symmetric and causal padding), and the whole v2 estimator's
    velocity is unchanged once all of its stride-1 convs are rewritten (none is left behind)."""
    import copy

    from cosydesk.model.unet import LeftPaddedConv1d
    from cosydesk.runtime.backends.cudagraph.fuse import GemmConv1d, convs_as_gemm

    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 6, 11, generator=g)
    for conv in (torch.nn.Conv1d(6, 4, 3, padding=1), LeftPaddedConv1d(6, 4, 3), torch.nn.Conv1d(6, 4, 5, padding=2)):
        ref = conv(x)
        holder = torch.nn.Sequential(conv)
        assert convs_as_gemm(holder) == 1 and type(holder[0]) is GemmConv1d
        torch.testing.assert_close(holder[0](x), ref, rtol=1e-5, atol=1e-5)
    kept = torch.nn.Sequential(torch.nn.Conv1d(6, 6, 3, stride=2), torch.nn.Conv1d(6, 6, 1),
                               torch.nn.Conv1d(6, 6, 3, groups=2))
    assert convs_as_gemm(kept) == 0

    estimator = tiny_v2_model.flow.decoder.estimator
    rewritten = copy.deepcopy(estimator)
    assert convs_as_gemm(rewritten) > 0
    assert not any(type(m) in (torch.nn.Conv1d, LeftPaddedConv1d) and m.kernel_size[0] > 1 for m in rewritten.modules())
    frames = 70
    x, mu, cond = (torch.randn(2, 80, frames, generator=g) for _ in range(3))
    mask, spks, t = torch.ones(2, 1, frames), torch.randn(2, 80, generator=g), torch.rand(2, generator=g)
    for streaming in (False, True):
        torch.testing.assert_close(rewritten(x, mask, mu, t, spks, cond, streaming=streaming),
                                   estimator(x, mask, mu, t, spks, cond, streaming=streaming), rtol=1e-4, atol=1e-4)


def test_estimator_blocks_compiled_match_eager_cpu(tiny_v2_model):
    """Regional compilation of the estimator blocks (aot_eager on CI: dynamo tracing, functionalisation,
    automatic dynamic lengths) keeps the CFM output, and lengths after the second reuse the dynamic entry."""
    import copy

    import torch._dynamo
    from torch._dynamo.utils import counters

    from cosydesk.model.cfm import cosine_time_grid
    from cosydesk.runtime.backends.cudagraph.cfm import solve_cfm
    from cosydesk.runtime.backends.cudagraph.compile import ESTIMATOR_BLOCKS, compile_blocks
    from cosydesk.runtime.backends.cudagraph.fuse import convs_as_gemm, fuse_estimator_attention

    torch._dynamo.reset()
    counters.clear()
    sampler = tiny_v2_model.flow.decoder
    compiled_sampler = copy.deepcopy(sampler)
    assert fuse_estimator_attention(compiled_sampler.estimator) > 0
    assert convs_as_gemm(compiled_sampler.estimator) > 0
    assert compile_blocks(compiled_sampler.estimator, ESTIMATOR_BLOCKS, torch.device("cpu"), backend="aot_eager") > 0
    grid = cosine_time_grid(sampler.n_steps)
    g = torch.Generator().manual_seed(3)
    graphs_after = []
    for frames in (64, 96, 128, 160):
        z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
        spks, mask = torch.randn(1, 80, generator=g), torch.ones(1, 1, frames)
        ref = solve_cfm(sampler, z, mask, mu, spks, cond, True, grid)
        ours = solve_cfm(compiled_sampler, z, mask, mu, spks, cond, True, grid)
        assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), frames
        graphs_after.append(counters["stats"]["unique_graphs"])
    assert graphs_after[2] == graphs_after[3] == graphs_after[1]  # no recompile once the length is dynamic
    assert graphs_after[-1] <= 8  # one entry per block class and shape regime, not one per block instance
    torch._dynamo.reset()


def test_streaming_hift_shapes_cover_every_non_final_v2_call(tiny_v2_model):
    """The v2 HiFT graphs are captured for exact shapes: every non-final streaming call must hit one of them."""
    from cosydesk.runtime.backends.cudagraph.hift import streaming_hift_shapes
    from cosydesk.runtime.schedule import ChunkCall, make_schedule
    from cosydesk.runtime.token2wav import Token2Wav

    shapes = set(streaming_hift_shapes())
    seen = []

    class Recorder:
        def __init__(self, hift):
            self.hift = hift

        def inference_with_source(self, mel, cache_source=None, zero_noise=False, **kwargs):
            seen.append(((mel.shape[2], 0 if cache_source is None else cache_source.shape[2]), kwargs))
            return self.hift.inference_with_source(mel, cache_source=cache_source, zero_noise=zero_noise)

    import dataclasses

    model = dataclasses.replace(tiny_v2_model, hift=Recorder(tiny_v2_model.hift))
    for prompt_tokens in (7, 20, 25, 31):
        seen.clear()
        g = torch.Generator().manual_seed(prompt_tokens)
        state = Token2Wav(model, torch.randint(0, 6561, (1, prompt_tokens), generator=g),
                          torch.randn(1, 2 * prompt_tokens, 80, generator=g), torch.randn(1, 192, generator=g),
                          zero_noise=True)
        tokens = torch.randint(0, 6561, (1, 330), generator=g)
        schedule = make_schedule("v2", prompt_tokens)
        while True:
            call = schedule.next_call(tokens.shape[1], done=True)
            state(tokens, call)
            if call.finalize:
                break
        assert len(seen) >= 4
        for shape, _ in seen[:-1]:
            assert shape in shapes, (prompt_tokens, shape)


@pytest.mark.parametrize("streaming", [False, True])
def test_graphed_sampler_step_buffers_match_solver_cpu(tiny_v2_model, streaming):
    """The per-step buffers (CFG row 1 kept zero, t/dt device scalars, float32 state, padding to the bucket)
    give the solver's output; on CPU the captured step runs eagerly on the same buffers."""
    from cosydesk.model.cfm import cosine_time_grid
    from cosydesk.runtime.backends.cudagraph.cfm import GraphedSampler, solve_cfm

    sampler = tiny_v2_model.flow.decoder
    graphed = GraphedSampler(sampler, [64, 96], (False, True))
    g = torch.Generator().manual_seed(5)
    for frames in (70, 50, 96):  # two requests in one bucket: nothing may leak from the first
        z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
        spks, mask = torch.randn(1, 80, generator=g), torch.ones(1, 1, frames)
        ref = solve_cfm(sampler, z, mask, mu, spks, cond, streaming, cosine_time_grid(sampler.n_steps))
        ours = graphed(z, mask, mu, spks, cond, streaming=streaming)
        assert ours.shape == ref.shape
        assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), frames


def test_v1_graphed_encoder_padding_keeps_valid_frames_cpu(tmp_path):
    """v1's full-attention flow encoder on a bucket (what its graphs capture) equals the plain encoder on the valid
    frames: padded rows masked as keys, relative positions of a longer bucket, a length given as a device tensor,
    and requests longer than every bucket (the plain encoder). Chunked encoders are refused."""
    import copy

    from cosydesk.runtime.backends.cudagraph.encoder import GraphedFullAttentionEncoder
    from cosydesk.runtime.backends.cudagraph.model import v1_encoder_graphs_wanted
    from cosydesk.synthetic.full_size import random_model

    flow = random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True).flow
    encoder = flow.encoder
    assert v1_encoder_graphs_wanted(encoder)
    graphed = GraphedFullAttentionEncoder(encoder, [16, 48])
    g = torch.Generator().manual_seed(2)
    for total in (11, 16, 30, 60):  # bucket 16 with 5 padded rows, exactly 16, bucket 48, past every bucket
        tokens = flow.embed_tokens(*torch.randint(0, 4096, (1, total), generator=g).split([4, total - 4], dim=1))
        for lengths in (torch.tensor([total], dtype=torch.int32), None):
            with torch.inference_mode():
                ref, ref_mask = encoder(tokens, lengths)
                ours, mask = graphed(tokens, lengths)
            assert ours.shape == ref.shape and torch.equal(mask, ref_mask)
            torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    assert graphed.eager_calls == 8  # no graphs on CPU: six bucket bodies, two plain calls
    chunked = copy.deepcopy(encoder)
    chunked.static_chunk_size = 4
    assert not v1_encoder_graphs_wanted(chunked)
    with pytest.raises(ValueError, match="full attention"):
        GraphedFullAttentionEncoder(chunked, [16])


def test_v1_masked_group_norm_makes_bucket_padding_harmless_cpu(tmp_path):
    """v1's GroupNorm spans time: padding to a bucket changes valid frames unless the statistics are masked."""
    import copy

    from cosydesk.model.cfm import cosine_time_grid
    from cosydesk.runtime.backends.cudagraph.cfm import solve_cfm
    from cosydesk.runtime.backends.cudagraph.fuse import mask_group_norms
    from cosydesk.synthetic.full_size import random_model

    v1 = random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True)
    sampler = v1.flow.decoder
    masked = copy.deepcopy(sampler)
    assert mask_group_norms(masked.estimator) > 0
    grid = cosine_time_grid(sampler.n_steps)
    g = torch.Generator().manual_seed(0)
    frames, padded = 70, 96
    z, mu, cond = (torch.randn(1, 80, frames, generator=g) for _ in range(3))
    spks, mask = torch.randn(1, 80, generator=g), torch.ones(1, 1, frames)
    ref = solve_cfm(sampler, z, mask, mu, spks, cond, False, grid)
    pad = lambda x: torch.nn.functional.pad(x, (0, padded - frames))  # noqa: E731
    padded_args = (pad(z), pad(mask), pad(mu), spks, pad(cond), False, grid)
    plain_padded = solve_cfm(sampler, *padded_args)[:, :, :frames]
    assert not torch.allclose(plain_padded, ref, atol=1e-3)  # why the rewrite exists
    assert torch.allclose(solve_cfm(masked, z, mask, mu, spks, cond, False, grid), ref, atol=1e-5, rtol=1e-5)
    assert torch.allclose(solve_cfm(masked, *padded_args)[:, :, :frames], ref, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@cuda
def test_graphed_hift_and_cfm_steps_match_their_eager_math(tiny_v2_model):
    """On the GPU: a captured HiFT shape and the captured CFM steps give what the same float16 modules give
    eagerly (the graphs add no error of their own), and the compiled blocks were really compiled when Triton is
    there (no silent eager fallback)."""
    from cosydesk.runtime.backends.cudagraph.cfm import solve_cfm
    from cosydesk.runtime.backends.cudagraph.compile import compile_enabled

    dev = torch.device("cuda")
    model = _graph_model(tiny_v2_model)
    g = torch.Generator(device="cuda").manual_seed(0)
    mel = torch.randn(1, 80, 60, device=dev, generator=g)
    graphed, _ = model.hift.inference_with_source(mel, zero_noise=True)
    eager, _ = model.hift.half.inference_with_source(mel, zero_noise=True)
    assert model.hift.eager_calls == 0
    assert torch.allclose(graphed, eager, atol=2e-3)

    frames = 100
    z, mu, cond = (torch.randn(1, 80, frames, device=dev, generator=g).half() for _ in range(3))
    spks, mask = torch.randn(1, 80, device=dev, generator=g).half(), torch.ones(1, 1, frames, device=dev).half()
    sampler = model.flow.decoder
    ours = sampler(z, mask, mu, spks, cond, streaming=True).float()
    ref = solve_cfm(sampler.sampler, z, mask, mu, spks, cond, True, sampler.grid).float()
    assert sampler.eager_calls == 0
    assert ((ours - ref).norm() / ref.norm()) < 1e-2
    if compile_enabled(dev):
        from torch._dynamo.utils import counters

        assert counters["stats"]["unique_graphs"] > 0


def test_capture_graphs_warms_up_then_captures_each_job(monkeypatch):
    """The one capture routine of the backend (LLM, CFM steps, HiFT), with torch.cuda faked so it runs on CI:
    every job is warmed up the asked number of rounds before any capture, each job gets its own graph, a
    failed capture is recorded (or raised without an errors list), progress follows the captured graphs."""
    import contextlib

    from cosydesk.runtime.backends.cudagraph import capture

    events = []
    capturing = {"on": False}

    class FakeStream:
        def wait_stream(self, other):
            events.append("wait")

    class FakeGraph:
        pass

    @contextlib.contextmanager
    def fake_graph(graph, pool=None):
        capturing["on"] = True
        try:
            yield
        finally:
            capturing["on"] = False

    monkeypatch.setattr(capture, "side_stream", lambda device: FakeStream())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", fake_graph)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append("sync"))

    def job(name, fail=False):
        def body():
            events.append(("capture" if capturing["on"] else "warm", name))
            if fail and capturing["on"]:
                raise RuntimeError("operation not permitted when stream is capturing")
        return body

    progress = []
    errors: list[str] = []
    jobs = [("a", job("a")), ("b", job("b", fail=True)), ("c", job("c"))]
    graphs = capture.capture_graphs(jobs, torch.device("cpu"), progress=lambda *a: progress.append(a), what="flow",
                                    warmup_rounds=2, errors=errors)
    calls = [e for e in events if isinstance(e, tuple)]
    assert calls[:6] == [("warm", n) for n in "abcabc"]
    assert calls[6:] == [("capture", n) for n in "abc"]
    assert set(graphs) == {"a", "c"} and all(isinstance(g, FakeGraph) for g in graphs.values())
    assert len(errors) == 1 and errors[0].startswith("b: RuntimeError") and "sync" in events
    assert progress == [(1, 3, "flow"), (3, 3, "flow")]
    with pytest.raises(RuntimeError):
        capture.capture_graphs(jobs, torch.device("cpu"))


def test_folding_weight_norms_keeps_the_vocoder_output_cpu(tiny_v2_model):
    """The graph backend folds HiFT's weight-norm parametrisations into plain weights: same waveform, and the
    original it was copied from (another backend in the same process) still works."""
    import copy

    from cosydesk.runtime.backends.cudagraph.hift import fold_weight_norms

    hift = tiny_v2_model.hift
    folded = copy.deepcopy(hift)
    inner = getattr(folded, "hift", folded)
    count = fold_weight_norms(inner)
    assert count > 10 and fold_weight_norms(inner) == 0
    assert not any("parametrizations" in name for name, _ in inner.named_parameters())
    mel = torch.randn(1, 80, 40, generator=torch.Generator().manual_seed(0))
    ref, _ = hift.inference_with_source(mel, zero_noise=True)
    ours, _ = folded.inference_with_source(mel, zero_noise=True)
    assert torch.allclose(ours, ref, atol=1e-6, rtol=1e-5)
    assert type(inner.conv_pre).__name__ != type(getattr(hift, "hift", hift).conv_pre).__name__


