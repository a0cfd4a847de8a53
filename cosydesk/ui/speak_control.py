"""The main window's speaking: Speak, Stop, Pause, replay from history, and the worker's job signals.

What it is for: turning the editor's text and the chosen voice into a Request, handing it to the SynthController,
and reacting to its jobStarted / chunkReady / jobFailed / jobFinished signals (history entries included).
A mixin of MainWindow.

What it must not do: call the Synthesizer or wait on the worker thread or PortAudio.
"""

from __future__ import annotations

from pathlib import Path

from cosydesk.audio.export import ExportError
from cosydesk.runtime.types import Request
from cosydesk.ui.voice_bar import PROFILE
from cosydesk.ui.worker import ChunkInfo, UtteranceResult


class SpeakControl:
    """Mixin of MainWindow: speaking and playback control."""

    def text_to_speak(self) -> str:
        selected = self.text_edit.textCursor().selectedText().replace("\u2029", "\n")
        return selected if selected.strip() else self.text_edit.toPlainText()

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
        text = self.text_to_speak()
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
            return None
        self.current_job = self.controller.speak(request)
        self._set_state("speaking")
        return self.current_job

    def stop(self) -> None:
        self._pending_request = None
        self.controller.stop()
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
        self.current_job = self.controller.replay(pcm, rate)
        self._set_state("speaking")

    def _on_job_started(self, job_id: int) -> None:
        if job_id == self.current_job:
            self._set_state("speaking")

    def _on_chunk(self, info: ChunkInfo) -> None:
        if info.job_id == self.current_job and info.first_audio_ms is not None:
            self.status_state.setText(self.tr("Speaking… first audio after {ms} ms").format(
                ms=f"{info.first_audio_ms:.0f}"))

    def _on_job_failed(self, job_id: int, message: str) -> None:
        if job_id == self.current_job:
            self.show_message(message, True)

    def _on_job_finished(self, result: UtteranceResult) -> None:
        if result.job_id != self.current_job:
            return
        self.current_job = None
        if result.extra.get("replay"):
            pass
        elif len(result.pcm) and not result.cancelled:
            self.last_result = result
            voice = self.current_voice()
            try:
                entry = self.history.add(result.request.text, result.pcm, result.sample_rate,
                                         voice=voice[1] if voice else "", style=result.request.instruct or "",
                                         model=Path(self.model.model_dir).name if self.model else "",
                                         first_audio_ms=result.first_audio_ms, rtf=result.rtf)
                self.history_panel.add_entry(entry)
            except (ExportError, OSError) as error:
                self.show_message(self.tr("Could not save to history: {e}").format(e=error), True)
        if self.state == "speaking":
            self._set_state("ready")

    def _on_audio_error(self, message: str) -> None:
        self.show_message(self.tr("Audio: {m}").format(m=message), True)
