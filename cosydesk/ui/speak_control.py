"""The main window's speaking: Speak, Stop, Pause, replay from history, and the worker's job signals.

What it is for: turning the editor's text and the chosen voice into a Request, handing it to the SynthController,
and reacting to its jobStarted / chunkReady / jobFailed / jobFinished signals (history entries included).
A mixin of MainWindow.

What it must not do: call the Synthesizer or wait on the worker thread or PortAudio.
"""

from __future__ import annotations

import time
from pathlib import Path

from cosydesk.runtime.types import Request
from cosydesk.ui.error_text import translate_message
from cosydesk.ui.voice_bar import PROFILE
from cosydesk.ui.worker import ChunkInfo, SentenceCount, UtteranceResult


class SpeakControl:
    """Mixin of MainWindow: speaking and playback control."""

    def text_to_speak(self) -> str:
        return self._text_and_offset()[0]

    def _text_and_offset(self) -> tuple[str, int]:
        """The selection (if it holds more than blanks) or the whole text, and where it starts in the editor."""
        cursor = self.text_edit.textCursor()
        selected = cursor.selectedText().replace("\u2029", "\n")
        if selected.strip():
            return selected, cursor.selectionStart()
        return self.text_edit.toPlainText(), 0

    def build_request(self, text: str) -> Request:
        voice = self.current_voice()
        kwargs: dict = {"text": text, "instruct": self.current_instruct(), "speed": round(self.speed_spin.value(), 2)}
        if voice and voice[0] == PROFILE:
            profile = self.voices.get(voice[1])
            if profile is not None:
                kwargs.update(prompt_wav=str(profile.wav_path), prompt_text=profile.transcript)
        elif voice:
            kwargs["speaker"] = voice[1]
        return Request(**kwargs)

    def speak(self) -> int | None:
        text, offset = self._text_and_offset()
        return self._speak_text(text, offset, time.perf_counter())

    def speak_from(self, offset: int) -> int | None:
        """Read the editor's text from ``offset`` on (play from cursor, next / previous / repeat sentence)."""
        pressed_at = time.perf_counter()
        text = self.text_edit.toPlainText()
        offset = max(0, min(int(offset), len(text)))
        while offset < len(text) and text[offset].isspace():
            offset += 1
        if not text[offset:].strip():  # past the last sentence: the reading is over
            self.stop()
            return None
        return self._speak_text(text[offset:], offset, pressed_at)

    def _speak_text(self, text: str, offset: int, pressed_at: float) -> int | None:
        if not text.strip():
            self.show_message(self.tr("Type something to say first."), True)
            return None
        if self.state in ("no_model",) or (self.model is None and self.state != "loading"):
            self.show_message(self.tr("No model is loaded: choose or download one with “Models…”."), True)
            return None
        self.show_message("", False)
        request = self.build_request(text)
        self._remember_voice()
        if self.model is None:  # still loading: speak as soon as it is ready
            self._pending_request = request
            self._pending_offset = offset
            return None
        self.current_job = self.heard_job = self.controller.speak(request, pressed_at)
        voice = self.current_voice()
        self.exports.spoken(self.current_job, request, voice[1] if voice else "",
                            Path(self.model.model_dir).name if self.model else "")
        self.reading.start(self.current_job, self.text_edit.toPlainText(), offset)
        self._set_state("speaking")
        return self.current_job

    def stop(self) -> None:
        self._pending_request = None
        self.controller.stop()
        if self.current_job is not None:
            self.reading.finish(self.current_job)
        self.current_job = None
        if self.state == "speaking":
            self._set_state("ready")
        self._update_controls()

    def toggle_pause(self) -> None:
        """Pause the audio where it is (synthesis goes on into the queue) or resume it; nothing while silent."""
        if self.player.paused:
            self.player.resume()
        else:
            self.player.pause()
        self._update_controls()

    def replay(self, entry_id: str) -> None:
        try:
            pcm, rate = self.history.audio(entry_id)
        except (KeyError, OSError) as error:
            self.show_message(str(error), True)
            return
        if self.current_job is not None:
            self.reading.finish(self.current_job)
        self.current_job = self.controller.replay(pcm, rate)
        self._set_state("speaking")

    def _on_job_started(self, job_id: int) -> None:
        if job_id == self.current_job:
            self._set_state("speaking")

    def _on_chunk(self, info: ChunkInfo) -> None:
        if info.job_id == self.current_job:
            self.reading.on_chunk(info)

    def _on_sentences_counted(self, count: SentenceCount) -> None:
        self.reading.on_count(count)

    def _on_buffering(self, job_id: int, holding: bool) -> None:
        self.reading.on_buffering(job_id, holding)
        self._update_status()

    def speaking_status(self) -> str:
        """What the status line says while speaking: buffering, or the first audio's delay once it was heard
        (key press to the first sample handed to the audio device)."""
        buffering = self.reading.status_text()
        if buffering:
            return buffering
        first_ms = self.controller.first_audio_ms(getattr(self, "heard_job", None))
        if first_ms is None:
            return self.tr("Speaking…")
        return self.tr("Speaking… first audio after {ms} ms").format(ms=f"{first_ms:.0f}")

    def _on_job_failed(self, job_id: int, message: str) -> None:
        if job_id == self.current_job:
            self.show_message(message, True)

    def _on_job_finished(self, result: UtteranceResult) -> None:
        if not result.extra.get("replay"):
            self.exports.job_finished(result)  # history (a stopped one marked partial), waiting exports
        if result.job_id != self.current_job:
            return
        self.current_job = None
        self.reading.synthesis_done(result.job_id)  # the highlight goes on until the audio has been heard
        if self.state == "speaking" and not self.player.is_playing:
            self._set_state("ready")  # else once the audio has been heard (_tick)

    def _on_audio_error(self, message: str) -> None:
        self.show_message(self.tr("Audio: {m}").format(m=translate_message(message)), True)
