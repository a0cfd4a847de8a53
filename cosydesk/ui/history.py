"""Utterance history on disk: <user data>/history/index.json plus one WAV per utterance.

What it is for: the history panel (replay, export, delete) and surviving restarts. Writes are atomic
(temp file + os.replace), so a crash never leaves a half-written index.

The index is untrusted input (hand-edited, damaged, or written by another CosyDesk): an entry of the wrong
shape is skipped and reported in ``problems``, never fatal, and an entry whose ``file`` is not a plain name
inside the history folder ("../../Documents/x", an absolute path, a symlink out) is never read or deleted,
neither by Delete nor by the cap's pruning. Two app instances may share one data folder: every change is a
read-modify-write of the index under an exclusive lock (index.lock), so neither drops what the other added.

What it must not do: import Qt (it is plain storage; the panel lives in history_panel.py).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from cosydesk.atomic_file import write_atomically
from cosydesk.audio.export import plain_write_error, read_audio, write_audio
from cosydesk.audio.subtitles import SentenceRange, ranges_from_json, whole_text_range
from cosydesk.file_lock import exclusive_lock
from cosydesk.leftovers import remove_leftover_temporaries
from cosydesk.state_files import StateFileError, contained_file, ensure_folder, read_json

log = logging.getLogger(__name__)

INDEX_MAX_BYTES = 32 * 1024 * 1024  # 500 entries of long texts: a few MB
LOCK_FILE = "index.lock"
MAX_UNDO = 20  # deletes that Undo can take back


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
    # added later: optional when reading an older index.json
    speed: float | None = None
    partial: bool = False  # stopped (or failed) before its end: what was synthesised until then
    sentences: list[list[int]] | None = None  # [[start, end, text_start, text_end], ...] samples / characters

    @property
    def sentence_ranges(self) -> list[SentenceRange]:
        """Each sentence's samples (the whole audio as one sentence for entries written before they were kept)."""
        samples = int(round(self.duration_s * self.sample_rate))
        found = ranges_from_json(self.sentences, samples, len(self.text)) if self.sentences else None
        return found or whole_text_range(samples, self.text)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# what each field of an index entry must hold (a check, not a conversion: "12" is not a sample rate)
_CHECKS = {
    "id": lambda v: isinstance(v, str) and 0 < len(v) <= 200,
    "created": _number,
    "text": lambda v: isinstance(v, str),
    "voice": lambda v: isinstance(v, str),
    "style": lambda v: isinstance(v, str),
    "model": lambda v: isinstance(v, str),
    "duration_s": lambda v: _number(v) and v >= 0,
    "first_audio_ms": lambda v: v is None or _number(v),
    "rtf": lambda v: v is None or _number(v),
    "sample_rate": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1_000_000,
    "file": lambda v: isinstance(v, str),
    "speed": lambda v: v is None or (_number(v) and 0 < v <= 10),
    "partial": lambda v: isinstance(v, bool),
    "sentences": lambda v: v is None or (isinstance(v, list) and len(v) <= 100_000),
}
_OPTIONAL = {"first_audio_ms": None, "rtf": None, "speed": None, "partial": False, "sentences": None}
DELETED_PREFIX = ".deleted-"  # audio of an entry deleted this session, kept until undo is no longer offered


def entry_from_json(item: Any, root: Path) -> HistoryEntry:
    """One index entry, checked field by field; ValueError says what is wrong. Extra keys are ignored."""
    if not isinstance(item, dict):
        raise ValueError(f"an entry is a {type(item).__name__}, not an object")
    values = {}
    for spec in fields(HistoryEntry):
        if spec.name not in item and spec.name in _OPTIONAL:
            values[spec.name] = _OPTIONAL[spec.name]
            continue
        if spec.name not in item:
            raise ValueError(f"an entry has no {spec.name!r}")
        if not _CHECKS[spec.name](item[spec.name]):
            raise ValueError(f"an entry's {spec.name!r} is {str(item[spec.name])[:60]!r}")
        values[spec.name] = item[spec.name]
    if contained_file(root, values["file"]) is None:
        raise ValueError(f"an entry's file {values['file'][:80]!r} is not a plain name inside {root}")
    return HistoryEntry(**values)


class HistoryStore:
    def __init__(self, root: str | Path, max_entries: int = 500) -> None:
        self.root = Path(root)
        self.max_entries = max_entries
        self.problems: list[str] = []  # what was wrong with the stored history (for the UI to show), oldest first
        self._index_seen: tuple[int, int] | None = None  # (mtime_ns, size) of the index last read
        self._entries: list[HistoryEntry] = []
        try:
            self._report(ensure_folder(self.root))
            self.available = True
        except OSError as error:
            self.available = False
            self._report(f"the history is off for this session: {self.root} cannot be made a folder "
                         f"({error.strerror or error})")
            return
        remove_leftover_temporaries(self.root)
        self._deleted: list[tuple[int, HistoryEntry]] = []  # (position, entry) for undo, newest last
        self._purge_deleted_audio()  # what an earlier session deleted and could no longer undo
        with self._lock(for_writing=False):
            self._entries = self._read_index()

    @property
    def index_path(self) -> Path:
        return self.root / "index.json"

    def _report(self, problem: str | None) -> None:
        if problem and problem not in self.problems:
            log.warning("history: %s", problem)
            self.problems.append(problem)

    @contextmanager
    def _lock(self, for_writing: bool = True) -> Iterator[None]:
        """Exclusive between processes. A read in a folder where the lock file cannot be made (read-only) goes
        ahead unlocked: the index is only ever replaced whole, so a reader never sees half of it."""
        try:
            lock = exclusive_lock(self.root / LOCK_FILE)
            lock.__enter__()
        except OSError:
            if for_writing:
                raise
            yield
            return
        try:
            yield
        finally:
            lock.__exit__(None, None, None)

    def _index_stamp(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.index_path)
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def _read_index(self) -> list[HistoryEntry]:
        """The entries on disk now; bad ones skipped and reported. Call under the lock."""
        self._index_seen = self._index_stamp()
        try:
            raw = read_json(self.index_path, INDEX_MAX_BYTES)
        except FileNotFoundError:
            return []
        except StateFileError as error:
            self._set_aside(str(error))
            return []
        if not isinstance(raw, list):
            self._set_aside(f"{self.index_path} holds a {type(raw).__name__}, not a list of entries")
            return []
        entries: list[HistoryEntry] = []
        skipped: list[str] = []
        ids: set[str] = set()
        for item in raw:
            try:
                entry = entry_from_json(item, self.root)
            except ValueError as error:
                skipped.append(str(error))
                continue
            if entry.id in ids:
                skipped.append(f"entry {entry.id!r} is listed twice")
                continue
            path = contained_file(self.root, entry.file)
            if path is not None and path.is_file():  # an entry whose audio is gone is dropped quietly, as ever
                ids.add(entry.id)
                entries.append(entry)
        if skipped:
            self._report(f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} of {self.index_path} "
                         f"skipped ({skipped[0]}{'; …' if len(skipped) > 1 else ''})")
        return entries

    def _set_aside(self, why: str) -> None:
        """A damaged index must not stop the app; keep it aside for inspection and start afresh."""
        aside = self.root / f"index.damaged-{int(time.time())}.json"
        try:
            os.replace(self.index_path, aside)
            self._report(f"{why}; it was kept as {aside.name} and the history starts afresh")
        except OSError:
            self._report(f"{why}; the history starts afresh")
        self._index_seen = self._index_stamp()

    def _write_index(self, entries: list[HistoryEntry]) -> None:
        data = json.dumps([asdict(e) for e in entries], ensure_ascii=False, indent=1)
        try:
            write_atomically(self.index_path, data)
        except OSError as error:  # a full disk, a read-only folder: one plain line, not "[Errno 28] ..."
            raise plain_write_error(error, self.index_path) from error
        self._index_seen = self._index_stamp()

    @contextmanager
    def _changing(self) -> Iterator[list[HistoryEntry]]:
        """Read-modify-write: the caller edits the list of what is on disk now (another instance's additions
        included); it is written back and becomes this store's view, all under the lock."""
        if not self.available:
            raise OSError(f"the history folder {self.root} is not usable: {'; '.join(self.problems)}")
        with self._lock():
            entries = self._read_index()
            yield entries
            self._write_index(entries)
            self._entries = entries

    def _refresh(self) -> None:
        """Pick up what another instance wrote since the last read (a stat per call; the read only on change)."""
        if self.available and self._index_stamp() != self._index_seen:
            with self._lock(for_writing=False):
                self._entries = self._read_index()

    def _audio_path(self, entry: HistoryEntry) -> Path | None:
        return contained_file(self.root, entry.file)  # never a path outside the folder, whatever the index said

    def _remove_audio(self, entry: HistoryEntry) -> None:
        path = self._audio_path(entry)
        if path is not None:
            path.unlink(missing_ok=True)

    def entries(self) -> list[HistoryEntry]:
        """Newest first."""
        self._refresh()
        return list(reversed(self._entries))

    def get(self, entry_id: str) -> HistoryEntry | None:
        self._refresh()
        return next((e for e in self._entries if e.id == entry_id), None)

    def add(self, text: str, pcm: np.ndarray, sample_rate: int, voice: str = "", style: str = "", model: str = "",
            first_audio_ms: float | None = None, rtf: float | None = None, speed: float | None = None,
            partial: bool = False, sentences: list[SentenceRange] | None = None) -> HistoryEntry:
        if not self.available:
            raise OSError(f"the history folder {self.root} is not usable: {'; '.join(self.problems)}")
        entry_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        file = f"{entry_id}.wav"
        samples = np.asarray(pcm, dtype=np.float32).reshape(-1)
        write_audio(self.root / file, samples, sample_rate, subtype="FLOAT", durable=False)
        entry = HistoryEntry(id=entry_id, created=time.time(), text=text, voice=voice, style=style, model=model,
                             duration_s=round(len(samples) / sample_rate, 3),
                             first_audio_ms=None if first_audio_ms is None else round(first_audio_ms, 1),
                             rtf=None if rtf is None or not np.isfinite(rtf) else round(float(rtf), 4),
                             sample_rate=int(sample_rate), file=file,
                             speed=None if speed is None else round(float(speed), 2), partial=bool(partial),
                             sentences=[r.to_json() for r in sentences] if sentences else None)
        pruned: list[HistoryEntry] = []
        try:
            with self._changing() as entries:
                entries.append(entry)
                while len(entries) > self.max_entries:
                    pruned.append(entries.pop(0))
        except BaseException:
            (self.root / file).unlink(missing_ok=True)  # no audio without its entry
            raise
        for old in pruned:
            self._remove_audio(old)
        return entry

    def audio(self, entry_id: str) -> tuple[np.ndarray, int]:
        entry = self.get(entry_id)
        path = None if entry is None else self._audio_path(entry)
        if path is None:
            raise KeyError(f"no history entry {entry_id}")
        return read_audio(path)

    def export(self, entry_id: str, path: str | Path) -> Path:
        pcm, rate = self.audio(entry_id)
        return write_audio(path, pcm, rate)

    def delete(self, entry_id: str) -> bool:
        """Take the entry out of the index; its audio is set aside (undo_delete brings both back) until
        purge_deleted, the next start, or more than MAX_UNDO further deletes."""
        removed: list[tuple[int, HistoryEntry]] = []
        with self._changing() as entries:
            removed = [(i, e) for i, e in enumerate(entries) if e.id == entry_id]
            entries[:] = [e for e in entries if e.id != entry_id]
        for position, entry in removed:
            path = self._audio_path(entry)
            if path is not None and path.is_file():
                os.replace(path, self.root / (DELETED_PREFIX + entry.file))
                self._deleted.append((position, entry))
        while len(self._deleted) > MAX_UNDO:
            self._drop_deleted(self._deleted.pop(0)[1])
        return bool(removed)

    @property
    def can_undo(self) -> bool:
        return bool(self._deleted)

    def undo_delete(self) -> HistoryEntry | None:
        """Bring the most recently deleted entry back where it was; None when there is nothing to undo."""
        if not self._deleted:
            return None
        position, entry = self._deleted.pop()
        aside = contained_file(self.root, DELETED_PREFIX + entry.file)
        target = self._audio_path(entry)
        if aside is None or target is None or not aside.is_file():
            raise OSError(f"the audio of {entry.id} is no longer in {self.root}; it cannot be brought back")
        os.replace(aside, target)
        try:
            with self._changing() as entries:
                entries.insert(min(position, len(entries)), entry)
        except BaseException:
            os.replace(target, aside)
            self._deleted.append((position, entry))
            raise
        return entry

    def purge_deleted(self) -> None:
        """Delete for good what undo could still bring back (at shutdown)."""
        while self._deleted:
            self._drop_deleted(self._deleted.pop()[1])

    def _drop_deleted(self, entry: HistoryEntry) -> None:
        aside = contained_file(self.root, DELETED_PREFIX + entry.file)
        if aside is not None:
            aside.unlink(missing_ok=True)

    def _purge_deleted_audio(self) -> None:
        try:
            names = [p.name for p in self.root.iterdir() if p.name.startswith(DELETED_PREFIX)]
        except OSError:
            return
        for name in names:
            path = contained_file(self.root, name)
            if path is not None and path.is_file():
                path.unlink(missing_ok=True)

    def clear(self) -> None:
        with self._changing() as entries:
            removed = list(entries)
            entries.clear()
        for entry in removed:
            self._remove_audio(entry)
