"""Synthesizer: text in, AudioChunks out. The single path used by the CLI, the desktop app and the bench.

    synth = Synthesizer("~/models/CosyVoice2-0.5B")       # device="auto", backend="auto"
    for chunk in synth.stream(Request("你好，世界。", speaker="中文女")):
        play(chunk.pcm)

Modes follow the official ones: SFT speaker (spk2info), zero-shot (prompt wav + transcript, or a zero-shot
entry of spk2info), cross-lingual (prompt wav without transcript), instruct (v1-Instruct: speaker + style),
instruct2 (v2/v3: prompt voice + style); their rules live in ``request_inputs.RequestFrontend``, which turns
a Request into voice and sentence inputs. Text is normalised and split into sentences; each sentence goes
through ``pipeline.run_sentence`` (LLM producer thread -> token2wav consumer). No state survives a request.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from cosydesk.runtime.backends import BACKENDS, CHOICES
from cosydesk.runtime.errors import OutOfMemoryError, SynthesisError
from cosydesk.frontend.segments import Segment
from cosydesk.runtime.options import EngineOptions, using
from cosydesk.runtime.output_check import check_audio_chunk
from cosydesk.runtime.request_inputs import RequestFrontend
from cosydesk.runtime.styles import StylePreset
from cosydesk.runtime.types import SPEED_RANGE, AudioChunk, Request

if TYPE_CHECKING:
    from cosydesk.frontend.prompt import PromptFeatures
    from cosydesk.model.validate import CheckedFolder

Progress = Callable[[str, float], None]
# token2wav's generator is seeded apart from the LLM's (same request seed): two generators on one seed would
# hand the vocoder the very numbers the sampler drew
NOISE_SEED_OFFSET = 0x5EED


def _with_last(items: Iterator[Segment]) -> Iterator[tuple[Segment, bool]]:
    """(item, is_last) pairs, looking one item ahead (the segments are produced lazily)."""
    iterator = iter(items)
    try:
        current = next(iterator)
    except StopIteration:
        return
    for following in iterator:
        yield current, False
        current = following
    yield current, True


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SynthesisError(f"device {device!r} was asked for, but torch sees no CUDA GPU (torch {torch.__version__})")
    return device


def resolve_backend(backend: str, device: str, precision: str = "auto") -> str:
    """auto -> cudagraph (fp16 graphs) on CUDA, eager-fp32 on the CPU (or with precision fp32); eager ->
    eager-fp32/-fp16 by precision.

    auto never picks tensorrt: its engines are built and checked, but none has run on a GPU of ours yet
    (backends.EXPERIMENTAL), and a default must be a path that has run and been measured.
    """
    if precision not in ("auto", "fp32", "fp16"):
        raise SynthesisError(f"precision {precision!r} is not one of auto, fp32, fp16")
    on_cuda = device.startswith("cuda")
    if backend == "auto":
        if not on_cuda:
            return "eager-fp32"
        if precision == "fp32":
            return "eager-fp32"
        return "cudagraph"
    if backend == "eager":
        return "eager-fp16" if on_cuda and precision == "fp16" else "eager-fp32"
    if backend in BACKENDS:
        if backend != "eager-fp32" and not on_cuda:
            raise SynthesisError(f"backend {backend!r} needs an NVIDIA GPU; on the CPU use --backend eager")
        return backend
    raise SynthesisError(f"unknown backend {backend!r} (choose {', '.join(CHOICES[:2] + BACKENDS[1:])})")


def _is_out_of_memory(err: BaseException) -> bool:
    import torch

    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


# Warm-up stages of a GPU backend (``accelerate``'s progress(done, total, what)) -> the load bar's range and label.
# The first load also compiles kernels (tens of seconds): a bar that moves per captured graph shows it is alive.
WARMUP_STAGES = {
    "llm": (0.30, 0.45, "Compiling and capturing the speech LM"),
    "encoder": (0.45, 0.50, "Capturing the flow encoder"),
    "flow": (0.50, 0.62, "Capturing the flow decoder"),
    "vocoder": (0.62, 0.70, "Capturing the vocoder"),
}


def warmup_progress(progress: Progress) -> Callable[..., None]:
    """Adapt ``progress(stage, fraction)`` to the backends' ``(done, total, what)`` warm-up callback."""

    def report(done: int, total: int, what: str = "") -> None:
        low, high, label = WARMUP_STAGES.get(what, (0.30, 0.70, what or "Warming up"))  # e.g. TensorRT builds
        progress(f"{label} ({done}/{total})", low + (high - low) * done / max(total, 1))

    return report


def _model_folder(model: str | Path, progress: Progress) -> Path:
    """A folder as it is; a catalogue name (``"CosyVoice2-0.5B"``) or HF repo id as its folder under the models
    dir, downloaded on first use (as ``cosydesk say --model NAME`` does). Anything else is taken as a folder, so
    loading names what is wrong with it."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    from cosydesk import hub

    try:
        hub.catalogue_entry(str(model))
    except KeyError:
        return path

    def downloaded(done: int, total: int, what: str = "") -> None:
        label = f"Downloading {model}" + (f": {what}" if what else "")
        progress(f"{label} ({done / 1e6:.0f} of {total / 1e6:.0f} MB)", done / total if total else 0.0)

    return hub.resolve_model(str(model), progress=downloaded)


# The app checks a folder before it drops the model it has (check_model_folder), then loads it: the load takes
# that result when no file of the folder changed since, so a model switch reads and NaN-scans the weights once.
# One entry only: it holds the memory-mapped checkpoints until the load takes it.
_prechecked: dict[Path, tuple[tuple, CheckedFolder]] = {}


def _folder_signature(model_dir: Path) -> tuple:
    """Every file under ``model_dir`` with its size and modification time (links followed)."""
    entries = []
    for path in model_dir.rglob("*"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.is_file():
            entries.append((str(path.relative_to(model_dir)), stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


def check_model_folder(model_dir: str | Path) -> None:
    """Every file of ``model_dir`` checked as ``Synthesizer`` would load it, allocating nothing (the app checks a
    folder before dropping the model it has for it). Raises ConfigError / CheckpointError: ``<file>: <what>``."""
    from cosydesk.model.validate import check_model_folder as check

    path = Path(model_dir).expanduser()
    _prechecked.clear()
    signature = _folder_signature(path)
    checked = check(path, for_synthesis=True)
    _prechecked[path.resolve()] = (signature, checked)


def _checked_folder(model_dir: Path) -> CheckedFolder:
    """The folder's check: the one ``check_model_folder`` just made if nothing changed since, else a new one."""
    from cosydesk.model.validate import check_model_folder as check

    signature, checked = _prechecked.pop(model_dir.resolve(), (None, None))
    if checked is not None and signature == _folder_signature(model_dir):
        return checked
    return check(model_dir, for_synthesis=True)


class Synthesizer:
    """Loads one model (a folder, or a catalogue name downloaded on first use) and synthesises requests.

    options: how the GPU backend runs (``EngineOptions``); None takes the defaults with the COSYDESK_*
    environment variables applied, read once here.
    """

    def __init__(
        self,
        model_dir: str | Path,
        device: str = "auto",
        backend: str = "auto",
        precision: str = "auto",
        progress: Progress | None = None,
        sentence_pause_s: float = 0.15,
        options: EngineOptions | None = None,
    ):
        from cosydesk.runtime.allocator import prefer_expandable_segments

        prefer_expandable_segments()  # before the first CUDA call: the allocator the benchmarks measured
        import torch

        from cosydesk.model import load

        progress = progress or (lambda stage, fraction: None)
        self.options = options if options is not None else EngineOptions.from_env()
        self.model_dir = _model_folder(model_dir, progress)
        self.device = resolve_device(device)
        self.backend = resolve_backend(backend, self.device, precision)
        self.precision = "fp32" if self.backend == "eager-fp32" else "fp16"
        progress("Checking model files", 0.0)
        # every setting, checkpoint, table and tokenizer file checked before anything is allocated
        checked = _checked_folder(self.model_dir)
        progress("Loading model", 0.05)
        from cosydesk.runtime.backends import place_model

        # loaded on the host, then each network cast on its way to the device (no float32 copy on the GPU)
        model = place_model(load(checked, device="cpu", dtype=torch.float32), self.device, self.backend)
        if self.backend != "eager-fp32":
            from cosydesk.runtime.backends import accelerate

            progress(f"Preparing {self.backend} (warm-up captures every shape bucket)", 0.3)
            with using(self.options):
                model = accelerate(model, self.backend, progress=warmup_progress(progress))
        self.model = model
        self.version = self.model.version
        self.sample_rate = self.model.sample_rate
        progress("Loading text frontend", 0.7)
        from cosydesk.frontend.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(self.version, self.model_dir)
        self.frontend = RequestFrontend(self.version, self.model_dir, self.sample_rate, tokenizer, self.model.spk2info)
        self.sentence_pause_s = sentence_pause_s
        self._lock = threading.Lock()  # one request at a time per model
        from cosydesk.runtime.host_copy import PinnedCopier

        self._to_host = PinnedCopier(self.model.device)  # used under the lock: one chunk at a time
        self.live_threads: set[threading.Thread] = set()
        progress("Ready", 1.0)

    # -- what the model offers (the request frontend holds the voice and prompt rules) ---------------------
    def speakers(self) -> list[str]:
        return self.frontend.speakers()

    def styles(self) -> list[str]:
        return [preset.label for preset in self.frontend.presets]

    def style_presets(self) -> list[StylePreset]:
        return self.frontend.style_presets()

    def supports(self, mode: str) -> bool:
        return self.frontend.supports(mode)

    def encode(self, text: str) -> list[int]:
        return self.frontend.encode(text)

    def sentences(self, text: str) -> list[str]:
        """Every synthesis segment of ``text`` (normalised); ``segments`` yields them lazily with their spans."""
        return [segment.text for segment in self.segments(text)]

    def segments(self, text: str, per_sentence: bool = False) -> Iterator[Segment]:
        """The synthesis segments of ``text`` with their spans (RequestFrontend.segments); ``per_sentence``: one
        reading sentence at a time (Request.per_sentence)."""
        return self.frontend.segments(text, per_sentence)

    def notices(self, request: Request) -> list[str]:
        """Advice about a request that will still be synthesised (shown by the CLI and the app)."""
        return self.frontend.notices(request)

    def prompt_features(self, wav_path: str, transcript: str) -> PromptFeatures:
        return self.frontend.prompt_features(wav_path, transcript)

    # -- synthesis --------------------------------------------------------------------------------------
    def _token_source(self, request: Request):
        import torch

        from cosydesk.model.sampling import RepetitionAwareSampler, filter_silent_tokens, generate_speech_tokens
        from cosydesk.runtime.backends.protocols import DeviceLoopLM
        from cosydesk.runtime.host_sampler import HostSampler

        llm = self.model.llm
        sampler = HostSampler(RepetitionAwareSampler.for_model_config(self.model.config))
        seed = request.seed
        silent = llm.silent_tokens
        # the cudagraph LLM chooses ids on the device (its own copy of the same sampler) and runs ahead of the host
        generate = llm.generate_speech_tokens if isinstance(llm, DeviceLoopLM) else None

        def source(inputs, stop):
            generator = None
            if seed is not None:  # random draws come from the host in both loops, so does the generator
                generator = torch.Generator(device="cpu").manual_seed(int(seed))
            device = self.model.device
            args = (inputs.text.to(device), inputs.prompt_text.to(device), inputs.llm_prompt_speech_token.to(device),
                    inputs.llm_embedding.to(device=device, dtype=self.model.dtype))
            if generate is not None:
                tokens = generate(*args, generator=generator)
            else:
                tokens = generate_speech_tokens(llm, *args, sampler, generator=generator)
            return filter_silent_tokens(tokens, silent) if silent else tokens

        return source

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[AudioChunk]:
        """Yield audio chunks as they are ready; raises SynthesisError subclasses for bad input."""
        from cosydesk.runtime.pipeline import Cancelled, run_abandonable, run_sentence

        submit = time.perf_counter()
        if not isinstance(request, Request):
            raise SynthesisError("stream() takes a cosydesk.runtime.Request")
        if not (SPEED_RANGE[0] <= request.speed <= SPEED_RANGE[1]):
            raise SynthesisError(f"speed {request.speed} is outside {SPEED_RANGE[0]}-{SPEED_RANGE[1]}")
        segments = self.segments(request.text, request.per_sentence)
        first = next(segments)  # text errors before voice errors, as before; the rest is normalised as needed
        sentences = _with_last(itertools.chain([first], segments))
        try:  # prompt features run ONNX models that may never return: Stop abandons them (run_abandonable)
            voice = (run_abandonable(lambda: self.frontend.voice_inputs(request), cancel, "cosydesk-prompt")
                     if request.prompt_wav else self.frontend.voice_inputs(request))
        except Cancelled:
            return
        token_source = self._token_source(request)
        # the official streaming path cannot change speed; such requests run each sentence non-streaming
        stream = request.stream and request.speed == 1.0
        pause = np.zeros(int(self.sentence_pause_s * self.sample_rate), dtype=np.float32)
        index = 0
        with self._lock:
            try:
                for s_index, (segment, last_sentence) in enumerate(sentences):
                    sentence = segment.text
                    inputs = self.frontend.sentence_inputs(sentence, voice)
                    # the request's first chunk is its first audio: it gets the device to itself (the LLM waits
                    # for it; measured on the H200, 92 -> 77 ms). Later sentences play behind earlier ones, so
                    # their LLM keeps running (the hold costs throughput, RTF 0.049 -> 0.057 per sentence).
                    for result in run_sentence(self.model, inputs, token_source, stream=stream, speed=request.speed,
                                               cancel=cancel, on_thread=self._track, first_chunk_alone=s_index == 0,
                                               shared_steps=self.options.first_chunk_shared_steps,
                                               noise_generator=self._noise_generator(request.seed)):
                        pcm = self._to_host(result.pcm)
                        check_audio_chunk(pcm)  # NaN / pinned samples are refused before anyone plays or writes them
                        if result.final and not last_sentence:
                            pcm = np.concatenate([pcm, pause])
                        timings = {"submit": submit, **result.timings, "ready": time.perf_counter()}
                        yield AudioChunk(pcm=pcm, sample_rate=self.sample_rate, index=index, final=result.final and last_sentence,
                                         sentence_index=s_index if segment.sentence is None else segment.sentence,
                                         span=(segment.start, segment.end),
                                         timings=timings)
                        index += 1
            except Cancelled:
                return
            except Exception as err:
                if _is_out_of_memory(err):
                    import torch

                    torch.cuda.empty_cache()
                    raise OutOfMemoryError(
                        "the GPU ran out of memory: close other GPU programs, try a shorter text, "
                        "or choose --precision fp16 / --device cpu"
                    ) from err
                raise

    def _noise_generator(self, seed: int | None):
        """A seeded request's own generator for token2wav's draws (v1 flow noise, v1/v2 HiFT source), fresh per
        sentence like the LLM's: the global RNG moves on with every request, so back-to-back runs of one seed gave
        different audio. On the model's device, so a captured vocoder graph draws without a host copy."""
        if seed is None:
            return None
        import torch

        return torch.Generator(device=self.model.device).manual_seed((int(seed) + NOISE_SEED_OFFSET) % 2**63)

    def _track(self, thread: threading.Thread) -> None:
        self.live_threads = {t for t in self.live_threads if t.is_alive()} | {thread}

    def synthesize(self, request: Request) -> np.ndarray:
        """The whole utterance at once (each sentence one finalize=True token2wav call, as the official non-stream)."""
        chunks = [chunk.pcm for chunk in self.stream(dataclasses.replace(request, stream=False))]
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
