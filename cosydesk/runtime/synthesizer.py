"""Synthesizer: text in, AudioChunks out. The single path used by the CLI, the desktop app and the bench.

    synth = Synthesizer("~/models/CosyVoice2-0.5B")       # device="auto", backend="auto"
    for chunk in synth.stream(Request("你好，世界。", speaker="中文女")):
        play(chunk.pcm)

Modes follow the official ones: SFT speaker (spk2info), zero-shot (prompt wav + transcript, or a zero-shot
entry of spk2info), cross-lingual (prompt wav without transcript), instruct (v1-Instruct: speaker + style),
instruct2 (v2/v3: prompt voice + style). Text is normalised and split into sentences; each sentence goes
through ``pipeline.run_sentence`` (LLM producer thread -> token2wav consumer). No state survives a request.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import threading
import unicodedata
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from cosydesk.runtime.errors import (
    EmptyTextError,
    OutOfMemoryError,
    PromptError,
    SynthesisError,
    UnknownSpeakerError,
    UnsupportedModeError,
)
from cosydesk.frontend.segments import Segment
from cosydesk.runtime.options import EngineOptions, using
from cosydesk.runtime.output_check import check_audio_chunk
from cosydesk.runtime.styles import StylePreset, is_instruct_model, presets_for, resolve_instruct
from cosydesk.runtime.types import AudioChunk, Request

ENDOFPROMPT = "<|endofprompt|>"
V3_SYSTEM_PROMPT = "You are a helpful assistant."
Progress = Callable[[str, float], None]
# token2wav's generator is seeded apart from the LLM's (same request seed): two generators on one seed would
# hand the vocoder the very numbers the sampler drew
NOISE_SEED_OFFSET = 0x5EED


def _pronounceable_char(ch: str) -> bool:
    """Drop control and format characters, lone surrogates (undecodable bytes) and emoji variation selectors."""
    if ch in "\n\t":
        return True
    return unicodedata.category(ch) not in ("Cc", "Cf", "Cs") and not "\ufe00" <= ch <= "\ufe0f"


def _all_finite(value) -> bool:
    """A floating tensor holds only finite numbers (anything else - ids, strings - counts as finite here)."""
    import torch

    return not (isinstance(value, torch.Tensor) and value.is_floating_point()) or bool(torch.isfinite(value).all())


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
    if backend in ("eager-fp32", "eager-fp16", "cudagraph", "tensorrt"):
        if backend != "eager-fp32" and not on_cuda:
            raise SynthesisError(f"backend {backend!r} needs an NVIDIA GPU; on the CPU use --backend eager")
        return backend
    raise SynthesisError(f"unknown backend {backend!r} (choose auto, eager, eager-fp16, cudagraph, tensorrt)")


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


class Synthesizer:
    """Loads one model folder and synthesises requests, streaming or not.

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
        import torch

        from cosydesk.model import load

        progress = progress or (lambda stage, fraction: None)
        self.options = options if options is not None else EngineOptions.from_env()
        self.model_dir = Path(model_dir).expanduser()
        self.device = resolve_device(device)
        self.backend = resolve_backend(backend, self.device, precision)
        self.precision = "fp32" if self.backend == "eager-fp32" else "fp16"
        progress("Loading model", 0.0)
        model = load(self.model_dir, device=self.device, dtype=torch.float32)
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

        self.tokenizer = load_tokenizer(self.version, self.model_dir)
        self.instruct_model = is_instruct_model(self.version, self.model_dir)
        self._presets = presets_for(self.version, self.instruct_model)
        self.sentence_pause_s = sentence_pause_s
        self._lock = threading.Lock()  # one request at a time per model
        from cosydesk.runtime.host_copy import PinnedCopier

        self._to_host = PinnedCopier(self.model.device)  # used under the lock: one chunk at a time
        self.live_threads: set[threading.Thread] = set()
        progress("Ready", 1.0)

    # -- what the model offers ----------------------------------------------------------------------------
    def speakers(self) -> list[str]:
        return list(self.model.spk2info.keys())

    def styles(self) -> list[str]:
        return [preset.label for preset in self._presets]

    def style_presets(self) -> list[StylePreset]:
        return list(self._presets)

    def supports(self, mode: str) -> bool:
        return {
            "sft": bool(self.model.spk2info),
            "zero_shot": True,
            "cross_lingual": True,
            "instruct": self.version == "v1" and self.instruct_model,
            "instruct2": self.version in ("v2", "v3"),
        }.get(mode, False)

    # -- text -------------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def _ids(self, text: str):
        import torch

        return torch.tensor([self.encode(text)], dtype=torch.int32)

    def sentences(self, text: str) -> list[str]:
        """Every synthesis segment of ``text`` (normalised); ``segments`` yields them lazily with their spans."""
        return [segment.text for segment in self.segments(text)]

    def segments(self, text: str) -> Iterator[Segment]:
        """The synthesis segments of ``text``, normalised one at a time (a 100,000-character text starts as fast
        as one sentence), each with its span in ``text``. Empty and unpronounceable texts raise EmptyTextError:
        the cheap checks at once, "nothing pronounceable after normalisation" when the text turns out so."""
        from cosydesk.frontend.text import is_only_punctuation

        if text is None or not text.strip():
            raise EmptyTextError("the text is empty: type something to say")
        kept = [i for i, ch in enumerate(text) if _pronounceable_char(ch)]
        cleaned = "".join(text[i] for i in kept)
        if is_only_punctuation(re.sub(r"\s+", "", cleaned)):
            raise EmptyTextError("the text holds only punctuation, symbols or emoji: there is nothing to pronounce")
        return self._pronounceable_segments(cleaned, kept)

    def _pronounceable_segments(self, cleaned: str, kept: list[int]) -> Iterator[Segment]:
        from cosydesk.frontend.segments import iter_segments
        from cosydesk.frontend.text import is_only_punctuation

        found = False
        for segment in iter_segments(cleaned, self.version, self.encode):
            if not segment.text.strip() or is_only_punctuation(re.sub(r"\s+", "", segment.text)):
                continue
            found = True
            # spans into the caller's text, not the cleaned copy (control characters were dropped)
            yield Segment(segment.text, kept[segment.start], kept[segment.end - 1] + 1)
        if not found:
            raise EmptyTextError("the text holds nothing pronounceable after normalisation")

    def notices(self, request: Request) -> list[str]:
        """Advice about a request that will still be synthesised (shown by the CLI and the app)."""
        found = []
        if self.version == "v3" and re.search(r"[\u3040-\u309f]", request.text or ""):
            found.append("CosyVoice3 reads Japanese reliably only in katakana: convert hiragana/kanji to katakana "
                         "for correct pronunciation")
        if request.speed != 1.0 and request.stream:
            found.append("speed changes are applied per sentence without streaming (as in the official code)")
        return found

    # -- voices -----------------------------------------------------------------------------------------
    @functools.cached_property
    def _prompt_models(self):
        from cosydesk.frontend.prompt import SpeakerEncoder, SpeechTokenizer

        campplus = self.model_dir / "campplus.onnx"
        tokenizer_name = {"v1": "speech_tokenizer_v1.onnx", "v2": "speech_tokenizer_v2.onnx", "v3": "speech_tokenizer_v3.onnx"}[self.version]
        for path in (campplus, self.model_dir / tokenizer_name):
            if not path.is_file():
                raise PromptError(f"{path.name} is missing from {self.model_dir}: zero-shot voices need it")
        loaded = []
        for cls, path in ((SpeakerEncoder, campplus), (SpeechTokenizer, self.model_dir / tokenizer_name)):
            try:
                loaded.append(cls(path))
            except Exception as err:  # noqa: BLE001 - onnxruntime raises its own types for damaged files
                raise PromptError(f"{path.name} in {self.model_dir} cannot be loaded ({type(err).__name__}): "
                                  "the file is damaged; download the model again") from err
        return tuple(loaded)

    @functools.lru_cache(maxsize=16)
    def _prompt_features(self, wav_path: str, mtime: float, transcript: str):
        from cosydesk.frontend.prompt import build_zero_shot_prompt

        encoder, speech_tokenizer = self._prompt_models
        return build_zero_shot_prompt(
            transcript, wav_path, version=self.version, sample_rate=self.sample_rate,
            tokenizer=self.tokenizer, speaker_encoder=encoder, speech_tokenizer=speech_tokenizer,
        )

    def prompt_features(self, wav_path: str, transcript: str):
        path = Path(wav_path).expanduser()
        if not path.is_file():
            raise PromptError(f"prompt audio {path} does not exist")
        features = self._prompt_features(str(path), path.stat().st_mtime, transcript)
        for name in ("speech_feat", "embedding"):
            if not _all_finite(getattr(features, name)):
                what = "speaker embedding (campplus.onnx)" if name == "embedding" else "mel features"
                raise PromptError(f"the {what} of {path.name} came out as NaN/inf: the recording's samples are far "
                                  "outside -1..1 or campplus.onnx is damaged; use a normal recording")
        return features

    def _voice_inputs(self, request: Request, instruct: str | None) -> dict:
        """Prompt tensors common to every sentence of the request (official frontend_* semantics)."""
        import torch

        empty_ids = torch.zeros(1, 0, dtype=torch.int32)
        empty_emb = torch.zeros(0, 192)
        empty_feat = torch.zeros(1, 0, 80)
        if request.prompt_wav:
            transcript = request.prompt_text or ""
            prompt = self.prompt_features(request.prompt_wav, self._prompt_transcript(transcript))
            voice = dict(
                prompt_text=prompt.prompt_text_ids, llm_prompt_speech_token=prompt.speech_token, llm_embedding=prompt.embedding,
                flow_prompt_speech_token=prompt.speech_token, prompt_speech_feat=prompt.speech_feat, flow_embedding=prompt.embedding,
            )
            if not transcript.strip():  # cross-lingual: no prompt in the LLM
                voice.update(prompt_text=empty_ids, llm_prompt_speech_token=empty_ids)
            if instruct:
                voice.update(prompt_text=self._ids(self._instruct_text(instruct)), llm_prompt_speech_token=empty_ids)
            return voice
        speakers = self.speakers()
        name = request.speaker or (speakers[0] if speakers else None)
        if name is None:
            raise UnknownSpeakerError("this model has no built-in speakers: choose a voice profile (prompt audio + transcript)")
        if name not in self.model.spk2info:
            raise UnknownSpeakerError(f"unknown speaker {name!r}; this model offers: {', '.join(speakers) or 'none'}")
        entry = self.model.spk2info[name]
        broken = [key for key, value in entry.items() if not _all_finite(value)]
        if broken:
            raise UnknownSpeakerError(f"speaker {name!r} in {self.model_dir / 'spk2info.pt'} is damaged ({broken[0]} "
                                      "holds NaN/inf values): choose another voice or download the model again")
        if "prompt_speech_feat" in entry:  # a saved zero-shot speaker
            voice = dict(
                prompt_text=entry["prompt_text"], llm_prompt_speech_token=entry["llm_prompt_speech_token"],
                llm_embedding=entry["llm_embedding"], flow_prompt_speech_token=entry["flow_prompt_speech_token"],
                prompt_speech_feat=entry["prompt_speech_feat"], flow_embedding=entry["flow_embedding"],
            )
            if instruct:
                voice.update(prompt_text=self._ids(self._instruct_text(instruct)), llm_prompt_speech_token=empty_ids)
            return voice
        embedding = entry["embedding"].reshape(1, -1).float()
        voice = dict(prompt_text=empty_ids, llm_prompt_speech_token=empty_ids, llm_embedding=embedding,
                     flow_prompt_speech_token=empty_ids, prompt_speech_feat=empty_feat, flow_embedding=embedding)
        if instruct:
            if not self.supports("instruct") and self.version == "v1":
                raise UnsupportedModeError("this model has no instruct mode: use CosyVoice-300M-Instruct for styles")
            if self.version != "v1":
                raise UnsupportedModeError("styles need a voice profile (prompt audio) with this model, not an SFT speaker")
            # official frontend_instruct: the LLM gets no speaker embedding (information leakage)
            voice.update(prompt_text=self._ids(self._instruct_text(instruct)), llm_embedding=empty_emb)
        return voice

    def _prompt_transcript(self, transcript: str) -> str:
        if self.version == "v3" and transcript and ENDOFPROMPT not in transcript:
            return f"{V3_SYSTEM_PROMPT}{ENDOFPROMPT}{transcript}"
        return transcript

    def _instruct_text(self, instruct: str) -> str:
        text = resolve_instruct(instruct.strip(), self._presets).replace(ENDOFPROMPT, "")
        if self.version == "v3":
            text = f"{V3_SYSTEM_PROMPT} {text}"
        return text + ENDOFPROMPT

    # -- synthesis --------------------------------------------------------------------------------------
    def _token_source(self, request: Request):
        import torch

        from cosydesk.model.sampling import RepetitionAwareSampler, filter_silent_tokens, generate_speech_tokens
        from cosydesk.runtime.host_sampler import HostSampler

        llm = self.model.llm
        sampler = HostSampler(RepetitionAwareSampler.for_model_config(self.model.config))
        seed = request.seed
        silent = getattr(llm, "silent_tokens", None)
        # the cudagraph LLM chooses ids on the device (its own copy of the same sampler) and runs ahead of the host
        generate = getattr(llm, "generate_speech_tokens", None)

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

    def _sentence_inputs(self, sentence: str, voice: dict):
        import torch

        from cosydesk.runtime.pipeline import SentenceInputs

        text_ids = self._ids(sentence)
        prompt_text = voice["prompt_text"]
        if self.version == "v3":
            endofprompt = self.encode(ENDOFPROMPT)
            joined = prompt_text.flatten().tolist() + text_ids.flatten().tolist()
            if not any(joined[i:i + len(endofprompt)] == endofprompt for i in range(len(joined))):
                prompt_text = torch.cat([self._ids(f"{V3_SYSTEM_PROMPT}{ENDOFPROMPT}"), prompt_text], dim=1)
        return SentenceInputs(
            text=text_ids, prompt_text=prompt_text.to(torch.int32),
            llm_prompt_speech_token=voice["llm_prompt_speech_token"].to(torch.int32), llm_embedding=voice["llm_embedding"],
            flow_prompt_speech_token=voice["flow_prompt_speech_token"].to(torch.int32),
            prompt_speech_feat=voice["prompt_speech_feat"], flow_embedding=voice["flow_embedding"],
        )

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[AudioChunk]:
        """Yield audio chunks as they are ready; raises SynthesisError subclasses for bad input."""
        from cosydesk.runtime.pipeline import Cancelled, run_abandonable, run_sentence

        submit = time.perf_counter()
        if not isinstance(request, Request):
            raise SynthesisError("stream() takes a cosydesk.runtime.Request")
        if not (0.5 <= request.speed <= 2.0):
            raise SynthesisError(f"speed {request.speed} is outside 0.5-2.0")
        segments = self.segments(request.text)
        first = next(segments)  # text errors before voice errors, as before; the rest is normalised as needed
        sentences = _with_last(itertools.chain([first], segments))
        instruct = request.instruct.strip() if request.instruct and request.instruct.strip() else None
        try:  # prompt features run ONNX models that may never return: Stop abandons them (run_abandonable)
            voice = (run_abandonable(lambda: self._voice_inputs(request, instruct), cancel, "cosydesk-prompt")
                     if request.prompt_wav else self._voice_inputs(request, instruct))
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
                    inputs = self._sentence_inputs(sentence, voice)
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
                                         sentence_index=s_index, span=(segment.start, segment.end),
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
