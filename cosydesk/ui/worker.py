"""The synthesis worker: a QObject living on its own QThread that owns the Synthesizer.

What it is for: loading and warming up a model, running one request at a time and feeding the audio
player from this thread (so audio never waits for the UI), and reporting progress, chunks, errors and
results to the UI through signals. Cancellation is a threading.Event per job, set directly by the UI
thread (a queued signal would wait behind the running job).

What it must not do: touch widgets, or let the UI thread call into the Synthesizer. It depends only on
the Synthesizer interface (constructor, version, sample_rate, device, backend, speakers, styles,
supports, stream), so tests can hand it a fake through `synthesizer_factory`.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot

from cosydesk.audio.player import AudioDeviceError, Player
from cosydesk.audio.subtitles import SentenceRange, SentenceTimeline
from cosydesk.runtime.types import Request
from cosydesk.serve.turns import GatedSynth, TurnGate
from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.ui.error_text import sentence_case

WARMUP_TEXT = "Hello."
# Measured chunk RTF (compute time / audio time, smoothed) above which synthesis cannot keep up with playback:
# each sentence is then buffered whole before it is played, so pauses fall between sentences, never inside one.
KEEP_UP_RTF = 0.95
RTF_SMOOTHING = 0.3  # weight of the newest chunk in the running estimate
UI_SWITCH_INTERVAL_S = 0.001  # how long a thread may hold the GIL while another waits (sys.setswitchinterval)


@dataclass
class ModelSummary:
    model_dir: str
    version: str
    sample_rate: int
    device: str
    backend: str
    speakers: list[str]
    styles: list[str]
    style_labels_zh: dict[str, str]
    modes: dict[str, bool]
    load_s: float
    styled_speakers: list[str] = field(default_factory=list)  # built-in speakers a style works with
    options: dict[str, str] = field(default_factory=dict)  # the device/backend/precision asked for


@dataclass
class ChunkInfo:
    job_id: int
    index: int
    audio_s: float
    compute_s: float
    first_audio_ms: float | None  # set on the first chunk only: key press to this chunk being ready
    sentence_index: int = 0
    span: tuple[int, int] | None = None  # of the request's text (AudioChunk.span)
    start_frame: int = 0  # where the chunk starts in the utterance's audio (samples)


@dataclass
class UtteranceResult:
    job_id: int
    request: Request | None
    pcm: np.ndarray
    sample_rate: int
    first_audio_ms: float | None
    audio_s: float
    wall_s: float
    chunks: int
    cancelled: bool = False
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    sentences: list[SentenceRange] = field(default_factory=list)  # each sentence's samples in pcm (subtitles)

    @property
    def rtf(self) -> float:
        return self.wall_s / self.audio_s if self.audio_s > 0 else float("nan")


def _default_factory(model_dir: str, progress: Callable[[str, float], None], **options):
    from cosydesk.runtime import Synthesizer

    return Synthesizer(model_dir, progress=progress, **options)


def _default_folder_check(model_dir: str) -> None:
    from cosydesk.runtime.synthesizer import check_model_folder

    check_model_folder(model_dir)


def _describe(error: BaseException) -> str:
    if isinstance(error, (ValueError, OSError, AudioDeviceError)):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


def _styled_speakers(synth) -> list[str]:
    """The built-in speakers a style (instruct text) works with: every one on a v1 Instruct model; on v2/v3 only
    the saved zero-shot speakers (an entry with prompt audio features), as Synthesizer._voice_inputs rules."""
    speakers = list(synth.speakers())
    if synth.supports("instruct"):
        return speakers
    table = getattr(getattr(synth, "model", None), "spk2info", None) or {}
    return [name for name in speakers if isinstance(table.get(name), dict) and "prompt_speech_feat" in table[name]]


class SynthWorker(QObject):
    loadProgress = Signal(str, float)
    loaded = Signal(object)  # ModelSummary
    loadFailed = Signal(str)
    loadRefused = Signal(str)  # the folder failed its checks; the model loaded before stays loaded
    warmingUp = Signal()
    warmedUp = Signal(float)  # seconds
    jobStarted = Signal(int)
    chunkReady = Signal(object)  # ChunkInfo
    jobFailed = Signal(int, str)
    jobFinished = Signal(object)  # UtteranceResult
    audioError = Signal(str)
    bufferingChanged = Signal(int, bool)  # job id, holding a sentence back while the player is silent
    reloadFailed = Signal(str)  # a model could not be (re)loaded; the one loaded before stays in use

    def __init__(self, synthesizer_factory=None, player: Player | None = None,
                 recorder: LatencyRecorder | None = None, warmup: bool = True) -> None:
        super().__init__()
        self._factory = synthesizer_factory or _default_factory
        self.player = player
        self.recorder = recorder or LatencyRecorder()
        self.warmup = warmup
        self.synth = None
        # every file of a folder is checked (no allocation) before the loaded model is dropped for it
        self.folder_check = _default_folder_check if synthesizer_factory is None else None
        # The app's speech and the in-app speech server (ui/serve_switch.py) take turns on the one model.
        self.gate = TurnGate()
        self.summary: ModelSummary | None = None
        self.rtf_estimate: float | None = None  # smoothed chunk RTF measured on this model (warm-up included)
        self.audio_tokens: dict[int, int] = {}  # job id -> player token (read by the UI thread)

    # -- model ----------------------------------------------------------------------------------------
    @Slot(str, dict)
    def load(self, model_dir: str, options: dict) -> None:
        """Load ``model_dir``; the model in use stays loaded until the new one has loaded. A folder that fails its
        checks is refused before anything is loaded (loadRefused); when loading fails, a model already loaded
        stays in use (reloadFailed with the reason) instead of leaving none (loadFailed)."""
        start = time.perf_counter()
        if self.folder_check is not None and self.synth is not None:
            try:
                self.folder_check(model_dir)
            except Exception as error:  # noqa: BLE001 - every refusal becomes a message
                self.loadRefused.emit(f"Cannot load {Path(model_dir).name}: {_describe(error)}")
                return
        try:
            with self.gate.turn(who="loading"):  # a server request on the old model ends first
                synth = GatedSynth(self._factory(model_dir, progress=self.loadProgress.emit, **options), self.gate,
                                   who="app")
        except Exception as error:  # noqa: BLE001 - every load failure becomes a message
            message = f"Cannot load {Path(model_dir).name}: {_describe(error)}"
            if self.synth is not None and self.summary is not None:
                self.reloadFailed.emit(message)
            else:
                self.loadFailed.emit(message)
            return
        self.synth, self.summary, self.rtf_estimate = synth, None, None
        styles = list(synth.styles())
        labels_zh = {}
        for preset in getattr(synth, "style_presets", lambda: [])():
            labels_zh[preset.label] = preset.label_zh
        modes = {m: bool(synth.supports(m)) for m in ("sft", "zero_shot", "instruct", "instruct2")}
        self.summary = ModelSummary(
            model_dir=str(model_dir), version=synth.version, sample_rate=int(synth.sample_rate),
            device=str(synth.device), backend=str(synth.backend), speakers=list(synth.speakers()), styles=styles,
            style_labels_zh=labels_zh, modes=modes, load_s=time.perf_counter() - start,
            styled_speakers=_styled_speakers(synth), options={k: str(v) for k, v in options.items()})
        self.loaded.emit(self.summary)
        if self.warmup:
            self._warm_up(synth)

    def _warm_up(self, synth) -> None:
        self.warmingUp.emit()
        start = time.perf_counter()
        try:
            if hasattr(synth, "warmup"):
                synth.warmup()
            elif synth.speakers():
                for _ in synth.stream(Request(WARMUP_TEXT, speaker=synth.speakers()[0])):
                    pass
        except Exception:  # noqa: BLE001 - a failed warm-up only costs speed on the first request
            traceback.print_exc()
        self.warmedUp.emit(time.perf_counter() - start)

    @Slot()
    def unload(self) -> None:
        self.synth = self.summary = None

    # -- jobs -----------------------------------------------------------------------------------------
    @Slot(int, object, object, float)
    def speak(self, job_id: int, request: Request, cancel: threading.Event, pressed_at: float = 0.0) -> None:
        """Synthesise ``request`` into the player. ``pressed_at``: perf_counter of the key press that asked for it
        (first audio is measured from there). When the measured chunk RTF says synthesis cannot keep up, each
        sentence is held back until it is complete (bufferingChanged), so playback never pauses inside one."""
        if cancel.is_set():  # stopped (or superseded) before it began: nothing to say
            self.jobFinished.emit(UtteranceResult(job_id, request, np.zeros(0, np.float32), 0, None, 0.0, 0.0, 0,
                                                  cancelled=True))
            return
        synth = self.synth
        if synth is None:
            message = "No model is loaded: choose one in the model list"
            self.jobFailed.emit(job_id, message)
            self.jobFinished.emit(UtteranceResult(job_id, request, np.zeros(0, np.float32), 0, None, 0.0, 0.0, 0,
                                                  error=message))
            return
        self.jobStarted.emit(job_id)
        rate = int(synth.sample_rate)
        token = self._begin_audio(rate)
        self.audio_tokens = {job_id: token} if token is not None else {}
        start = time.perf_counter()
        pressed_at = pressed_at or start
        last = start
        pieces: list[np.ndarray] = []
        timeline = SentenceTimeline()
        held: list[np.ndarray] = []  # the sentence being buffered (synthesis slower than real time)
        held_sentence = -1
        buffering = False
        frames = 0
        first_audio_ms = None
        error = None
        try:
            for chunk in synth.stream(request, cancel):
                now = time.perf_counter()
                if cancel.is_set():
                    break
                pcm = np.asarray(chunk.pcm, dtype=np.float32).reshape(-1)
                audio_s = len(pcm) / rate
                sentence = int(getattr(chunk, "sentence_index", 0) or 0)
                if first_audio_ms is None:
                    first_audio_ms = (now - pressed_at) * 1000.0
                self._measure(now - last, audio_s)
                self.recorder.record_chunk(audio_s, now - last)
                self.chunkReady.emit(ChunkInfo(job_id, len(pieces), audio_s, now - last,
                                               first_audio_ms if not pieces else None, sentence,
                                               getattr(chunk, "span", None), frames))
                pieces.append(pcm)
                timeline.add(chunk.sentence_index, chunk.span, len(pcm), len(request.text))
                frames += len(pcm)
                if held and sentence != held_sentence:  # the held sentence is complete: play it whole
                    token = self._play(np.concatenate(held), token, cancel)
                    held = []
                slow = self.rtf_estimate is not None and self.rtf_estimate > KEEP_UP_RTF
                if held or (slow and self.player is not None):
                    held.append(pcm)
                    held_sentence = sentence
                else:
                    token = self._play(pcm, token, cancel)
                buffering = self._set_buffering(job_id, bool(held), buffering)
                if cancel.is_set():  # stopped while writing: do not compute another chunk of it
                    break
                last = time.perf_counter()
            if held and not cancel.is_set():
                token = self._play(np.concatenate(held), token, cancel)
        except Exception as exc:  # noqa: BLE001 - bad input, runtime faults: one message, app stays usable
            error = sentence_case(_describe(exc))  # shown as the message line: a sentence
        finally:
            self._set_buffering(job_id, False, buffering)
            if self.player is not None:
                self.player.wait_for_more(False)
                if token is not None:
                    self.player.end(token)
        wall_s = time.perf_counter() - start
        pcm = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        cancelled = cancel.is_set()
        device_first = self.player.first_sample_time(token) if self.player is not None else None
        if device_first is not None:
            first_audio_ms = (device_first - pressed_at) * 1000.0
        result = UtteranceResult(job_id, request, pcm, rate, first_audio_ms, len(pcm) / rate, wall_s, len(pieces),
                                 cancelled=cancelled, error=error, sentences=timeline.ranges)
        if pieces and first_audio_ms is not None:
            self.recorder.record_utterance(first_audio_ms, result.rtf, result.audio_s, len(pieces), cancelled)
        if error is not None:
            self.jobFailed.emit(job_id, error)
        self.jobFinished.emit(result)

    def _measure(self, compute_s: float, audio_s: float) -> None:
        if audio_s <= 0:
            return
        rtf = compute_s / audio_s
        previous = self.rtf_estimate
        self.rtf_estimate = rtf if previous is None else (1 - RTF_SMOOTHING) * previous + RTF_SMOOTHING * rtf

    def _set_buffering(self, job_id: int, holding: bool, was: bool) -> bool:
        if self.player is not None:
            self.player.wait_for_more(holding)
        if holding != was:
            self.bufferingChanged.emit(job_id, holding)
        return holding

    @Slot(int, object, int, object)
    def replay(self, job_id: int, pcm: np.ndarray, sample_rate: int, cancel: threading.Event) -> None:
        """Play stored audio through the same path (backpressure and cancel included)."""
        if cancel.is_set():
            return
        self.jobStarted.emit(job_id)
        token = self._begin_audio(sample_rate)
        step = max(1, sample_rate // 2)
        for offset in range(0, len(pcm), step):
            if cancel.is_set() or token is None:
                break
            token = self._play(pcm[offset:offset + step], token, cancel)
        if self.player is not None and token is not None:
            self.player.end(token)
        self.jobFinished.emit(UtteranceResult(job_id, None, np.zeros(0, np.float32), sample_rate, None, 0.0, 0.0, 0,
                                              cancelled=cancel.is_set(), extra={"replay": True}))

    # -- audio ------------------------------------------------------------------------------------------
    def _begin_audio(self, rate: int) -> int | None:
        if self.player is None:
            return None
        return self.player.begin(rate)

    def _play(self, pcm: np.ndarray, token: int | None, cancel: threading.Event) -> int | None:
        """Write to the player; on a device error report once and keep synthesising silently."""
        if self.player is None or token is None:
            return token
        try:
            self.player.write(pcm, token, cancel=cancel)
            return token
        except AudioDeviceError as error:
            self.audioError.emit(str(error))
            return None


class SynthController(QObject):
    """The UI's handle on the worker thread. All methods are for the UI thread and return at once."""

    _loadRequested = Signal(str, dict)
    _speakRequested = Signal(int, object, object, float)
    _replayRequested = Signal(int, object, int, object)
    _unloadRequested = Signal()
    loadStarting = Signal(str)  # emitted on the UI thread by load(), before the worker drops the old model

    def __init__(self, synthesizer_factory=None, player: Player | None = None,
                 recorder: LatencyRecorder | None = None, warmup: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # The UI thread shares the GIL with synthesis's Python glue. At Python's default 5 ms switch interval each
        # of a repaint's returns from Qt into Python could wait 5 ms for the GIL: a 100,000-character reading
        # blocked the UI 60-120 ms; at 1 ms, no longer than the UI's own work (tests/ui/test_long_text_ui_gap.py).
        sys.setswitchinterval(min(sys.getswitchinterval(), UI_SWITCH_INTERVAL_S))
        self.player = player
        self.thread = QThread()
        self.thread.setObjectName("cosydesk-synthesis")
        self.worker = SynthWorker(synthesizer_factory, player, recorder, warmup)
        self.recorder = self.worker.recorder
        self.worker.moveToThread(self.thread)
        self._loadRequested.connect(self.worker.load)
        self._speakRequested.connect(self.worker.speak)
        self._replayRequested.connect(self.worker.replay)
        self._unloadRequested.connect(self.worker.unload)
        self.worker.jobFinished.connect(self._forget)
        self._ids = itertools.count(1)
        self._cancels: dict[int, threading.Event] = {}
        self._pressed_at: dict[int, float] = {}
        self.thread.start()

    @property
    def pending_jobs(self) -> int:
        return len(self._cancels)

    def load(self, model_dir: str, **options) -> None:
        self.stop()
        self.loadStarting.emit(str(model_dir))
        self._loadRequested.emit(str(model_dir), options)

    def speak(self, request: Request, pressed_at: float | None = None) -> int:
        """Queue a request; anything still running or queued is cancelled first. Returns the job id.
        ``pressed_at``: perf_counter of the key press (first audio is measured from it; default: now)."""
        pressed_at = time.perf_counter() if pressed_at is None else pressed_at
        self.stop()
        job_id = next(self._ids)
        cancel = threading.Event()
        self._cancels[job_id] = cancel
        self._pressed_at[job_id] = pressed_at
        self._speakRequested.emit(job_id, request, cancel, pressed_at)
        return job_id

    def first_audio_ms(self, job_id: int | None) -> float | None:
        """Key press to the job's first sample handed to the audio device (None until that has happened)."""
        token = self.worker.audio_tokens.get(job_id) if job_id is not None else None
        pressed = self._pressed_at.get(job_id)
        played = self.player.first_sample_time(token) if self.player is not None and token is not None else None
        return (played - pressed) * 1000.0 if played is not None and pressed is not None else None

    def frames_played(self, job_id: int | None) -> int | None:
        """Samples of the job's audio the device has played (None when it is not the one playing)."""
        token = self.worker.audio_tokens.get(job_id) if job_id is not None else None
        return self.player.utterance_frames_played(token) if self.player is not None and token is not None else None

    def replay(self, pcm: np.ndarray, sample_rate: int) -> int:
        self.stop()
        job_id = next(self._ids)
        cancel = threading.Event()
        self._cancels[job_id] = cancel
        self._replayRequested.emit(job_id, pcm, sample_rate, cancel)
        return job_id

    def stop(self) -> None:
        """Cancel every job and silence the player now (the worker notices within one chunk)."""
        for cancel in self._cancels.values():
            cancel.set()
        if self.player is not None:
            self.player.stop()

    @Slot(object)
    def _forget(self, result: UtteranceResult) -> None:
        self._cancels.pop(result.job_id, None)
        for job_id in [j for j in self._pressed_at if j < result.job_id]:
            self._pressed_at.pop(job_id, None)

    def shutdown(self, timeout_ms: int = 10000) -> bool:
        """Stop everything and end the thread; True if it ended in time."""
        self.stop()
        self._unloadRequested.emit()
        self.thread.quit()
        ended = self.thread.wait(timeout_ms)
        if self.player is not None:
            self.player.close()
        return ended
