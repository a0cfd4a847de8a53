"""Triton decode kernels (cudagraph backend) against the plain Qwen2 layer math.

Without a GPU the kernels run in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1): the same kernel
code, numpy underneath. On the H200 the GPU variant runs them compiled, in float16.
"""

from __future__ import annotations

import copy
import functools

import pytest
import torch

triton = pytest.importorskip("triton", reason="the decode kernels are Triton kernels")

from cosydesk.runtime.backends.cudagraph import decode_kernels as dk  # noqa: E402
from cosydesk.runtime.backends.cudagraph import select_kernel as sk  # noqa: E402
from cosydesk.runtime.backends.cudagraph.qwen import LayerWeights, _rms, decoder_layer  # noqa: E402
from tests.conftest import cuda, interpreted  # noqa: E402


def _random_layers(n, hidden, inner, heads, kv_heads, head_dim, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, s=0.08: (torch.randn(*shape, generator=g) * s).to(device=device, dtype=dtype)  # noqa: E731
    qkv_rows = (heads + 2 * kv_heads) * head_dim
    return [LayerWeights(ln1=1 + r(hidden, s=0.1), w_qkv=r(qkv_rows, hidden), b_qkv=r(qkv_rows, s=0.5),
                         w_o=r(hidden, heads * head_dim), ln2=1 + r(hidden, s=0.1), w_gate_up=r(2 * inner, hidden),
                         w_down=r(hidden, inner), eps=1e-6) for _ in range(n)]


def _rotary(max_len, head_dim, device):
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(max_len, dtype=torch.float32), inv)
    table = torch.cat([freqs, freqs], -1)
    return table.cos().to(device), table.sin().to(device)


def _reference_step(layers, norm, head_w, head_b, row, pos, k_cache, v_cache, cos, sin, heads, kv_heads,
                    gemv=False):
    """The plain layer (``decoder_layer``, SDPA over the masked cache) for one row at ``pos``; ``gemv``: its
    multiply + reduce form (float32 attention, the same rounding points as the kernels)."""
    max_len, head_dim = k_cache.shape[-2], k_cache.shape[-1]
    positions = torch.tensor([pos], device=row.device)
    mask = (torch.arange(max_len, device=row.device) <= pos).view(1, 1, 1, max_len)
    c, s = cos[pos].view(1, 1, 1, head_dim), sin[pos].view(1, 1, 1, head_dim)
    x = row.view(1, 1, -1)
    for i, w in enumerate(layers):
        x = decoder_layer(x, w.ln1, w.w_qkv, w.b_qkv, w.w_o, w.ln2, w.w_gate_up, w.w_down, w.eps, k_cache[i],
                          v_cache[i], c, s, positions, mask, heads, kv_heads, gemv=gemv)
    return torch.nn.functional.linear(_rms(x, norm, 1e-6), head_w, head_b)[0, 0].float()


def _check_against_reference(dtype, device, tol, sizes=(3, 80, 100, 6, 2, 16), max_len=40, pos=17,
                             config=None, gemv=False):
    n, hidden, inner, heads, kv_heads, head_dim = sizes
    layers = _random_layers(n, hidden, inner, heads, kv_heads, head_dim, dtype, device)
    g = torch.Generator().manual_seed(1)
    norm = (1 + torch.randn(hidden, generator=g) * 0.1).to(device, dtype)
    head_w = (torch.randn(50, hidden, generator=g) * 0.1).to(device, dtype)
    head_b = (torch.randn(50, generator=g) * 0.1).to(device, dtype)
    caches = torch.randn(2, n, 1, kv_heads, max_len, head_dim, generator=g).to(device, dtype)
    k_ref, v_ref = caches[0].clone(), caches[1].clone()
    cos, sin = _rotary(max_len, head_dim, device)
    row = (torch.randn(hidden, generator=g)).to(device, dtype)
    ref = _reference_step(layers, norm, head_w, head_b, row, pos, k_ref, v_ref, cos, sin, heads, kv_heads, gemv)

    decoder = dk.TritonDecoder(layers, norm, 1e-6, head_w, head_b, heads, kv_heads, head_dim, config)
    k_ours, v_ours = caches[0].clone(), caches[1].clone()
    logits = torch.zeros(50, device=device)
    decoder.x.copy_(row)
    decoder.step(k_ours, v_ours, cos, sin, torch.tensor([pos], device=device), logits)
    scale = float(ref.abs().max())
    assert float((logits - ref).abs().max()) <= tol * scale, (logits - ref).abs().max()
    # the new K/V landed at pos in every layer, nothing else in the cache changed
    assert torch.allclose(k_ours.float(), k_ref.float(), atol=tol, rtol=tol)
    assert torch.allclose(v_ours.float(), v_ref.float(), atol=tol, rtol=tol)
    untouched = torch.ones(max_len, dtype=torch.bool)
    untouched[pos] = False
    assert torch.equal(k_ours[..., untouched, :], caches[0][..., untouched, :])
    assert torch.equal(v_ours[..., untouched, :], caches[1][..., untouched, :])
    return decoder


@interpreted
def test_decode_step_matches_the_plain_layer_float32_cpu():
    """Odd sizes (hidden 80, ffn 100: masked tails), grouped heads (6 over 2), 3 layers, position 17 of 40."""
    _check_against_reference(torch.float32, torch.device("cpu"), 2e-5)


@interpreted
def test_decode_step_at_position_zero_block_edges_and_last_cpu():
    """Nothing cached yet, the first and last key of a block, the last cache slot; keys in blocks of 16."""
    cfg = dk.DecodeKernelConfig(block_l=16)
    for pos in (0, 15, 16, 31, 39):
        _check_against_reference(torch.float32, torch.device("cpu"), 2e-5, sizes=(1, 32, 64, 2, 1, 16), pos=pos,
                                 config=cfg)


@interpreted
def test_launch_shapes_do_not_change_the_result_cpu():
    """Other row blocks, reduction chunks, splits and key blocks: same numbers (masks and split ranges)."""
    cfg = dk.DecodeKernelConfig(qkv=dk.GemvConfig(4, 32), out=dk.GemvConfig(16, 64), gate_up=dk.GemvConfig(2, 16),
                                down=dk.GemvConfig(8, 32), logits=dk.GemvConfig(32, 128), split=2, block_l=8)
    _check_against_reference(torch.float32, torch.device("cpu"), 2e-5, config=cfg)


@interpreted
def test_float16_rounding_points_follow_the_plain_layer_cpu():
    """In float16 the kernels round where the layer's multiply + reduce form rounds (normed input, projections,
    residual sums): same numbers, so a dropped or extra rounding shows (~2e-3 off when one is removed)."""
    _check_against_reference(torch.float16, torch.device("cpu"), 1e-4, gemv=True)
    _check_against_reference(torch.float16, torch.device("cpu"), 2e-2)  # and near the SDPA layer


def test_unsupported_head_size_is_refused():
    assert not dk.supports(14, 2, 48) and not dk.supports(6, 4, 16) and dk.supports(14, 2, 64)
    layers = _random_layers(1, 48, 64, 2, 1, 24, torch.float32, "cpu")
    with pytest.raises(ValueError, match="power-of-two head size"):
        dk.TritonDecoder(layers, torch.ones(48), 1e-6, torch.ones(5, 48), None, 2, 1, 24)


def _tiny_lm(version="v2"):
    from cosydesk.synthetic.full_size import random_model

    return random_model(version, "cpu", torch.float32, seed=0, tiny=True).llm


@interpreted
@pytest.mark.parametrize("version", ["v2", pytest.param("v3", marks=pytest.mark.heavy)])  # v3: same kernels, ~40 s
def test_static_qwen_with_decode_kernels_matches_eager_cpu(version):
    """StaticQwenLM(decode_kernels=True): prefill (plain) then decode steps through the kernels give the
    reference module's logits (CosyVoice2's and CosyVoice3's speech LM); the decode-ahead loop yields what
    the plain-layer StaticQwenLM yields."""
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    lm = _tiny_lm(version)
    fast = StaticQwenLM(copy.deepcopy(lm), max_len=96, prefill_buckets=(48,), use_graphs=False, decode_kernels=True)
    plain = StaticQwenLM(copy.deepcopy(lm), max_len=96, prefill_buckets=(48,), use_graphs=False,
                         decode_kernels=False)
    assert fast.triton_decoder is not None and plain.triton_decoder is None
    assert fast.select_kernel is not None and plain.select_kernel is None  # ids: Triton selector vs torch form
    assert fast.select_embeds and not plain.select_embeds  # the Triton selector writes the next input row
    # the interpreter runs programs one by one: few, large row blocks for the 6,564-row head and one slice of ids
    # for the selector keep this quick (test_select_kernel covers many slices)
    fast.triton_decoder.config = dk.DecodeKernelConfig(logits=dk.GemvConfig(2048, 32))
    one_slice = sk.SelectScratch(6564, 25, "cpu", sk.SelectConfig(slice=8192))
    fast.select = functools.partial(fast.select.func, *fast.select.args, **{**fast.select.keywords, "scratch": one_slice})
    g = torch.Generator().manual_seed(3)
    text, prompt_text = torch.randint(1000, 20000, (1, 9), generator=g), torch.randint(1000, 20000, (1, 5), generator=g)
    prompt_speech = torch.randint(0, 6561, (1, 20), generator=g)
    ref, ref_state = lm.prefill(text, prompt_text, prompt_speech, None)
    _, state = fast.prefill(text, prompt_text, prompt_speech, None)
    for token in (5, 6000, 400):
        ref, ref_state = lm.decode_step(token, ref_state)
        ours, state = fast.decode_step(token, state)
        assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), token
    # a random LLM does not stop: the length limit (1 x 9 text tokens) ends both loops (kept short: each step runs
    # in the interpreter)
    a = list(fast.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True, max_len_ratio=1))
    b = list(plain.generate_speech_tokens(text, prompt_text, prompt_speech, None, greedy=True, max_len_ratio=1))
    assert a == b and len(a) > 0
    sampled = [list(m.generate_speech_tokens(text, prompt_text, prompt_speech, None, max_len_ratio=1,
                                             generator=torch.Generator().manual_seed(5))) for m in (fast, plain)]
    assert sampled[0] == sampled[1] and sampled[0] != a  # repetition-aware sampling, same draws


def test_kernel_config_is_validated():
    with pytest.raises(ValueError, match="powers of two"):
        dk.DecodeKernelConfig(split=6)
    with pytest.raises(ValueError, match="block_k"):
        dk.DecodeKernelConfig(down=dk.GemvConfig(4, 0))
    with pytest.raises(ValueError, match="block_n"):
        dk.DecodeKernelConfig(qkv=dk.GemvConfig(3, 0))


def test_static_qwen_falls_back_when_the_kernels_fail(monkeypatch):
    """A GPU / Triton that cannot compile a kernel: a warning at load and the compiled/plain layer, not a crash."""
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    def broken(*args, **kwargs):
        raise RuntimeError("no kernel for this GPU")

    monkeypatch.setattr(dk.TritonDecoder, "step", broken)
    with pytest.warns(RuntimeWarning, match="Triton decode kernels unavailable"):
        static = StaticQwenLM(_tiny_lm(), max_len=64, prefill_buckets=(48,), use_graphs=False, decode_kernels=True)
    assert static.triton_decoder is None and static.decode_layer is not None


def test_static_qwen_retries_without_pdl_when_pdl_launches_fail(monkeypatch):
    """A driver/Triton that cannot launch or capture PDL kernels: plain launches, with a warning."""
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    def step(self, *args, **kwargs):
        if self.config.pdl is not False:
            raise RuntimeError("launch_pdl not supported")

    monkeypatch.setattr(dk, "pdl_available", lambda device: True)
    monkeypatch.setattr(dk.TritonDecoder, "step", step)
    with pytest.warns(RuntimeWarning, match="programmatic dependent launch unavailable"):
        static = StaticQwenLM(_tiny_lm(), max_len=64, prefill_buckets=(48,), use_graphs=False, decode_kernels=True)
    assert static.triton_decoder is not None and static.triton_decoder.config.pdl is False


def test_static_qwen_falls_back_when_the_selector_kernel_fails(monkeypatch):
    from cosydesk.runtime.backends.cudagraph import select_kernel
    from cosydesk.runtime.backends.cudagraph.qwen import StaticQwenLM

    def broken(selector, logits, **kwargs):  # half-way through: the selector's state already touched
        selector.step.add_(3)
        selector.recent.fill_(7)
        raise RuntimeError("no kernel for this GPU")

    monkeypatch.setattr(select_kernel, "select_next", broken)
    monkeypatch.setattr(dk.TritonDecoder, "step", lambda *args, **kwargs: None)  # the decode kernels "work"
    with pytest.warns(RuntimeWarning, match="Triton token selector unavailable"):
        static = StaticQwenLM(_tiny_lm(), max_len=64, prefill_buckets=(48,), use_graphs=False, decode_kernels=True)
    assert static.triton_decoder is not None and static.select_kernel is None
    assert int(static.selector.step) == 0 and bool((static.selector.recent == -1).all())  # reset after the trial


@cuda
@pytest.mark.gpu
def test_decode_kernels_float16_on_the_gpu():
    """Compiled for the GPU (float16, Qwen2-0.5B's head layout: 7 query heads per key head), against the plain
    float16 layer, at several positions. The cache is filled with noise, so a head reading the new K/V slot
    before the group's writer stored it (a race the interpreter cannot show) would be far off."""
    for pos in (0, 1, 127, 128, 200, 511):
        _check_against_reference(torch.float16, torch.device("cuda"), 2e-2, sizes=(4, 896, 4864, 14, 2, 64),
                                 max_len=512, pos=pos)


@cuda
@pytest.mark.gpu
def test_programmatic_dependent_launch_changes_nothing_on_the_gpu():
    """With PDL each kernel starts before the previous one ended and waits inside: captured in a CUDA graph
    (as the backend runs it), the logits and cache must be bit-identical to the plain launches. A read or
    write placed before the wait would show here as a difference (the cache is noise, the row changes)."""
    if not dk.pdl_available(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs a Hopper GPU and a Triton with gdc_wait")
    n, hidden, inner, heads, kv_heads, head_dim = 4, 896, 4864, 14, 2, 64
    layers = _random_layers(n, hidden, inner, heads, kv_heads, head_dim, torch.float16, "cuda")
    g = torch.Generator().manual_seed(2)
    norm = (1 + torch.randn(hidden, generator=g) * 0.1).cuda().half()
    head_w = (torch.randn(6564, hidden, generator=g) * 0.1).cuda().half()
    caches = torch.randn(2, n, 1, kv_heads, 256, head_dim, generator=g).cuda().half()
    cos, sin = _rotary(256, head_dim, "cuda")
    rows = torch.randn(8, hidden, generator=g).cuda().half()
    outputs = []
    for pdl in (False, True):
        decoder = dk.TritonDecoder(layers, norm, 1e-6, head_w, None, heads, kv_heads, head_dim,
                                   dk.DecodeKernelConfig(pdl=pdl))
        k, v = caches[0].clone(), caches[1].clone()
        position, logits, row = torch.zeros(1, dtype=torch.long, device="cuda"), torch.zeros(6564, device="cuda"), \
            torch.zeros(hidden, device="cuda", dtype=torch.float16)

        def body():
            decoder.x.copy_(row)
            decoder.step(k, v, cos, sin, position, logits)

        body()  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        seen = []
        for i, pos in enumerate((0, 1, 2, 50, 51, 200, 3, 4)):
            row.copy_(rows[i])
            position.fill_(pos)
            graph.replay()
            seen.append(logits.clone())
        torch.cuda.synchronize()
        outputs.append((torch.stack(seen), k, v))
    for a, b in zip(outputs[0], outputs[1]):
        assert torch.equal(a, b)
    from cosydesk.runtime.backends.cudagraph.pdl import compiled_with_pdl

    kernels = (dk.rms_gemv_kernel, dk.attend_kernel, dk.gemv_residual_kernel, dk.gemv_split_kernel)
    assert all(compiled_with_pdl(k) for k in kernels)  # PDL really was compiled in and launched
