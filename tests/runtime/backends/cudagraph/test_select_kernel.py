"""The Triton token selector (slice kernels + merge) against ``DeviceTokenSelector.body`` (the torch form), step
by step.

Without a GPU the kernel runs in Triton's CPU interpreter (conftest sets TRITON_INTERPRET=1); on the H200 the GPU
test runs it compiled. Both forms start from the same state and must leave the same token, chosen id, window
and step after every call.
"""

from __future__ import annotations

import copy

import pytest
import torch

pytest.importorskip("triton", reason="the selector kernel is a Triton kernel")

from cosydesk.model.sampling import RepetitionAwareSampler  # noqa: E402
from cosydesk.runtime.backends.cudagraph import select_kernel as sk  # noqa: E402
from cosydesk.runtime.backends.cudagraph.select import DeviceTokenSelector  # noqa: E402
from tests.conftest import cuda, interpreted  # noqa: E402


def _selector(vocab, device, sampling=None, max_steps=64):
    token = torch.zeros(1, dtype=torch.long, device=device)
    return DeviceTokenSelector(token, vocab, max_steps, [vocab - 1, vocab - 2], sampling)


def _logits(vocab, g, kind):
    x = torch.randn(vocab, generator=g) * 3
    if kind == "ties":  # float16-rounded, many equal values at the top
        x = x.half().float()
        x[torch.randint(0, vocab, (30,), generator=g)] = x.max()
    elif kind == "peaked":  # one id far ahead: the pick repeats, the fallback fires
        x[7] = 40.0
    elif kind == "flat":  # the nucleus reaches top_k
        x = torch.randn(vocab, generator=g) * 0.01
    return x


def _state(s):
    return [t.clone() for t in (s.token, s.chosen, s.recent, s.step)]


def _run_both(vocab, device, kinds, steps=12, min_len=3, greedy=False, forced=None, sampling=None, seed=0,
              select=sk.select_next):
    g = torch.Generator().manual_seed(seed)
    ref = _selector(vocab, device, sampling)
    ref.start(min_len, greedy, torch.rand(steps, 2, generator=g), forced)
    ours = copy.deepcopy(ref)
    fallbacks = 0
    for i in range(steps):
        logits = _logits(vocab, g, kinds[i % len(kinds)]).to(device)
        ref.body(logits)
        select(ours, logits)
        for a, b, name in zip(_state(ref), _state(ours), ("token", "chosen", "recent", "step")):
            assert torch.equal(a.cpu(), b.cpu()), f"step {i}: {name} {a.tolist()} != {b.tolist()}"
        fallbacks += int(ref.chosen.item()) != 7 and kinds[i % len(kinds)] == "peaked"
    return ref, fallbacks


@interpreted
@pytest.mark.parametrize("vocab", [300, 6564])
def test_same_ids_as_the_torch_selector_cpu(vocab):
    _, fallbacks = _run_both(vocab, "cpu", ["random", "ties", "peaked", "flat", "peaked", "peaked"], steps=18)
    assert fallbacks >= 2  # the repetition fallback really ran (id 7 banned once it repeats)


@interpreted
def test_min_length_mask_greedy_and_forced_cpu():
    ref, _ = _run_both(300, "cpu", ["random"], steps=6, min_len=6, greedy=True)
    assert ref.step.item() == 6
    _run_both(300, "cpu", ["random", "ties"], steps=6, forced=[5, 9, 11, 2, 0, 299])


@interpreted
def test_masked_ids_win_once_min_length_is_reached_cpu():
    vocab = 300
    g = torch.Generator().manual_seed(1)
    s = _selector(vocab, "cpu")
    s.start(2, True, torch.rand(4, 2, generator=g))
    logits = torch.zeros(vocab)
    logits[vocab - 1] = 10.0  # a masked id (eos-like) with the top score
    ids = []
    for _ in range(4):
        sk.select_next(s, logits)
        ids.append(int(s.chosen))
    assert ids == [0, 0, vocab - 1, vocab - 1]  # greedy on zeros: the lowest id while masked


@interpreted
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("greedy", [False, True])
def test_non_finite_logits_report_minus_one_and_keep_a_valid_token_cpu(bad, greedy):
    s = _selector(300, "cpu")
    s.start(0, greedy, torch.rand(2, 2))
    s.token.fill_(12345)  # must be overwritten with a valid id
    logits = torch.randn(300)
    logits[3] = bad
    sk.select_next(s, logits)
    assert int(s.chosen) == -1 and 0 <= int(s.token) < 300


@interpreted
def test_steps_past_the_last_uniform_reuse_it_like_the_torch_form_cpu():
    """A dropped decode-ahead step may run past max_steps: both forms clamp the uniform / forced index."""
    g = torch.Generator().manual_seed(4)
    ref = _selector(300, "cpu", max_steps=4)
    ref.start(0, False, torch.rand(4, 2, generator=g), forced=None)
    ours = copy.deepcopy(ref)
    for i in range(9):
        logits = _logits(300, g, "random" if i % 2 else "flat")
        ref.body(logits)
        sk.select_next(ours, logits)
        assert [t.tolist() for t in _state(ref)] == [t.tolist() for t in _state(ours)], i
    forced = _selector(300, "cpu", max_steps=4)
    forced.start(0, False, torch.rand(4, 2, generator=g), forced=[5, 6, 7, 8])
    ids = []
    for _ in range(6):
        sk.select_next(forced, torch.randn(300))
        ids.append(int(forced.token))
    assert ids == [5, 6, 7, 8, 8, 8]


@interpreted
def test_other_sampling_settings_cpu():
    sampling = RepetitionAwareSampler(top_p=0.5, top_k=7, win_size=3, tau_r=0.5)
    _run_both(300, "cpu", ["random", "peaked", "ties", "peaked"], sampling=sampling, steps=10)


@interpreted
def test_many_small_slices_give_the_same_ids_cpu():
    """Slices of 32 ids: the merge sees 10 slices' candidates, tied maxima spread over several of them."""
    sampling = RepetitionAwareSampler()
    scratch = sk.SelectScratch(300, sampling.top_k, "cpu", sk.SelectConfig(slice=32))
    assert scratch.slices == 10
    _, fallbacks = _run_both(300, "cpu", ["ties", "random", "peaked", "flat", "peaked", "peaked"], steps=12,
                             select=lambda s, logits: sk.select_next(s, logits, scratch))
    assert fallbacks >= 1
    _run_both(300, "cpu", ["ties"], steps=4, greedy=True, select=lambda s, logits: sk.select_next(s, logits, scratch))


@interpreted
def test_the_merge_writes_the_chosen_ids_embedding_and_advances_the_position_cpu():
    vocab, hidden = 300, 24
    g = torch.Generator().manual_seed(4)
    table = torch.randn(vocab, hidden, generator=g).half()
    x, position = torch.zeros(hidden, dtype=torch.half), torch.tensor([41])
    embed = sk.Embed(table, x, position)
    s = _selector(vocab, "cpu")
    s.start(0, False, torch.rand(5, 2, generator=g))
    for step in range(5):
        sk.select_next(s, _logits(vocab, g, "random"), embed=embed)
        assert torch.equal(x, table[int(s.token)]) and int(position) == 42 + step


def test_supports():
    assert sk.supports(6564, 25) and not sk.supports(20, 25) and not sk.supports(100_000, 25)
    assert not sk.supports(6564, 256)  # K_BLOCK x K_BLOCK registers: large top_k uses the torch form
    assert not sk.supports(6564, 25, sk.SelectConfig(slice=16))  # top-k within one slice


@cuda
@pytest.mark.gpu
def test_same_ids_as_the_torch_selector_gpu():
    _, fallbacks = _run_both(6564, "cuda", ["random", "ties", "peaked", "flat", "peaked", "peaked"], steps=60)
    assert fallbacks >= 2
    # greedy over tied maxima: the lowest id, as torch.argmax (the interpreter cannot show the tie rule)
    _run_both(6564, "cuda", ["ties"], steps=8, greedy=True)
    s = _selector(6564, "cuda")
    s.start(0, True, torch.rand(1, 2))
    logits = torch.zeros(6564, device="cuda")
    logits[[4000, 17, 900]] = 5.0
    sk.select_next(s, logits)
    assert int(s.token) == 17
