"""One sentence through the model: an LLM producer thread feeding a token2wav consumer.

The producer pushes speech tokens into a ``TokenBuffer`` and notifies a condition variable; the consumer
(the caller's thread, inside a generator) sleeps on that condition until the next chunk's tokens exist —
there is no sleep/poll loop, so a chunk starts as soon as its last token arrives. All state belongs to the
call: nothing is left behind when the generator finishes, fails or is closed.
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager, nullcontext
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from cosydesk.runtime.backends.protocols import SteppedSolver
from cosydesk.runtime.options import active as active_options
from cosydesk.runtime.errors import SynthesisError
from cosydesk.runtime.schedule import ChunkCall, make_schedule
from cosydesk.runtime.token2wav import Token2Wav


CANCEL_CHECK_S = 0.05  # how often a wait looks at the cancel event (Stop ends a request within this)


class Cancelled(Exception):
    """The caller's cancel event was set."""


def run_abandonable(work: Callable[[], object], cancel: threading.Event | None, name: str):
    """``work()`` on a daemon thread of its own, returning its result or raising its error; when ``cancel`` is set
    first, raises Cancelled within CANCEL_CHECK_S and leaves the thread behind (its result is dropped). For
    frontend work that holds no shared model state but may not return (an ONNX run that never finishes): Stop
    still ends the request and the next one runs. Without ``cancel`` it runs on the caller's thread."""
    if cancel is None:
        return work()
    box: dict = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            box["error"] = error
        finally:
            done.set()

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    while not done.wait(CANCEL_CHECK_S):
        if cancel.is_set():
            raise Cancelled()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class TokenBuffer:
    """Tokens produced so far, with a condition the consumer waits on."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.done = False
        self.error: BaseException | None = None
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None
        self.condition = threading.Condition()

    def push(self, token: int) -> None:
        with self.condition:
            now = time.perf_counter()
            if self.first_token_time is None:
                self.first_token_time = now
            self.last_token_time = now
            self.tokens.append(int(token))
            self.condition.notify_all()

    def finish(self, error: BaseException | None = None) -> None:
        with self.condition:
            self.done = True
            self.error = error
            self.condition.notify_all()

    def wait_for(self, count: int, cancel: threading.Event | None = None) -> tuple[int, bool]:
        """Block until ``count`` tokens exist or production ended; returns (available, done). With ``cancel``,
        raises Cancelled within CANCEL_CHECK_S of it being set, even while the LLM is inside a long step (a
        token still wakes the wait at once: the timeout only bounds how late a Stop is seen)."""
        with self.condition:
            ready = lambda: len(self.tokens) >= count or self.done  # noqa: E731
            while not self.condition.wait_for(ready, timeout=None if cancel is None else CANCEL_CHECK_S):
                if cancel.is_set():
                    raise Cancelled()
            if self.error is not None:
                raise self.error
            return len(self.tokens), self.done

    def snapshot(self, end: int) -> torch.Tensor:
        with self.condition:
            return torch.tensor([self.tokens[:end]], dtype=torch.int32)


@dataclass
class SentenceInputs:
    """Model-ready tensors for one sentence (CPU; moved to the device by the pipeline)."""

    text: torch.Tensor                    # [1, N] int32 target text ids
    prompt_text: torch.Tensor             # [1, P] int32 (prompt transcript or instruct text; may be empty)
    llm_prompt_speech_token: torch.Tensor  # [1, S] int32 (may be empty)
    llm_embedding: torch.Tensor           # [1, 192] or [0, 192]
    flow_prompt_speech_token: torch.Tensor  # [1, S'] int32
    prompt_speech_feat: torch.Tensor      # [1, F, 80]
    flow_embedding: torch.Tensor          # [1, 192]


TokenSource = Callable[[SentenceInputs, threading.Event], Iterator[int]]


@dataclass
class ChunkResult:
    pcm: torch.Tensor
    timings: dict[str, float]
    final: bool


def run_sentence(
    model,
    inputs: SentenceInputs,
    token_source: TokenSource,
    stream: bool,
    speed: float = 1.0,
    cancel: threading.Event | None = None,
    zero_noise: bool = False,
    on_thread: Callable[[threading.Thread], None] | None = None,
    first_chunk_alone: bool = False,
    shared_steps: int | None = None,
    noise_generator: torch.Generator | None = None,
) -> Iterator[ChunkResult]:
    """Synthesise one sentence; yields wave chunks (1-D tensors on the model's device) with timings.

    ``first_chunk_alone`` (streaming): once the first chunk's tokens exist, the LLM waits until that chunk's
    token2wav work has finished (on a GPU: its event), so the first chunk does not share the device with
    decoding - first audio sooner; the LLM, far ahead of playback, resumes after it. With a graphed flow solver
    the LLM resumes earlier, once only the chunk's last ``shared_steps`` CFM steps (and its vocoder) are left
    (None: ``first_chunk_shared_steps()``), trading a little first-audio time for a shorter sentence.
    ``noise_generator``: where token2wav's random draws come from (a seeded request's own; None: torch's global RNG)."""
    cancel = cancel or threading.Event()
    stop = threading.Event()
    buffer = TokenBuffer()
    schedule = make_schedule(model.version, inputs.flow_prompt_speech_token.shape[1])
    first_chunk_alone = first_chunk_alone and stream
    first_chunk_tokens = schedule.tokens_needed() if first_chunk_alone else None
    first_chunk_launched = threading.Event()  # set with first_chunk_done recorded (or when the sentence ends)
    first_chunk_done: list[torch.cuda.Event] = []
    shared = first_chunk_shared_steps() if shared_steps is None else shared_steps

    def release_llm() -> None:
        """The producer may go on once the work launched so far on this stream has finished (its event)."""
        if model.device.type == "cuda":
            event = torch.cuda.Event()
            event.record()
            first_chunk_done.append(event)
        first_chunk_launched.set()

    # On a GPU the LLM runs on its own CUDA stream so its kernels overlap the vocoder's (tokens cross over as
    # host ints after the per-token sync, so no cross-stream tensor hazard exists).
    llm_stream = llm_stream_for(model.device) if model.device.type == "cuda" else None

    def produce() -> None:
        try:
            with torch.inference_mode(), (torch.cuda.stream(llm_stream) if llm_stream is not None else nullcontext()):
                for count, token in enumerate(token_source(inputs, stop), 1):
                    if stop.is_set() or cancel.is_set():
                        break
                    buffer.push(token)
                    if count == first_chunk_tokens:
                        first_chunk_launched.wait()
                        for event in first_chunk_done:
                            event.synchronize()
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, which re-raises it
            buffer.finish(err)
            return
        buffer.finish()

    producer = threading.Thread(target=produce, name="cosydesk-llm", daemon=True)
    if on_thread is not None:
        on_thread(producer)
    state = Token2Wav(model, inputs.flow_prompt_speech_token, inputs.prompt_speech_feat, inputs.flow_embedding,
                      zero_noise=zero_noise, speed=speed, streaming=stream, generator=noise_generator)
    producer.start()
    try:
        while True:
            if cancel.is_set():
                raise Cancelled()
            if stream:
                available, done = buffer.wait_for(schedule.tokens_needed(), cancel)
                call = schedule.next_call(available, done)
            else:
                available, done = buffer.wait_for(1 << 62, cancel)
                call = ChunkCall(0, available, 0, finalize=True)
            if cancel.is_set():
                raise Cancelled()
            if available == 0:
                raise SynthesisError("the model produced no speech for this sentence (it ended at once): try rephrasing")
            tokens = buffer.snapshot(call.end)
            timings = {"first_token": buffer.first_token_time or time.perf_counter(), "tokens_ready": time.perf_counter()}
            if call.finalize:  # the bench splits a sentence's tail: waiting for the final call, then running it
                timings["last_token"] = buffer.last_token_time or timings["tokens_ready"]
            holding = first_chunk_alone and not first_chunk_launched.is_set()
            early = release_during_flow(model, shared, release_llm) if holding else nullcontext()
            with torch.inference_mode(), early:
                pcm = state(tokens, call)
            if holding and not first_chunk_launched.is_set():
                release_llm()
            timings.update(state_timings(state))
            yield ChunkResult(pcm=pcm, timings=timings, final=call.finalize)
            if call.finalize:
                return
    finally:
        stop.set()
        first_chunk_launched.set()
        producer.join()


def first_chunk_shared_steps() -> int:
    """CFM steps of a first chunk that run alongside the resumed LLM (``EngineOptions.first_chunk_shared_steps``,
    default 0: the LLM waits for the whole first chunk). H200 A/B at 2770449 (docs/bench/h200-v2-shared-steps-ab): 8
    steps: first audio P99 40.2 -> 45.0 ms, sentence mean 82 -> 74 ms (RTF -10 %); wave 5 (docs/bench/h200-wave5), 0
    against 8: v3 first audio P99 56.3 -> 42.9 ms, RTF 0.0268 -> 0.0297; v2 44.3 -> 37.8 ms, RTF 0.0245 -> 0.0271.
    The app holds the LLM for a request's first sentence only, so the cost in throughput stays there."""
    return active_options().first_chunk_shared_steps


@contextmanager
def release_during_flow(model, shared_steps: int, release: Callable[[], None]) -> Iterator[None]:
    """While inside, a graphed flow solver (a ``SteppedSolver``: one with an ``after_step`` hook) calls ``release``
    right after it launches the step that leaves ``shared_steps`` steps to go; a solver without the hook, or 0
    steps, leaves the release to the caller (after the whole chunk)."""
    solver = model.flow.decoder
    if shared_steps <= 0 or not isinstance(solver, SteppedSolver):
        yield
        return
    last_alone = max(0, solver.n_steps - shared_steps - 1)

    def after_step(step: int) -> None:
        if step == last_alone:
            release()

    solver.after_step = after_step
    try:
        yield
    finally:
        solver.after_step = None


@functools.lru_cache(maxsize=None)
def llm_stream_for(device: torch.device) -> torch.cuda.Stream:
    """One LLM stream per device, reused by every sentence (sentences run one after another: the producer is
    joined before run_sentence returns). A fresh ``torch.cuda.Stream()`` per sentence cycles through torch's pool
    of 32 streams, and the caching allocator keeps freed blocks per stream: reserved memory then grows until
    every pool stream holds its own cache (seen on the H200)."""
    return torch.cuda.Stream(device=device)


def state_timings(state: Token2Wav) -> dict[str, float]:
    return dict(state.timings)
