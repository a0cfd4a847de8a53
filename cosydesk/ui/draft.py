"""The editor's text, kept between sessions: closing the app (or it dying) does not lose what was typed.

``DraftStore`` is plain file handling (no Qt): the text goes to ``draft.txt`` in the data folder, written to a
temporary file beside it and renamed over it, so a crash mid-write leaves the previous draft whole. The main
window saves shortly after the typing stops and when it closes, and loads the draft when it opens.
"""

from __future__ import annotations

from pathlib import Path

from cosydesk.atomic_file import write_atomically

DRAFT_FILE = "draft.txt"


class DraftStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / DRAFT_FILE
        self._saved: str | None = None  # what the file holds, once known (saves of the same text are skipped)

    def load(self) -> str:
        """The saved draft, or "" when there is none or it cannot be read (a damaged draft must not stop the app)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        self._saved = text
        return text

    def save(self, text: str) -> bool:
        """Write ``text`` (an empty text removes the draft); False when the data folder is not writable."""
        if text == self._saved:
            return True
        try:
            if not text:
                self.path.unlink(missing_ok=True)
            else:
                write_atomically(self.path, text)
        except OSError:
            return False
        self._saved = text
        return True
