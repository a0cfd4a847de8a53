"""Utterance history on disk: <user data>/history/index.json plus one WAV per utterance.

What it is for: the history panel (replay, export, delete) and surviving restarts. Writes are atomic
(temp file + os.replace), so a crash never leaves a half-written index.

What it must not do: import Qt (it is plain storage; the panel lives in history_panel.py).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from cosydesk.atomic_file import write_atomically
from cosydesk.audio.export import read_audio, write_audio


@dataclass
class HistoryEntry:
    id: str
    created: float
    text: str
    voice: str
    style: str
    model: str
    duration_s: float
    first_audio_ms: float | None
    rtf: float | None
    sample_rate: int
    file: str  # WAV name inside the history folder


class HistoryStore:
    def __init__(self, root: str | Path, max_entries: int = 500) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_entries = max_entries
        self._entries: list[HistoryEntry] = self._read_index()

    @property
    def index_path(self) -> Path:
        return self.root / "index.json"

    def _read_index(self) -> list[HistoryEntry]:
        try:
            raw = json.loads(self.index_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            # A damaged index must not stop the app; keep it aside for inspection and start afresh.
            self.index_path.replace(self.root / f"index.damaged-{int(time.time())}.json")
            return []
        entries = []
        for item in raw if isinstance(raw, list) else []:
            try:
                entry = HistoryEntry(**item)
            except TypeError:
                continue
            if (self.root / entry.file).is_file():
                entries.append(entry)
        return entries

    def _write_index(self) -> None:
        data = json.dumps([asdict(e) for e in self._entries], ensure_ascii=False, indent=1)
        write_atomically(self.index_path, data)

    def entries(self) -> list[HistoryEntry]:
        """Newest first."""
        return list(reversed(self._entries))

    def get(self, entry_id: str) -> HistoryEntry | None:
        return next((e for e in self._entries if e.id == entry_id), None)

    def add(self, text: str, pcm: np.ndarray, sample_rate: int, voice: str = "", style: str = "", model: str = "",
            first_audio_ms: float | None = None, rtf: float | None = None) -> HistoryEntry:
        entry_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        file = f"{entry_id}.wav"
        samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
        write_audio(self.root / file, samples, sample_rate, subtype="FLOAT", durable=False)
        entry = HistoryEntry(id=entry_id, created=time.time(), text=text, voice=voice, style=style, model=model,
                             duration_s=round(len(samples) / sample_rate, 3),
                             first_audio_ms=None if first_audio_ms is None else round(first_audio_ms, 1),
                             rtf=None if rtf is None or not np.isfinite(rtf) else round(float(rtf), 4),
                             sample_rate=int(sample_rate), file=file)
        self._entries.append(entry)
        while len(self._entries) > self.max_entries:
            old = self._entries.pop(0)
            (self.root / old.file).unlink(missing_ok=True)
        self._write_index()
        return entry

    def audio(self, entry_id: str) -> tuple[np.ndarray, int]:
        entry = self.get(entry_id)
        if entry is None:
            raise KeyError(f"no history entry {entry_id}")
        return read_audio(self.root / entry.file)

    def export(self, entry_id: str, path: str | Path) -> Path:
        pcm, rate = self.audio(entry_id)
        return write_audio(path, pcm, rate)

    def delete(self, entry_id: str) -> bool:
        entry = self.get(entry_id)
        if entry is None:
            return False
        self._entries.remove(entry)
        self._write_index()
        (self.root / entry.file).unlink(missing_ok=True)
        return True

    def clear(self) -> None:
        for entry in self._entries:
            (self.root / entry.file).unlink(missing_ok=True)
        self._entries = []
        self._write_index()
