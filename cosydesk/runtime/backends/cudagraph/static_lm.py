"""What every static-cache speech LM of the graph backend shares: the decode-ahead generation loop.

A subclass (``qwen.StaticQwenLM`` for v2/v3, ``transformer_lm.StaticTransformerLM`` for v1) owns the math: its
``prefill`` fills the static KV cache and ``prefill_logits``, its ``_decode_body`` turns the id in ``token`` at
``position`` into ``decode_logits``, then calls ``self.select`` and advances ``position``; its ``capture`` puts
``decode`` and ``select_prefill`` (and whatever else it has) into CUDA graphs. This base class holds the static
inputs/outputs, the device-side id selector (``select.py``; the Triton form where it compiles,
``select_kernel.py``) and the runtime API the pipeline calls: ``prefill``/``decode_step`` (parity tests, the
bench's generic loop) and ``generate_speech_tokens``, the fast loop: step n+1 is queued before id n is read.
Every subclass ``prefill`` checks the prompt fits (``_prompt_fits``) and clears the cache rows past it
(``_clear_cache_from``), so nothing an earlier request left there is ever attended to; requests longer than the
cache end with ``TooLongError`` (a ``SynthesisError``: shown to the user as one line).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch

from cosydesk.model.sampling import RepetitionAwareSampler, length_limits
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.compile import compiled
from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable
from cosydesk.runtime.options import active as active_options
from cosydesk.runtime.backends.cudagraph.select import DeviceTokenSelector, HostIds
from cosydesk.runtime.errors import NumericalError, TooLongError


# Decode steps queued ahead of the id the host reads (1: only the step after it). More give the GPU work while
# the LLM thread waits for its consumer or the GIL; each extra one is a dropped step when a stop id comes.
# H200, v2 full size, 2 x 50 sentences per setting in one process (docs/bench/h200-v2-decode-ahead-ab): 1 / 2 /
# 3 steps gave 0.532 / 0.523 / 0.518 and 0.539 / 0.532 / 0.525 ms per token, sentence mean 73.1 / 72.9 / 72.2
# and 73.1 / 72.6 / 72.4 ms, first audio unchanged (a shorter GIL switch interval, 0.5 ms, changed nothing).


def decode_ahead_steps() -> int:
    """``EngineOptions.decode_ahead`` of the backend being built (default ``DECODE_AHEAD``)."""
    return active_options().decode_ahead


@dataclass
class StaticDecodeState:
    length: int


class StaticSpeechLM:
    """Base of the graph backend's LLMs (a ``protocols.DeviceLoopLM``); ``lm`` is the model-of-record module,
    whose token ids (stop ids, eos id, ...) the properties at the end read."""

    def _init_generation(self, lm, vocab: int, max_len: int, device: torch.device,
                         sampling: RepetitionAwareSampler | None) -> None:
        """Static buffers, the selector and the host id queue (call from the subclass ``__init__`` first)."""
        self.lm = lm
        self.device = device
        self.max_len = max_len
        self.token = torch.zeros(1, dtype=torch.long, device=device)
        self.position = torch.zeros(1, dtype=torch.long, device=device)
        self.decode_logits = torch.zeros(vocab, dtype=torch.float32, device=device)
        self.prefill_logits = torch.zeros(vocab, dtype=torch.float32, device=device)
        self.selector = DeviceTokenSelector(self.token, vocab, max_len, lm.min_len_masked_ids, sampling)
        self.ahead = decode_ahead_steps()
        # ids n .. n + ahead are in flight while id n is read; two spare slots, as the depth of 4 had at 1 ahead
        self.host_ids = HostIds(self.selector.chosen, depth=self.ahead + 3)
        self._last_generation: torch.cuda.Event | None = None  # see _after_previous_generation
        # graphs by name (decode step(s), prefill buckets, select_prefill); the buffers are this object's own
        self.table = GraphTable("llm", device)

    @property
    def graphs(self) -> dict[str, torch.cuda.CUDAGraph]:
        return self.table.graphs

    # --- subclass hooks ----------------------------------------------------------------------------------
    def prefill(self, text, prompt_text, prompt_speech_token, embedding=None):
        raise NotImplementedError

    def _decode_body(self) -> None:
        raise NotImplementedError

    def _embed_token(self) -> None:
        """Write the decode step's input row for ``token`` (subclasses whose selector can embed, ``select_embeds``)."""
        raise NotImplementedError

    def _select_prefill_body(self) -> None:
        self.select(self.prefill_logits)

    def _capture(self, jobs, pool=None, progress=None) -> None:
        """Capture ``jobs`` [(name, body)] and ``select_prefill`` into graphs (two warm-up rounds: cuBLAS handles,
        kernel choices, compiled layers), then clear what the warm-up wrote (caches, selector state)."""
        jobs = list(jobs) + [("select_prefill", self._select_prefill_body)]
        self.table.capture(jobs, pool, progress, capture=capture_graphs, warmup_rounds=2)
        self.k_cache.zero_()
        self.v_cache.zero_()
        self.selector.start(0, False, torch.zeros(0, 2))

    def _decode_job(self, position: int) -> tuple[str, Callable[[], None]]:
        """(graph name, eager body) of the decode step at ``position`` (subclasses with several graphs choose)."""
        return "decode", self._decode_body

    def _prompt_fits(self, length: int) -> None:
        """Refuse a prompt of ``length`` positions that leaves no room in the cache."""
        if length >= self.max_len:
            raise TooLongError(f"the voice prompt and the sentence take {length} positions of the speech model's "
                               f"cache, which holds {self.max_len}: use a shorter voice prompt or a shorter sentence")

    def _cache_full(self) -> TooLongError:
        return TooLongError(f"this sentence's speech ran past the {self.max_len} positions the speech model's cache "
                            "holds: split the sentence or use a shorter voice prompt")

    def _clear_cache_from(self, length: int) -> None:
        """Zero the cache rows from ``length`` on, at every prefill: a masked key's weight is exactly 0, but 0 * NaN
        is not, so a non-finite value left by an earlier request (an fp16 overflow) must not stay in the rows a
        later step attends over (the Triton attention never loads them; the torch forms do)."""
        self.k_cache[..., length:, :].zero_()
        self.v_cache[..., length:, :].zero_()

    # --- load-time helpers -------------------------------------------------------------------------------
    def _choose_select(self, kernel_wanted: bool, compile_backend: str | None, embed=None, pdl: bool = False) -> None:
        """``self.select``: the Triton selector when ``kernel_wanted`` and it compiles, else the selector's torch ops
        (compiled on a GPU). ``embed`` (a ``select_kernel.Embed``): the Triton selector also writes the next
        decode input row and advances ``position`` (``self.select_embeds``: the decode body then does neither)."""
        self.select_kernel = self._make_select_kernel(embed, pdl) if kernel_wanted else None
        self.select_embeds = self.select_kernel is not None and embed is not None
        self.select = self.select_kernel or compiled(self.selector.body, self.device, dynamic=False,
                                                     backend=compile_backend)

    def _make_select_kernel(self, embed, pdl: bool):
        """``selector.body`` as the Triton kernels, or None where they do not fit or fail to compile (one call
        now, on zero logits; the selector is reset before every sentence)."""
        from cosydesk.runtime.backends.cudagraph import select_kernel

        sampling = self.selector.sampling
        vocab = self.decode_logits.shape[0]
        if not select_kernel.supports(vocab, sampling.top_k):
            return None
        scratch = select_kernel.SelectScratch(vocab, min(sampling.top_k, vocab), self.device)
        select = functools.partial(select_kernel.select_next, self.selector, scratch=scratch, embed=embed, pdl=pdl)
        try:
            error = self._trial_run(lambda: select(self.decode_logits))
        finally:
            self.selector.start(0, False, torch.zeros(0, 2))
        if error:
            warnings.warn(f"Triton token selector unavailable ({error}); the compiled torch form chooses the ids",
                          RuntimeWarning, stacklevel=3)
            return None
        return select

    def _trial_run(self, run) -> str | None:
        """Run ``run()`` once now, so that a kernel this GPU / Triton cannot compile shows at load, not in the
        first request; why it failed, or None."""
        try:
            with torch.inference_mode():
                run()
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
        except Exception as exc:  # noqa: BLE001 - any failure means: the fallback path
            return f"{type(exc).__name__}: {exc}"[:300]
        return None

    # --- runtime API -------------------------------------------------------------------------------------
    def _after_previous_generation(self) -> None:
        """A finished or abandoned ``generate_speech_tokens`` may leave decode-ahead steps queued, and those
        steps write the cache and the selector's buffers: new work on any stream is ordered after them."""
        if self._last_generation is not None:
            torch.cuda.current_stream(self.device).wait_event(self._last_generation)
            self._last_generation = None

    @torch.inference_mode()
    def decode_step(self, token, state: StaticDecodeState):
        if state.length >= self.max_len:
            raise self._cache_full()
        if isinstance(token, torch.Tensor):
            self.token.copy_(token.reshape(1))
        else:
            self.token.fill_(int(token))
        if self.select_embeds:  # the decode graph takes its input row from the previous choice: write it here
            self._embed_token()
        self.position.fill_(state.length)
        self._replay(*self._decode_job(state.length))
        state.length += 1
        return self.decode_logits, state

    def _replay(self, name: str, body) -> None:
        """The captured graph ``name``, or ``body`` eagerly where none was captured (no graphs, CPU; the prefill
        counts its own fallbacks)."""
        self.table.run(name, body, count=False)

    @torch.inference_mode()
    def generate_speech_tokens(self, text, prompt_text, prompt_speech_token, embedding, greedy: bool = False,
                               min_len_ratio: float = 2, max_len_ratio: float = 20,
                               generator: torch.Generator | None = None,
                               forced: Sequence[int] | None = None) -> Iterator[int]:
        """``model.sampling.generate_speech_tokens`` (same length rules, stop ids never yielded) with the choice
        made on the device: repetition-aware sampling (the ``sampling`` given at construction) or ``greedy``
        argmax; ``forced`` ids (benchmark) override the choice and set the length. Steps up to n + ``ahead`` - 1 are
        queued before id n is read, so the GPU does not wait for the host; a stop id costs ``ahead`` dropped
        steps."""
        min_len, max_tokens = length_limits(int(text.shape[1]), min_len_ratio, max_len_ratio)
        if forced is not None:
            min_len, max_tokens = 0, len(forced)
        max_tokens = min(max_tokens, self.max_len)
        if max_tokens <= 0:
            return
        uniforms = torch.rand(max_tokens, 2, generator=generator)  # host draws: seeded requests reproduce
        self._after_previous_generation()
        # the stream the steps are launched on (a generator may be closed later, from another stream context)
        stream = torch.cuda.current_stream(self.device) if self.device.type == "cuda" else None
        self.selector.start(min_len, greedy, uniforms, forced)
        try:
            yield from self._decode_ahead(text, prompt_text, prompt_speech_token, embedding, max_tokens)
        finally:
            if stream is not None:
                self._last_generation = torch.cuda.Event()
                self._last_generation.record(stream)

    def _decode_ahead(self, text, prompt_text, prompt_speech_token, embedding, max_tokens: int) -> Iterator[int]:
        """Step s consumes id s at position length + s and chooses id s + 1; before id n is read, steps up to
        n + ahead - 1 are queued (``ahead`` = 1: the GPU has one step of work while the host reads)."""
        _, state = self.prefill(text, prompt_text, prompt_speech_token, embedding)
        length = state.length
        self._replay("select_prefill", self._select_prefill_body)
        self.host_ids.enqueue(0)
        self.position.fill_(length)
        stop_ids = self.lm.stop_ids
        queued, full_at = 0, None  # steps queued; the first step the cache had no room for
        for n in range(max_tokens):
            while queued < n + self.ahead and queued + 1 < max_tokens and full_at is None:
                if length + queued >= self.max_len:
                    full_at = queued
                    break
                self._replay(*self._decode_job(length + queued))
                self.host_ids.enqueue(queued + 1)
                queued += 1
            token = self.host_ids.read(n)
            if token < 0:
                raise NumericalError(f"the speech model's scores were not finite numbers (NaN/inf) at token {n}, "
                                     "so no token could be drawn: an fp16 overflow? try --backend eager (fp32)")
            if token in stop_ids:
                return
            yield token
            if n == full_at:
                raise self._cache_full()

    # --- the module's token ids (``protocols.SpeechLM``) ---------------------------------------------------
    @property
    def stop_ids(self) -> frozenset[int]:
        return self.lm.stop_ids

    @property
    def min_len_masked_ids(self) -> tuple[int, ...]:
        return self.lm.min_len_masked_ids

    @property
    def silent_tokens(self) -> tuple[int, ...]:
        return self.lm.silent_tokens

    @property
    def eos_id(self) -> int:
        return self.lm.eos_id

    @property
    def speech_token_size(self) -> int:
        return self.lm.speech_token_size
