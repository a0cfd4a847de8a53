"""v1's static-cache LM (``cudagraph.transformer_lm``) against the official fixture and the module it replaces."""

from __future__ import annotations

import copy

import pytest
import torch

from cosydesk.model.sampling import GreedySampler, generate_speech_tokens, teacher_forced_logits
from cosydesk.runtime.backends.cudagraph.transformer_lm import (StaticTransformerLM, rel_pos_decode_layer, supports)
from tests.conftest import assert_close, cuda, official_v1_llm, v1_llm_case


@pytest.fixture(scope="module")
def lm():
    return official_v1_llm()


_case = v1_llm_case


def _forced_logits(static, args, forced) -> torch.Tensor:
    """``teacher_forced_logits`` for an LM whose logits live in static buffers (each row copied out)."""
    with torch.inference_mode():
        logits, state = static.prefill(*args)
        rows = [logits.clone()]
        for token in [int(t) for t in forced][:-1]:
            logits, state = static.decode_step(token, state)
            rows.append(logits.clone())
    return torch.stack(rows)


def _static(lm, max_len=160, **kwargs) -> StaticTransformerLM:
    return StaticTransformerLM(copy.deepcopy(lm), max_len=max_len, use_graphs=False, **kwargs)


@pytest.mark.parametrize("n_text, n_prompt_text, n_speech, speaker, bucket", [
    (12, 5, 20, True, 64),   # the bench's zero-shot shape
    (12, 0, 0, True, 64),    # SFT: no prompt
    (30, 10, 22, False, 64),  # no speaker vector: 64 positions exactly
    (30, 10, 23, False, 96),  # one more: the next bucket
    (40, 20, 100, True, 192),
])
def test_padded_prefill_equals_the_module_prefill(lm, n_text, n_prompt_text, n_speech, speaker, bucket):
    """The prefill padded to its bucket (the graph body, run eagerly here) gives the module's logits and keys /
    values for every real position, whatever the split between text and prompt, and clears the rows after
    them - also after a longer prompt left its rows behind."""
    g = torch.Generator().manual_seed(n_text + n_speech)
    args = (torch.randint(0, 1000, (1, n_text), generator=g), torch.randint(0, 1000, (1, n_prompt_text), generator=g),
            torch.randint(0, 4096, (1, n_speech), generator=g),
            torch.randn(1, 192, generator=g) if speaker else torch.zeros(0))
    static = _static(lm, max_len=256)
    with torch.inference_mode():
        static.prefill(torch.randint(0, 1000, (1, 80), generator=g), args[1], torch.randint(0, 4096, (1, 150)),
                       torch.randn(1, 192))  # leaves rows up to 233 behind
        logits, state = static.prefill(*args)
        ref_logits, ref_state = lm.prefill(*args)
    length = 2 + int(speaker) + n_text + n_prompt_text + n_speech
    assert state.length == ref_state.cache.offset == length
    assert min(b for b in static.padded_prefill.buckets if b >= length) == bucket
    assert static.padded_prefill.eager_calls == 0
    assert_close(logits, ref_logits, 1e-5, "padded prefill logits")
    for i, layer in enumerate(ref_state.cache.layers):
        assert_close(static.k_cache[i, :, :length], layer.keys[0, :, :length], 1e-5, f"layer {i} keys")
        assert_close(static.v_cache[i, :, :length], layer.values[0, :, :length], 1e-5, f"layer {i} values")
    assert not static.k_cache[:, :, length:].any() and not static.v_cache[:, :, length:].any()


@pytest.mark.parametrize("case", ["zs", "sft"])
def test_static_lm_reproduces_the_official_logits_and_greedy_tokens(lm, golden_v1, case):
    """Teacher-forced logits of the official fixture (prefill + every decode step through the static cache with
    the looked-up relative positions), and the official greedy run through the decode-ahead loop."""
    static = _static(lm)
    ours = _forced_logits(static, _case(golden_v1, case), golden_v1[f"llm_{case}_tf_tokens"])
    assert_close(ours, golden_v1[f"llm_{case}_tf_logits"], 1e-4, f"{case} static teacher-forced logits")
    ref = golden_v1[f"llm_{case}_greedy_tokens"].tolist()
    got = []
    for token in static.generate_speech_tokens(*_case(golden_v1, case), greedy=True):
        got.append(token)
        if len(got) == len(ref):
            break
    assert got == ref


def test_decode_ahead_greedy_equals_the_shared_loop_and_stops_at_eos(lm, golden_v1):
    """Same ids as the shared host loop over the same object, to the end (eos or max length), also when eos
    is made to win as soon as the min-length rule allows it."""
    args = _case(golden_v1, "sft")
    short = (args[0][:, :4],) + args[1:]
    static = _static(lm)
    ref = list(generate_speech_tokens(static, *short, GreedySampler()))
    assert list(static.generate_speech_tokens(*short, greedy=True)) == ref
    boosted = copy.deepcopy(lm)
    with torch.no_grad():
        boosted.llm_decoder.bias[lm.eos_id] += 1e4
    static = _static(boosted)
    tokens = list(static.generate_speech_tokens(*short, greedy=True))
    assert len(tokens) == 2 * 4 and lm.eos_id not in tokens


def test_positions_past_the_first_table_and_a_reused_cache(lm, golden_v1):
    """Two sentences in a row on one object (the second prefill overwrites the first's keys; stale ones past the
    prompt stay masked) give the logits of a fresh module, at positions beyond the module's first 256-row table,
    through three attention lengths (the step attends over the first 64, 128 or all 320 cache rows)."""
    static = _static(lm, max_len=320, attention_buckets=(64, 128))
    assert static.attention_lengths == [64, 128, 320]
    assert static._decode_job(63)[0] == "decode64" and static._decode_job(64)[0] == "decode128"
    args = _case(golden_v1, "zs")
    forced = [(7 * i + 3) % 4096 for i in range(260)]
    _forced_logits(static, _case(golden_v1, "sft"), forced[:40])  # leaves keys up to ~90 behind
    ours = _forced_logits(static, args, forced)
    ref = teacher_forced_logits(lm, *args, forced)
    assert ours.shape[0] == 260
    assert_close(ours, ref, 1e-4, "static vs module over 260 steps")


def test_gemv_form_matches_the_matmul_form():
    """The compiled form's multiply + reduce products equal the plain matmuls (float32, random layer)."""
    torch.manual_seed(0)
    width, heads, length, hidden = 32, 4, 24, 64
    d_k = width // heads

    def r(*shape):
        return torch.randn(*shape) * 0.3

    weights = (1 + r(width), r(width), r(3 * width, width), r(3 * width), r(width, width), r(width), r(heads, d_k),
               r(heads, d_k), r(heads, length, d_k), 1 + r(width), r(width), r(hidden, width), r(hidden),
               r(width, hidden), r(width))
    position = torch.tensor([9])
    keys = torch.arange(length)
    relative, visible = (position - keys).clamp(min=0), keys <= position
    outs = []
    for gemv in (False, True):
        k_cache, v_cache = torch.zeros(heads, length, d_k), torch.zeros(heads, length, d_k)
        k_cache[:, :9], v_cache[:, :9] = 1.0, -2.0  # earlier keys
        k_cache[:, 10:] = 50.0  # junk past the position must not count
        x = rel_pos_decode_layer(torch.ones(1, width), *weights, k_cache, v_cache, position, relative, visible,
                                 heads, "relu", 1e-12, 1e-12, gemv=gemv)
        outs.append((x, k_cache.clone()))
    assert torch.allclose(outs[0][0], outs[1][0], atol=1e-5, rtol=1e-5)
    assert torch.allclose(outs[0][1], outs[1][1], atol=1e-5, rtol=1e-5)  # the new key, at position 9 only


def test_compiled_layer_serves_every_layer_once(lm, golden_v1):
    """Through torch.compile (aot_eager on CI): the same logits, and one compiled entry for all layers (plain
    tensors in, no per-layer recompiles), plus one for the id selector."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    static = _static(lm, compile_backend="aot_eager")
    args, forced = _case(golden_v1, "zs"), golden_v1["llm_zs_tf_tokens"]
    ours = _forced_logits(static, args, forced)
    assert_close(ours, golden_v1["llm_zs_tf_logits"], 1e-4, "compiled static logits")
    assert len(list(static.generate_speech_tokens(*args, forced=[1, 2, 3]))) == 3
    assert counters["stats"]["unique_graphs"] == 2
    torch._dynamo.reset()


def test_unsupported_bodies_are_refused(lm):
    post_norm = copy.deepcopy(lm)
    post_norm.llm.normalize_before = False
    assert "post-norm" in supports(post_norm)
    with pytest.raises(ValueError, match="post-norm"):
        StaticTransformerLM(post_norm, use_graphs=False)
    assert supports(lm) is None


@cuda
@pytest.mark.gpu
def test_graph_backend_v1_llm_is_static_and_matches_the_module_on_gpu(tmp_path):
    """build_graph_model gives v1 the static LM with its decode step captured; float16 logits over 40 forced
    steps stay close to the float16 module's, and the greedy decode-ahead ids equal the module's greedy ids."""
    from cosydesk.runtime.backends import accelerate
    from cosydesk.synthetic.full_size import random_model

    cpu = random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True)
    dev = torch.device("cuda")
    module = copy.deepcopy(cpu.llm).to(dev, torch.float16)
    import dataclasses

    base = dataclasses.replace(cpu, llm=copy.deepcopy(cpu.llm).to(dev, torch.float16),
                               flow=copy.deepcopy(cpu.flow).to(dev, torch.float16),
                               hift=copy.deepcopy(cpu.hift).to(dev, torch.float16), device=dev, dtype=torch.float16)
    graph = accelerate(base, "cudagraph")
    assert isinstance(graph.llm, StaticTransformerLM)
    prefills = {f"prefill{b}" for b in graph.llm.padded_prefill.buckets}
    assert set(graph.llm.graphs) == {f"decode{n}" for n in graph.llm.attention_lengths} | {"select_prefill"} | prefills
    g = torch.Generator().manual_seed(0)
    args = (torch.randint(0, 1000, (1, 12), generator=g).to(dev), torch.randint(0, 1000, (1, 5), generator=g).to(dev),
            torch.randint(0, 4096, (1, 20), generator=g).to(dev), torch.randn(1, 192, generator=g).to(dev).half())
    forced = torch.randint(0, 4096, (40,), generator=g).tolist()
    ours = _forced_logits(graph.llm, args, forced)
    ref = teacher_forced_logits(module, *args, forced)
    err = (ours - ref).abs().max() / ref.abs().max()
    assert torch.isfinite(ours).all() and err < 1e-2, err
    # the graph replayed ahead of the host (ids chosen on the device) = the host loop over the same graph
    host_ids = list(generate_speech_tokens(graph.llm, *args, GreedySampler()))
    assert list(graph.llm.generate_speech_tokens(*args, greedy=True)) == host_ids and len(host_ids) >= 24
    # every prefill above replayed its bucket's graph; another one, with a prompt of another bucket, allocates nothing
    assert graph.llm.padded_prefill.eager_calls == 0
    longer = (args[0], args[1], torch.randint(0, 4096, (1, 90), generator=g).to(dev), args[3])
    torch.cuda.synchronize()
    reserved = torch.cuda.memory_reserved()
    logits, state = graph.llm.prefill(*longer)
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() == reserved and graph.llm.padded_prefill.eager_calls == 0
    ref_logits, _ = module.prefill(*longer)
    assert (logits - ref_logits).abs().max() / ref_logits.abs().max() < 1e-2 and state.length == 2 + 1 + 17 + 90
    # the flow encoder replays a token bucket's graph: the float16 module's output, nothing allocated
    from cosydesk.runtime.backends.cudagraph.encoder import GraphedFullAttentionEncoder

    encoder = graph.flow.encoder
    assert isinstance(encoder, GraphedFullAttentionEncoder) and encoder.graphs
    with torch.inference_mode():
        tokens = graph.flow.embed_tokens(args[2][:, :7], torch.randint(0, 4096, (1, 50), generator=g).to(dev))
        lengths = torch.tensor([57], dtype=torch.int32, device=dev)
        ours, _ = encoder(tokens, lengths)  # first call: its pad mask's few eager kernels warm up
        torch.cuda.synchronize()
        reserved = torch.cuda.memory_reserved()
        ours, _ = encoder(tokens, lengths)
        torch.cuda.synchronize()
        assert torch.cuda.memory_reserved() == reserved and encoder.eager_calls == 0
        ref, _ = encoder.encoder(tokens, lengths)  # the same float16 module, eagerly
    assert torch.isfinite(ours).all() and (ours - ref).abs().max() / ref.abs().max() < 1e-2


def test_the_default_cache_holds_a_30_s_prompt(lm, golden_v1):
    """A zero-shot prompt of MAX_PROMPT_SECONDS (50 Hz v1 tokens) with a long transcript and sentence fits the
    default cache (a 512-position cache refused it): prefill and decoding in its last attention bucket give the
    module's logits."""
    from cosydesk.frontend.limits import MAX_PROMPT_SECONDS
    from cosydesk.runtime.backends.cudagraph.model import llm_cache_positions

    static = _static(lm, max_len=llm_cache_positions("v1"))
    g = torch.Generator().manual_seed(1)
    prompt_speech = torch.randint(0, 4096, (1, int(MAX_PROMPT_SECONDS * 50)), generator=g)
    args = (torch.randint(0, 1000, (1, 80), generator=g), torch.randint(0, 1000, (1, 170), generator=g),
            prompt_speech, torch.from_numpy(golden_v1["spk_zeroshot_embedding"]))
    forced = torch.randint(0, 4096, (6,), generator=g).tolist()
    ours = _forced_logits(static, args, forced)
    assert static.padded_prefill.eager_calls == 1  # longer than every prefill bucket: the module's own prefill
    assert static._decode_job(1760)[0] == "decode2048"  # the steps ran past the 1024-row bucket
    assert_close(ours, teacher_forced_logits(lm, *args, forced), 1e-4, "30 s prompt")


def test_float16_steps_equal_the_module_bit_for_bit(lm, golden_v1):
    """In float16 (CPU) the static step rounds where the module rounds: identical logits, step after step."""
    half = copy.deepcopy(lm).half()
    static = _static(half)
    args = _case(golden_v1, "zs")
    args = args[:3] + (args[3].half(),)
    forced = [(13 * i + 5) % 4096 for i in range(40)]
    ours = _forced_logits(static, args, forced)
    assert torch.equal(ours, teacher_forced_logits(half, *args, forced))


@pytest.mark.parametrize("activation", [torch.nn.SiLU, torch.nn.GELU])
def test_other_activations_key_bias_and_norm_eps_follow_the_module(lm, golden_v1, activation):
    """Layouts the released v1 does not use but the yaml allows: swish/gelu feed-forward, a bias-free key
    projection, other LayerNorm eps per norm."""
    variant = copy.deepcopy(lm)
    shared = activation()
    for layer in variant.llm.encoders:
        layer.feed_forward.activation = shared
        layer.self_attn.linear_k.bias = None
        layer.norm1.eps, layer.norm2.eps = 1e-2, 3e-1
    static = _static(variant)
    args, forced = _case(golden_v1, "sft"), golden_v1["llm_sft_tf_tokens"]
    assert_close(_forced_logits(static, args, forced), teacher_forced_logits(variant, *args, forced), 1e-4,
                 f"{activation.__name__} variant")


def test_a_non_finite_cache_row_left_by_an_earlier_request_is_not_seen(lm, golden_v1):
    """0 * NaN is NaN: rows past the prompt that hold NaN/inf from an earlier request (an fp16 overflow) are
    cleared by the next prefill, so the next sentence gets the module's logits."""
    static = _static(lm)
    args, forced = _case(golden_v1, "sft"), golden_v1["llm_sft_tf_tokens"]
    _forced_logits(static, _case(golden_v1, "zs"), golden_v1["llm_zs_tf_tokens"])
    static.v_cache[:, :, 60:] = float("nan")
    static.k_cache[:, :, 90:] = float("inf")
    ours = _forced_logits(static, args, forced)
    assert torch.isfinite(ours).all()
    assert_close(ours, teacher_forced_logits(lm, *args, forced), 1e-4, "after a poisoned cache")


def test_too_long_requests_get_a_clear_error(lm, golden_v1):
    from cosydesk.runtime.errors import TooLongError

    static = _static(lm, max_len=41)
    with pytest.raises(TooLongError, match="voice prompt and the sentence take 41 positions"):
        _forced_logits(static, _case(golden_v1, "zs"), list(range(10)))
    static = _static(lm, max_len=60)
    with pytest.raises(TooLongError, match="ran past the 60 positions"):
        list(static.generate_speech_tokens(*_case(golden_v1, "zs"), forced=list(range(40))))


def test_static_llm_picks_the_static_lm_or_keeps_an_unsupported_module(tmp_path):
    """``static_llm``: v1 gets StaticTransformerLM sized by llm_cache_positions; a layout it cannot decode keeps
    the module (uncaptured), with a warning that says why."""
    import dataclasses

    from cosydesk.runtime.backends.cudagraph.model import llm_cache_positions, static_llm
    from cosydesk.synthetic.full_size import random_model

    model = random_model("v1", "cpu", torch.float32, seed=0, workdir=tmp_path, tiny=True)
    llm = static_llm(model)
    assert isinstance(llm, StaticTransformerLM) and llm.max_len == llm_cache_positions("v1") == 3328
    assert not llm.graphs  # nothing is captured off CUDA
    post_norm = copy.deepcopy(model.llm)
    post_norm.llm.normalize_before = False
    with pytest.warns(RuntimeWarning, match="uncaptured .*post-norm"):
        assert static_llm(dataclasses.replace(model, llm=post_norm)) is post_norm
