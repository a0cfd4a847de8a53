"""HiFT (v1, v2) as CUDA graphs for the chunk shapes streaming produces, eager float16 for anything else.

The v2 vocoder is not causal (symmetric convolutions, centred STFT), so plain padding of a mel to a bucket would
change the last samples: graphs are captured for *exact* shapes instead. Streaming makes few of them: the first
chunk has 2*(25+pad) frames and no source cache (pad 0..24 depends on the prompt length), later chunks 2*50+8
and 2*100+8 frames with a 3840-sample source cache. The final chunk of a sentence has a free length: a graph per
mel bucket of the masked, padding-exact form (``hift_padded.py``; eager it was ~640 launches from Python, which
ended each sentence on the host), eager past the largest bucket or with ``COSYDESK_FINAL_HIFT_GRAPHS=0``.
v1's calls all have free lengths (120-token windows less a held-back overlap, or a shorter final window):
every one replays a padded graph (``v1_hift_shapes``); ``COSYDESK_V1_HIFT_GRAPHS=0`` runs them all eager.

Weight norms are folded into plain weights and the Snake activations compiled (one fused kernel each).
Random source draws are written in place into the graph's static draw buffers (no allocation per call);
``zero_noise`` zeroes them.
"""

from __future__ import annotations

import functools

import torch

from cosydesk.model.hift import Snake
from cosydesk.model.hift_source import NsfDraws
from cosydesk.model.length_regulator import frames_for_tokens
from cosydesk.runtime.buckets import HIFT_MEL_BUCKETS, copy_padded
from cosydesk.runtime.backends.cudagraph.capture import capture_graphs
from cosydesk.runtime.backends.cudagraph.compile import compile_blocks
from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable, shared_prefix_views
from cosydesk.runtime.options import active as active_options
from cosydesk.runtime.backends.cudagraph.hift_padded import ValidFrames, padded_forward
from cosydesk.runtime.schedule import CausalChunkSchedule, WindowChunkSchedule
from cosydesk.model.versions import V1, V2

V2_MEL_CACHE_FRAMES, V2_SOURCE_CACHE_SAMPLES = V2.hift_mel_cache_frames, V2.hift_source_cache_samples
V1_MEL_CACHE_FRAMES, V1_SOURCE_CACHE_SAMPLES = V1.hift_mel_cache_frames, V1.hift_source_cache_samples
V1_MEL_OVERLAP_FRAMES = V1.mel_frames_for_tokens(V1.chunk_overlap)  # flow mel held back by each non-final v1 call
V2_TOKEN_MEL_RATIO = V2.token_mel_ratio
V1_TOKEN_RATE = V1.speech_tokens_per_second  # v1 speech tokens per second (its flow's input_frame_rate)


def streaming_hift_shapes(max_prompt_tokens: int = 25, calls_per_sentence: int = 4) -> list[tuple[int, int]]:
    """(mel frames, source-cache samples) of every non-final v2 HiFT call, over every prompt padding."""
    shapes: set[tuple[int, int]] = set()
    for prompt in range(max_prompt_tokens):
        schedule = CausalChunkSchedule(prompt)
        for index in range(calls_per_sentence):
            call = schedule.next_call(available=10**6, done=False)
            frames = (call.end - schedule.lookahead - call.token_offset) * V2_TOKEN_MEL_RATIO
            shapes.add((frames, 0) if index == 0 else (frames + V2_MEL_CACHE_FRAMES, V2_SOURCE_CACHE_SAMPLES))
    return sorted(shapes)


def _padded_buckets(spans: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """(bucket, source-cache samples) for each cache length's (fewest, most) mel frames: every bucket a call in
    that span can land in (a bucket holds up to its size - 1 frames, ``hift_padded``)."""
    shapes = []
    for cache, (fewest, most) in spans.items():
        low, top = HIFT_MEL_BUCKETS.pick(fewest + 1), HIFT_MEL_BUCKETS.pick(most + 1)
        shapes += [(b, cache) for b in HIFT_MEL_BUCKETS.sizes if low <= b <= top]
    return sorted(shapes)


def final_hift_shapes(max_prompt_tokens: int = 25, calls_per_sentence: int = 4) -> list[tuple[int, int]]:
    """(mel bucket, source-cache samples) serving every final v2 HiFT call: after a chunk (8 cached frames + 2 per
    token past the last hop, a hop at most 100 tokens + 3 look-ahead) and as a sentence's only call (2 per token
    before the first chunk fires)."""
    most = {V2_SOURCE_CACHE_SAMPLES: 0, 0: 0}
    for prompt in range(max_prompt_tokens):
        schedule = CausalChunkSchedule(prompt)
        most[0] = max(most[0], (schedule.tokens_needed() - 1) * V2_TOKEN_MEL_RATIO)
        for _ in range(calls_per_sentence):
            call = schedule.next_call(available=10**6, done=False)
            hop = call.end - schedule.lookahead - call.token_offset
            most[V2_SOURCE_CACHE_SAMPLES] = max(most[V2_SOURCE_CACHE_SAMPLES],
                                                V2_MEL_CACHE_FRAMES + (hop + schedule.lookahead) * V2_TOKEN_MEL_RATIO)
    return _padded_buckets({cache: (1, frames) for cache, frames in most.items()})


def v1_hift_shapes() -> list[tuple[int, int]]:
    """(mel bucket, source-cache samples) serving every streamed v1 HiFT call (all of them free-length, so all
    padded): a window of hop + overlap tokens less the 34 held-back frames, or a final window of fewer tokens,
    after a first call with the 20 cached frames in front (its final window then has at least the overlap)."""
    schedule = WindowChunkSchedule()
    window = schedule.hop + schedule.overlap
    frames = functools.partial(frames_for_tokens, token_rate=V1_TOKEN_RATE)
    alone = max(frames(window) - V1_MEL_OVERLAP_FRAMES, frames(window - 1))
    return _padded_buckets({0: (1, alone), V1_SOURCE_CACHE_SAMPLES: (
        V1_MEL_CACHE_FRAMES + frames(schedule.overlap), V1_MEL_CACHE_FRAMES + alone)})


def v1_hift_graphs_wanted() -> bool:
    """``EngineOptions.v1_hift_graphs``: v1's vocoder calls replay padded graphs (on by default; eager they are ~700
    launches, 12-16 ms a call on the H200. A/B: sentence P99 211 -> 155 ms, mean -5 %, NVML +0.06 GB,
    docs/bench/h200-v1-hift-ab)."""
    return active_options().v1_hift_graphs


def final_hift_graphs_wanted() -> bool:
    """``EngineOptions.final_hift_graphs``: capture the final chunk's padded HiFT graphs (on by default; H200 A/B:
    sentence mean 88 -> 81 ms, RTF 0.0303 -> 0.0281, docs/bench/h200-v2-final-hift-ab)."""
    return active_options().final_hift_graphs


def fold_weight_norms(module: torch.nn.Module) -> int:
    """Replace every weight-norm parametrisation under ``module`` by its current value (g * v / |v|): the
    weights are constant at inference, so computing them once gives the same tensors without a kernel per
    conv per call. Returns how many were folded.

    Not ``parametrize.remove_parametrizations``: it deletes the weight property from the parametrised
    *class*, which a deep copy shares with its original (the bench's and the app's other backends would
    lose their vocoder). Here only the instance changes: back to its own class, with a plain weight."""
    from torch.nn.utils import parametrize

    folded = 0
    for sub in list(module.modules()):  # folding edits the module tree: list it first
        if not parametrize.is_parametrized(sub, "weight"):
            continue
        if len(sub.parametrizations) != 1:  # another parametrised tensor too: leave the module as it is
            continue
        with torch.no_grad():
            weight = sub.weight.detach().clone()
        del sub._modules["parametrizations"]
        sub.__class__ = type(sub).__bases__[0]  # the class the parametrised one was derived from
        sub.weight = torch.nn.Parameter(weight, requires_grad=False)
        folded += 1
    return folded


class GraphedHift:
    """Drop-in for ``HalfHift`` (float32 in/out around a float16 HiFTGenerator, a ``protocols.Vocoder``) with
    per-shape graphs: one ``GraphTable`` keyed (frames, cache samples) for the exact shapes and ("padded", bucket,
    cache samples) for the padded ones."""

    def __init__(self, half_hift, shapes: list[tuple[int, int]], pool=None, progress=None,
                 padded_shapes: list[tuple[int, int]] = ()):
        """``shapes``: exact (frames, cache samples) of the streamed chunks; ``padded_shapes``: (bucket, cache
        samples) of padded graphs for any other length below a bucket (``final_hift_shapes``, ``v1_hift_shapes``)."""
        self.half = half_hift
        self.hift = half_hift.hift
        param = next(self.hift.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.table = GraphTable("vocoder", self.device)
        # H200, first-chunk shape: 1,223 kernels, 3.3 ms per call, of which 77 weight-norm kernels (0.3 ms)
        # recomputing constant weights and 72 Snakes of 6 element-wise kernels each (0.5 ms)
        fold_weight_norms(self.hift)
        compile_blocks(self.hift, (Snake,), self.device)
        # the source noise of every graph in one allocation: each call rewrites its graph's draws whole (``_fill``)
        # before the replay; one buffer per graph held 65 MB for v2's 45 graphs at full size
        noise = shared_prefix_views({key: self.hift.draw_shapes(key[0])[1] for key in [*shapes, *padded_shapes]},
                                    self.device, torch.float32)
        self.bufs = {shape: self._buffers(*shape, noise[shape]) for shape in shapes}
        self.padded = {shape: {**self._buffers(*shape, noise[shape]), "valid": ValidFrames(shape[0], self.device)}
                       for shape in padded_shapes}
        self.table.bufs.update(self.bufs)
        self.table.bufs.update({("padded",) + key: b for key, b in self.padded.items()})
        # warm-up outside capture builds the cuDNN / cuFFT plans
        jobs = [(key, functools.partial(self._body, key)) for key in self.bufs]
        jobs += [(("padded",) + key, functools.partial(self._padded_body, key)) for key in self.padded]
        self.table.capture(jobs, pool, progress, capture=capture_graphs)

    @property
    def graphs(self) -> dict:
        return self.table.graphs

    @property
    def eager_calls(self) -> int:
        return self.table.eager_calls

    def _buffers(self, frames: int, cache: int, noise: torch.Tensor) -> dict:
        """Static inputs of one graph: mel [1, 80, frames], a source cache of ``cache`` samples, source draws (the
        noise part: ``noise``, a view of the shared allocation)."""
        mel = torch.zeros(1, 80, frames, device=self.device, dtype=self.dtype)
        phase_shape, _ = self.hift.draw_shapes(frames)
        return {"mel": mel, "cache": torch.zeros(1, 1, cache, device=self.device, dtype=self.dtype),
                "draws": NsfDraws(torch.zeros(phase_shape, device=self.device), noise)}

    def _body(self, key) -> None:
        b = self.bufs[key]
        cache = b["cache"] if key[1] else None
        b["speech"], b["source"] = self.hift(b["mel"], b["draws"], cache)

    def _padded_body(self, key) -> None:
        b = self.padded[key]
        b["speech"], b["source"] = padded_forward(self.hift, b["mel"], b["valid"], b["draws"],
                                                  b["cache"] if key[1] else None)

    def _padded_key(self, frames: int, cache_len: int) -> tuple[int, int] | None:
        """The smallest padded graph for ``frames`` (one frame of room is needed) with this cache length."""
        fits = [key for key in self.padded if key[1] == cache_len and key[0] > frames]
        return min(fits) if fits else None

    def _fill(self, b: dict, cache_source, zero_noise: bool, generator: torch.Generator | None = None) -> None:
        """A graph's source cache (when it has one) and its draws (zeros, or fresh ones from ``generator``, a
        seeded request's, else the global RNG) for this call."""
        if b["cache"].shape[2]:
            b["cache"].copy_(cache_source)
        if zero_noise:
            b["draws"].initial_phase.zero_()
            b["draws"].noise.zero_()
        else:
            self.hift.redraw(b["draws"], generator)

    @torch.inference_mode()
    def inference_with_source(self, mel, cache_source=None, zero_noise=False, generator=None, **kwargs):
        if kwargs:  # explicit draws: the eager vocoder (a graph only takes its own static draws)
            return self.table.eager(self.half.inference_with_source, mel, cache_source=cache_source,
                                    zero_noise=zero_noise, generator=generator, **kwargs)
        cache_len = 0 if cache_source is None else cache_source.shape[2]
        frames = mel.shape[2]
        key = (frames, cache_len)
        graph = self.graphs.get(key)
        padded = None if graph is not None else self._padded_key(frames, cache_len)
        if padded is not None:  # a free-length call (v2's final chunk, any v1 call) below a padded graph's bucket
            b = self.padded[padded]
            copy_padded(b["mel"], mel)
            b["valid"].frames.fill_(frames)
            self._fill(b, cache_source, zero_noise, generator)
            self.graphs[("padded",) + padded].replay()
            samples = frames * self.hift.samples_per_frame
            return b["speech"][:, :samples].float(), b["source"][:, :, :samples].float()
        if graph is None:  # a length past every bucket
            return self.table.eager(self.half.inference_with_source, mel, cache_source=cache_source,
                                    zero_noise=zero_noise, generator=generator)
        b = self.bufs[key]
        b["mel"].copy_(mel)
        self._fill(b, cache_source, zero_noise, generator)
        graph.replay()
        return b["speech"].float(), b["source"].float()  # fresh float32 copies: the buffers are reused

    def inference(self, mel, *args, **kwargs):
        return self.inference_with_source(mel, None, *args, **kwargs)[0]
