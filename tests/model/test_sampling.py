"""Repetition-aware sampling, the shared generation loop (length rules, stop ids) and the silent-token filter."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from cosydesk.model.config import Node, read_yaml
from cosydesk.model.sampling import (
    GreedySampler,
    RepetitionAwareSampler,
    filter_silent_tokens,
    generate_speech_tokens,
    greedy_tokens,
    nucleus_keep_mask,
    sample_nucleus,
    teacher_forced_logits,
)
from tests.support.paths import fixture_dir


def _logits_for(probs: list[float]) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float32).log()


# ---------------------------------------------------------------- nucleus


def test_nucleus_mask_includes_the_entry_that_crosses_top_p():
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    # mass before each entry: 0, 0.5, 0.75, 0.9 -> entries with mass_before < 0.8 are kept
    assert nucleus_keep_mask(probs, top_p=0.8, top_k=25).tolist() == [True, True, True, False]
    assert nucleus_keep_mask(probs, top_p=0.75, top_k=25).tolist() == [True, True, False, False]
    assert nucleus_keep_mask(probs, top_p=0.8, top_k=2).tolist() == [True, True, False, False]
    assert nucleus_keep_mask(probs, top_p=0.0, top_k=25).tolist() == [False, False, False, False]
    # a dominant first entry is always alone
    assert nucleus_keep_mask(torch.tensor([0.9, 0.05, 0.05]), 0.8, 25).tolist() == [True, False, False]


def test_sample_nucleus_stays_in_nucleus_with_renormalised_frequencies():
    probs = [0.4, 0.3, 0.2, 0.06, 0.04]  # nucleus for top_p 0.8: ids 0, 1, 2 (mass before id 3 is 0.9)
    scores = _logits_for(probs)
    gen = torch.Generator().manual_seed(1)
    draws = Counter(int(sample_nucleus(scores, 0.8, 25, gen)) for _ in range(3000))
    assert set(draws) == {0, 1, 2}
    for token, p in zip(range(3), [0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9]):
        assert abs(draws[token] / 3000 - p) < 0.04
    # top_k caps the nucleus whatever top_p says
    gen = torch.Generator().manual_seed(2)
    assert {int(sample_nucleus(scores, 1.0, 2, gen)) for _ in range(300)} == {0, 1}


def test_sample_nucleus_keeps_id_order_for_ties():
    # four equal probabilities: the stable sort keeps ids 0, 1 first, so top_k 2 may only give 0 or 1
    scores = torch.zeros(4)
    gen = torch.Generator().manual_seed(3)
    assert {int(sample_nucleus(scores, 1.0, 2, gen)) for _ in range(200)} == {0, 1}


# ---------------------------------------------------------------- repetition-aware sampling


def test_ras_keeps_the_nucleus_pick_without_repetition():
    sampler = RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    scores = _logits_for([0.97, 0.01, 0.01, 0.01])  # nucleus = {0}
    gen = torch.Generator().manual_seed(0)
    assert all(int(sampler(scores, [1, 2, 3], gen)) == 0 for _ in range(50))


def test_ras_falls_back_to_the_rest_of_the_distribution_on_repetition():
    sampler = RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)  # threshold 1 repeat
    scores = _logits_for([0.94, 0.03, 0.02, 0.01])
    gen = torch.Generator().manual_seed(0)
    draws = Counter(int(sampler(scores, [5, 0, 7], gen)) for _ in range(3000))
    assert 0 not in draws  # the repeated pick is banned
    assert set(draws) == {1, 2, 3}
    assert abs(draws[1] / 3000 - 0.5) < 0.05 and abs(draws[3] / 3000 - 1 / 6) < 0.04


def test_ras_repetition_window_and_threshold():
    scores = _logits_for([0.97, 0.01, 0.01, 0.01])
    gen = torch.Generator().manual_seed(0)
    twice = RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=4, tau_r=0.5)  # needs 2 repeats in the last 4
    assert int(twice(scores, [0, 9, 9, 9], gen)) == 0  # one repeat: kept
    assert int(twice(scores, [0, 9, 0, 9], gen)) != 0  # two repeats: fallback
    assert int(twice(scores, [0, 0, 9, 9, 9, 9], gen)) == 0  # repeats outside the window do not count
    assert twice.repeat_threshold == 2.0


def test_ras_is_deterministic_with_a_seeded_generator():
    sampler = RepetitionAwareSampler()
    scores = torch.randn(6564, generator=torch.Generator().manual_seed(5)) * 3
    history = [int(i) for i in scores.topk(3).indices]  # make fallbacks happen too

    def run(seed: int) -> list[int]:
        gen = torch.Generator().manual_seed(seed)
        return [int(sampler(scores, history, gen)) for _ in range(40)]

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_stable_top_k_on_tie_heavy_small_vocabularies():
    """(The host sampler's nucleus comes from it too.)"""
    from cosydesk.model.sampling import stable_top_k

    for trial in range(100):
        g = torch.Generator().manual_seed(trial)
        probs = torch.randint(0, 5, (300,), generator=g).float()  # many ties, also at the k-th place
        probs = probs / probs.sum()
        values, ids = stable_top_k(probs, 25)
        ref_values, ref_ids = probs.sort(descending=True, stable=True)
        assert torch.equal(values, ref_values[:25]) and torch.equal(ids, ref_ids[:25]), trial
    values, ids = stable_top_k(torch.tensor([0.5, 0.5]), 25)  # k above the vocabulary
    assert ids.tolist() == [0, 1]


def test_ras_host_and_device_forms_draw_the_same_distribution():
    """The host form draws the fallback only on a repeat; the device form draws both and selects. Same law."""
    sampler = RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    scores = _logits_for([0.5, 0.3, 0.1, 0.06, 0.04])
    for history in ([9, 9], [0, 9]):  # no repeat possible / a repeat of id 0 bans it
        counts = {}
        for form in (sampler.choose_on_host, sampler.choose_on_device):
            gen = torch.Generator().manual_seed(1)
            draws = Counter(int(form(scores, history, gen)) for _ in range(4000))
            counts[form.__name__] = draws
        host, device = counts["choose_on_host"], counts["choose_on_device"]
        assert set(host) == set(device)
        assert all(abs(host[i] - device[i]) / 4000 < 0.04 for i in host), (history, host, device)
        assert (0 in host) == (history == [9, 9])


def test_stable_top_k_equals_the_head_of_a_full_stable_sort():
    """The graph-capturable top-k (unique int64 keys) keeps the reference's tie order, also at the k-th place."""
    from cosydesk.model.sampling import stable_top_k

    for trial in range(100):
        g = torch.Generator().manual_seed(trial)
        if trial % 2:
            probs = torch.randint(0, 5, (300,), generator=g).float()  # many ties
        else:  # float16-rounded logits, as the GPU produces them
            probs = (torch.randn(6564, generator=g) * 3).half().float()
        probs = probs.softmax(0) if not trial % 2 else probs / probs.sum()
        values, ids = stable_top_k(probs, 25)
        ref_values, ref_ids = probs.sort(descending=True, stable=True)
        assert torch.equal(values, ref_values[:25]) and torch.equal(ids, ref_ids[:25]), trial
    assert stable_top_k(torch.tensor([0.25, 0.5, 0.25]), 25)[1].tolist() == [1, 0, 2]


def test_inverse_cdf_index_draws_by_weight_and_never_a_zero_weight():
    from cosydesk.model.sampling import inverse_cdf_index

    weights = torch.tensor([0.0, 0.5, 0.0, 0.25, 0.25, 0.0])
    picks = [int(inverse_cdf_index(weights, torch.tensor(u))) for u in (0.0, 0.49, 0.5, 0.74, 0.75, 0.9999999, 1.0)]
    assert picks == [1, 1, 3, 3, 4, 4, 4]  # u = 1.0 (rounding's worst case) still lands on a positive weight
    grid = (torch.arange(4000) + 0.5) / 4000
    counts = Counter(int(inverse_cdf_index(weights, u)) for u in grid)
    assert counts == Counter({1: 2000, 3: 1000, 4: 1000})


def test_ras_select_has_the_reference_law_on_a_grid_of_uniforms():
    """The static-shape RAS (what the cudagraph LLM runs on the device): with the nucleus uniform on an even grid
    the picks' frequencies are the renormalised nucleus; on a repeat, the fallback's are the rest renormalised."""
    from cosydesk.model.sampling import ras_select

    sampler = RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    scores = _logits_for([0.5, 0.3, 0.1, 0.06, 0.04])  # nucleus: 0, 1 (mass before 2 is 0.8)
    grid = (torch.arange(1000) + 0.5) / 1000

    def law(recent, which):
        counts = Counter()
        for u in grid:
            uniforms = torch.stack([u, u]) if which == "both" else torch.stack([u if which == 0 else grid[0], u])
            counts[int(ras_select(scores, torch.tensor(recent), uniforms, sampler.top_p, sampler.top_k,
                                  sampler.repeat_threshold))] += 1
        return counts

    assert law([-1] * 10, 0) == Counter({0: 625, 1: 375})  # 0.5 / 0.8 and 0.3 / 0.8
    # id 0 is the nucleus pick for the first uniform (grid[0]) and repeats in the window: fallback over ids 1..4
    fallback = law([0] + [-1] * 9, 1)
    assert fallback == Counter({1: 600, 2: 200, 3: 120, 4: 80})
    assert law([1] + [-1] * 9, 1) == Counter({0: 1000})  # the window holds id 1, not the pick 0: no fallback


def test_ras_from_the_yaml_sampling_node():
    node = read_yaml(fixture_dir("v2") / "model" / "cosyvoice2.yaml")["llm"]["sampling"]
    assert RepetitionAwareSampler.from_config(node) == RepetitionAwareSampler(top_p=0.8, top_k=25, win_size=10, tau_r=0.1)
    with pytest.raises(ValueError, match="top_k_sampling"):
        RepetitionAwareSampler.from_config(Node(kind="name", target="x.top_k_sampling", args={"top_k": 5}))


# ---------------------------------------------------------------- generation loop


class ScriptedLM:
    """Minimal LLM with the runtime API: vocabulary of 8, ids 5..7 stop, id 5 masked below min_len.

    ``scripts[i]`` are the logits after i fed tokens; by default id ``favourite`` wins everywhere.
    """

    stop_ids = frozenset({5, 6, 7})
    min_len_masked_ids = (5,)

    def __init__(self, favourite: int = 1, scripts: dict[int, list[float]] | None = None):
        self.favourite = favourite
        self.scripts = scripts or {}
        self.fed: list[int] = []
        self.prefill_args = None

    def _logits(self, step: int) -> torch.Tensor:
        if step in self.scripts:
            return torch.tensor(self.scripts[step])
        logits = torch.zeros(8)
        logits[self.favourite] = 1.0
        return logits

    def prefill(self, text, prompt_text, prompt_speech_token, embedding):
        self.prefill_args = (text, prompt_text, prompt_speech_token, embedding)
        return self._logits(0), 0

    def decode_step(self, token, state):
        self.fed.append(int(token))
        return self._logits(state + 1), state + 1


TEXT3 = torch.tensor([[10, 11, 12]])
NO_IDS = torch.zeros(1, 0, dtype=torch.long)


def test_max_len_is_ratio_times_target_text_only():
    lm = ScriptedLM()
    long_prompt = torch.arange(50).reshape(1, 50)
    tokens = list(generate_speech_tokens(lm, TEXT3, long_prompt, NO_IDS, None, GreedySampler()))
    assert tokens == [1] * 60  # 20 * 3, the prompt text does not count
    assert len(lm.fed) == 59  # no wasted step after the last token
    tokens = list(generate_speech_tokens(ScriptedLM(), TEXT3, NO_IDS, NO_IDS, None, GreedySampler(), max_len_ratio=2.5))
    assert len(tokens) == 7  # int(3 * 2.5)


def test_min_len_masks_only_the_listed_ids():
    lm = ScriptedLM(favourite=5)  # id 5 (masked) wins every raw argmax
    tokens = list(generate_speech_tokens(lm, TEXT3, NO_IDS, NO_IDS, None, GreedySampler()))
    assert len(tokens) == 6 and 5 not in tokens  # min_len = 2 * 3, then 5 is chosen and stops
    # an unmasked stop id ends generation before min_len
    lm = ScriptedLM(scripts={2: [0, 0, 0, 0, 0, 0, 9, 0]})
    assert list(generate_speech_tokens(lm, TEXT3, NO_IDS, NO_IDS, None, GreedySampler())) == [1, 1]
    # min_len_ratio 0: the masked id stops at once
    assert list(generate_speech_tokens(ScriptedLM(favourite=5), TEXT3, NO_IDS, NO_IDS, None, GreedySampler(), min_len_ratio=0)) == []


def test_tokens_are_yielded_before_the_next_step_runs():
    lm = ScriptedLM()
    tokens = generate_speech_tokens(lm, TEXT3, NO_IDS, NO_IDS, "spk", GreedySampler())
    assert next(tokens) == 1 and lm.fed == []
    assert next(tokens) == 1 and lm.fed == [1]
    assert lm.prefill_args[3] == "spk"


def test_sampler_sees_history_and_masked_scores():
    seen = []

    def recording_sampler(scores, decoded, generator=None):
        seen.append((scores.clone(), list(decoded), generator))
        return scores.argmax()

    gen = torch.Generator()
    list(generate_speech_tokens(ScriptedLM(favourite=2), torch.tensor([[1]]), NO_IDS, NO_IDS, None, recording_sampler, generator=gen))
    assert [d for _, d, _ in seen[:3]] == [[], [2], [2, 2]]
    assert seen[0][0][5] == float("-inf") and seen[1][0][5] == float("-inf") and seen[2][0][5] == 0
    assert all(g is gen for _, _, g in seen)


def test_generation_with_ras_is_reproducible():
    lm_scores = {i: torch.randn(8, generator=torch.Generator().manual_seed(i)).tolist() for i in range(60)}

    def run(seed: int) -> list[int]:
        lm = ScriptedLM(scripts=lm_scores)
        lm.stop_ids = frozenset()  # never stop: compare whole runs
        gen = torch.Generator().manual_seed(seed)
        return list(generate_speech_tokens(lm, TEXT3, NO_IDS, NO_IDS, None, RepetitionAwareSampler(), generator=gen))

    assert run(3) == run(3) and len(run(3)) == 60


def test_parity_helpers_on_a_scripted_lm():
    lm = ScriptedLM(scripts={1: [0, 0, 0, 4, 0, 0, 0, 0]})
    assert greedy_tokens(lm, TEXT3, NO_IDS, NO_IDS, None, 4) == [1, 3, 1, 1]
    lm = ScriptedLM(scripts={1: [0, 0, 0, 4, 0, 0, 0, 0]})
    logits = teacher_forced_logits(lm, TEXT3, NO_IDS, NO_IDS, None, [6, 2, 7])
    assert logits.shape == (3, 8) and lm.fed == [6, 2]  # the last forced token is never fed
    assert int(logits[1].argmax()) == 3


# ---------------------------------------------------------------- silent-token filter


def test_silent_filter_drops_runs_longer_than_max_run():
    silent = {1, 2}
    seq = [9, 1, 2, 1, 1, 2, 1, 2, 8, 1, 1]
    assert list(filter_silent_tokens(seq, silent, max_run=5)) == [9, 1, 2, 1, 1, 2, 8, 1, 1]
    assert list(filter_silent_tokens([1, 1, 1, 3, 1], silent, max_run=1)) == [1, 3, 1]
    assert list(filter_silent_tokens(iter([4, 5]), silent)) == [4, 5]
