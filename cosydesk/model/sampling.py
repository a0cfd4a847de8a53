"""Speech-token sampling and the autoregressive generation loop shared by every LLM version (v1, v2, v3).

What lives here:
- `RepetitionAwareSampler`: the official repetition-aware sampling (VALL-E 2 style). A token is drawn from the
  nucleus (the most probable ids, at most ``top_k`` of them, taken in descending probability while the
  probability mass *before* an id is still below ``top_p``). If that pick already occurs at least
  ``win_size * tau_r`` times among the last ``win_size`` decoded tokens, it is banned and a token is drawn
  from the whole remaining distribution instead.
- `GreedySampler`: argmax, used by the parity checks.
- `generate_speech_tokens`: prefill, then one step per token with the official min/max length rules; tokens
  are yielded one by one as soon as they are chosen.
- `filter_silent_tokens`: the v3 runtime rule that drops long runs of silent tokens.
- `greedy_tokens` / `teacher_forced_logits`: parity helpers that any LLM with the runtime API can delegate to.

An LLM usable here offers ``prefill(text, prompt_text, prompt_speech_token, embedding) -> (logits[V], state)``,
``decode_step(token, state) -> (logits[V], state)`` and the attributes ``stop_ids`` and ``min_len_masked_ids``.

This module must not know any model internals, and samplers never loop over the vocabulary in Python:
one host sync (the chosen id) per generated token.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

import torch

from cosydesk.model.config import Node


class SpeechTokenSampler(Protocol):
    def __call__(self, scores: torch.Tensor, decoded: Sequence[int], generator: torch.Generator | None = None) -> torch.Tensor:
        """Pick one id from the 1-D ``scores`` (logits or log-probs); returns a 0-d long tensor on their device."""
        ...


class GreedySampler:
    """Always the most probable id (ties: the lowest id, like torch.argmax)."""

    def __call__(self, scores: torch.Tensor, decoded: Sequence[int], generator: torch.Generator | None = None) -> torch.Tensor:
        return scores.argmax()


def nucleus_keep_mask(sorted_probs: torch.Tensor, top_p: float, top_k: int) -> torch.Tensor:
    """Which of the descending ``sorted_probs`` enter the nucleus.

    An entry is kept while fewer than ``top_k`` are kept and the mass of the entries before it is still below
    ``top_p`` - so the first entry is always kept and the entry that crosses ``top_p`` is included.
    """
    # exclusive running sum, accumulated in the same order as the reference's running total
    mass_before = torch.cat([sorted_probs.new_zeros(1), torch.cumsum(sorted_probs, dim=0)[:-1]])
    rank = torch.arange(sorted_probs.shape[0], device=sorted_probs.device)
    return (mass_before < top_p) & (rank < top_k)


def stable_top_k(probs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, ids) of the first ``k`` entries of ``probs.sort(descending=True, stable=True)`` (ties: lower id
    first) without sorting the whole vocabulary, with static shapes and no host sync (capturable in a CUDA
    graph): each non-negative float32 probability's bit pattern (monotonic in its value) is packed with its
    reversed id into one int64 key, so the keys are unique and one ``topk`` gives the stable descending order."""
    k = min(k, probs.shape[0])
    span = 1 << max(probs.shape[0] - 1, 1).bit_length()  # a power of two above every id
    ids = torch.arange(probs.shape[0], device=probs.device)
    keys = probs.float().contiguous().view(torch.int32).long() * span + (span - 1 - ids)
    top_ids = (span - 1) - torch.remainder(keys.topk(k).values, span)
    return probs.index_select(0, top_ids), top_ids


def inverse_cdf_index(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Index i drawn with probability weights[i] / weights.sum() from a uniform ``u`` in [0, 1): the first i whose
    running sum exceeds u * total (what ``multinomial(weights, 1)`` draws, as a static-shape function of u). Never
    an index of zero weight, even when rounding puts u * total at the total."""
    running = weights.cumsum(0)
    index = (running <= u * running[-1]).sum()
    positions = torch.arange(weights.shape[0], device=weights.device)
    last_positive = torch.where(weights > 0, positions, torch.zeros_like(positions)).max()
    return torch.minimum(index, last_positive)


def ras_select(scores: torch.Tensor, recent: torch.Tensor, uniforms: torch.Tensor, top_p: float, top_k: int,
               repeat_threshold: float) -> torch.Tensor:
    """Repetition-aware sampling as one static-shape function (no host sync; a CUDA graph can hold it).

    ``recent``: the last ``win_size`` decoded ids (-1 where fewer exist); ``uniforms``: two draws in [0, 1), the
    first for the nucleus pick, the second for the fallback. Same distribution as ``RepetitionAwareSampler``:
    nucleus from the stable top-k, and when the pick occurs ``repeat_threshold`` times in ``recent``, a draw from
    everything else. Returns a 0-d long tensor."""
    probs = scores.float().softmax(dim=0)
    values, ids = stable_top_k(probs, top_k)
    weights = torch.where(nucleus_keep_mask(values, top_p, top_k), values, torch.zeros_like(values))
    # index_select, not ids[tensor]: indexing with a 0-d tensor would read it on the host
    pick = ids.index_select(0, inverse_cdf_index(weights, uniforms[0]).reshape(1)).reshape(())
    repeats = (recent == pick).sum()
    banned = scores.float().index_fill(0, pick.reshape(1), float("-inf")).softmax(dim=0)
    fallback = inverse_cdf_index(banned, uniforms[1])
    return torch.where(repeats >= repeat_threshold, fallback, pick)


def sample_nucleus(scores: torch.Tensor, top_p: float, top_k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one id from the top-p / top-k nucleus of ``softmax(scores)``; 0-d long tensor."""
    probs = scores.float().softmax(dim=0)
    # stable descending order, so that equal probabilities keep id order, as the reference does
    sorted_probs, sorted_ids = stable_top_k(probs, top_k)
    weights = torch.where(nucleus_keep_mask(sorted_probs, top_p, top_k), sorted_probs, torch.zeros_like(sorted_probs))
    choice = torch.multinomial(weights, 1, replacement=True, generator=generator)
    return sorted_ids[choice[0]]


def sample_full(scores: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one id from the whole distribution ``softmax(scores)``; 0-d long tensor."""
    probs = scores.float().softmax(dim=0)
    return torch.multinomial(probs, 1, replacement=True, generator=generator)[0]


@dataclass(frozen=True)
class RepetitionAwareSampler:
    """Official repetition-aware sampling (defaults = the released yaml's values).

    On host (CPU) scores the fallback is drawn only when the pick repeats, as the reference does. On a device
    both candidate draws (nucleus and fallback) are made at every call and the right one is selected there, so
    choosing costs no host sync; the caller syncs once to read the id. The chosen id's distribution is the same.
    """

    top_p: float = 0.8
    top_k: int = 25
    win_size: int = 10
    tau_r: float = 0.1

    @classmethod
    def from_config(cls, node: Node | dict[str, Any]) -> RepetitionAwareSampler:
        """Read top_p / top_k / win_size / tau_r from the yaml's ``llm.sampling`` entry."""
        args = node.args if isinstance(node, Node) else node
        if isinstance(node, Node) and node.class_name != "ras_sampling":
            raise ValueError(f"unsupported LLM sampling function {node.target!r} (only ras_sampling is implemented)")
        defaults = cls()
        return cls(
            top_p=float(args.get("top_p", defaults.top_p)),
            top_k=int(args.get("top_k", defaults.top_k)),
            win_size=int(args.get("win_size", defaults.win_size)),
            tau_r=float(args.get("tau_r", defaults.tau_r)),
        )

    @classmethod
    def for_model_config(cls, config: dict[str, Any] | None) -> RepetitionAwareSampler:
        """The sampler a whole model config (yaml) asks for in ``llm.sampling``; the defaults where it has none."""
        node = (config or {}).get("llm", {}).get("sampling")
        return cls.from_config(node) if node is not None else cls()

    @property
    def repeat_threshold(self) -> float:
        return self.win_size * self.tau_r

    def __call__(self, scores: torch.Tensor, decoded: Sequence[int], generator: torch.Generator | None = None) -> torch.Tensor:
        if scores.device.type == "cpu":
            return self.choose_on_host(scores, decoded, generator)
        return self.choose_on_device(scores, decoded, generator)

    def _window(self, decoded: Sequence[int]) -> list[int]:
        return list(decoded[-self.win_size:]) if self.win_size > 0 else []

    def choose_on_host(self, scores: torch.Tensor, decoded: Sequence[int],
                       generator: torch.Generator | None = None) -> torch.Tensor:
        pick = sample_nucleus(scores, self.top_p, self.top_k, generator)
        if self._window(decoded).count(int(pick)) < self.repeat_threshold:
            return pick
        return sample_full(scores.float().index_fill(0, pick.reshape(1), float("-inf")), generator)

    def choose_on_device(self, scores: torch.Tensor, decoded: Sequence[int],
                         generator: torch.Generator | None = None) -> torch.Tensor:
        recent = torch.tensor(self._window(decoded), dtype=torch.long).to(scores.device, non_blocking=True)
        # both draws made up front (nucleus pick, fallback), so choosing needs no host sync
        uniforms = torch.rand(2, generator=generator, device=generator.device if generator else scores.device)
        return ras_select(scores, recent, uniforms.to(scores.device), self.top_p, self.top_k, self.repeat_threshold)


def length_limits(text_len: int, min_len_ratio: float, max_len_ratio: float) -> tuple[int, int]:
    """(min_len, max_len) in tokens. The reference counts only the target text, not the prompt text."""
    return int(text_len * min_len_ratio), int(text_len * max_len_ratio)


def generate_speech_tokens(
    llm: Any,
    text: torch.Tensor,
    prompt_text: torch.Tensor,
    prompt_speech_token: torch.Tensor,
    embedding: torch.Tensor,
    sampler: SpeechTokenSampler,
    min_len_ratio: float = 2,
    max_len_ratio: float = 20,
    generator: torch.Generator | None = None,
) -> Iterator[int]:
    """Yield speech tokens one at a time until a stop id is chosen or max_len tokens were yielded.

    During the first ``min_len`` steps the ids in ``llm.min_len_masked_ids`` get score -inf (the reference
    masks only id ``speech_token_size``; in v3 that is sos, not eos, so v3 may still stop early).
    A stop id is never yielded. The next step is only computed when the caller asks for the next token.
    """
    min_len, max_len = length_limits(int(text.shape[1]), min_len_ratio, max_len_ratio)
    if max_len <= 0:
        return
    stop_ids = llm.stop_ids
    with torch.inference_mode():
        logits, state = llm.prefill(text, prompt_text, prompt_speech_token, embedding)
        masked_ids = torch.tensor(list(llm.min_len_masked_ids), dtype=torch.long, device=logits.device)
    decoded: list[int] = []
    for step in range(max_len):
        with torch.inference_mode():
            scores = logits.float()
            if step < min_len and masked_ids.numel():
                scores = scores.index_fill(0, masked_ids, float("-inf"))
            token = int(sampler(scores, decoded, generator))  # the one host sync per token
        if token in stop_ids:
            return
        yield token
        decoded.append(token)
        if step + 1 < max_len:
            with torch.inference_mode():
                logits, state = llm.decode_step(token, state)


def filter_silent_tokens(tokens: Iterable[int], silent_tokens: Iterable[int], max_run: int = 5) -> Iterator[int]:
    """Pass tokens through, dropping silent ones once more than ``max_run`` of them came in a row.

    Dropped tokens still count towards the run; any non-silent token resets it (official v3 llm_job rule).
    """
    silent = frozenset(silent_tokens)
    run = 0
    for token in tokens:
        if token in silent:
            run += 1
            if run > max_run:
                continue
        else:
            run = 0
        yield token


def greedy_tokens(
    llm: Any,
    text: torch.Tensor,
    prompt_text: torch.Tensor,
    prompt_speech_token: torch.Tensor,
    embedding: torch.Tensor,
    n: int,
) -> list[int]:
    """The first ``n`` greedy tokens under the official length rules (fewer if a stop id wins first)."""
    tokens = generate_speech_tokens(llm, text, prompt_text, prompt_speech_token, embedding, GreedySampler())
    return list(islice(tokens, n))


@torch.inference_mode()
def teacher_forced_logits(
    llm: Any,
    text: torch.Tensor,
    prompt_text: torch.Tensor,
    prompt_speech_token: torch.Tensor,
    embedding: torch.Tensor,
    forced_tokens: Sequence[int] | torch.Tensor,
) -> torch.Tensor:
    """Raw logits [k, V] of steps 0..k-1 where step i has been fed forced tokens 0..i-1 (k = len(forced_tokens))."""
    forced = [int(t) for t in forced_tokens]
    if not forced:
        raise ValueError("teacher_forced_logits needs at least one forced token")
    logits, state = llm.prefill(text, prompt_text, prompt_speech_token, embedding)
    rows = [logits]
    for token in forced[:-1]:
        logits, state = llm.decode_step(token, state)
        rows.append(logits)
    return torch.stack(rows)
