"""The editor's text, kept between sessions: closing the app (or it dying) does not lose what was typed.

``DraftStore`` is plain file handling (no Qt): the text goes to ``draft.txt`` in the data folder, written to a
temporary file beside it and renamed over it, so a crash mid-write leaves the previous draft whole. The main
window saves shortly after the typing stops and when it closes, and loads the draft when it opens.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from cosydesk.atomic_file import write_atomically
from cosydesk.leftovers import remove_leftover_temporaries
from cosydesk.state_files import StateFileError, read_regular_file

log = logging.getLogger(__name__)

DRAFT_FILE = "draft.txt"
DRAFT_MAX_BYTES = 64 * 1024 * 1024  # far past what the editor holds comfortably; a bigger file is not read


class DraftStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / DRAFT_FILE
        self._saved: str | None = None  # what the file holds, once known (saves of the same text are skipped)
        self.problems: list[str] = []  # why a draft could not be loaded (for the UI to show)

    def load(self) -> str:
        """The saved draft, or "" when there is none or it cannot be read (a damaged draft must not stop the app).
        A FIFO, device or directory named draft.txt is never opened (a FIFO would block the start for good)."""
        remove_leftover_temporaries(self.path.parent)  # the data folder: what a killed save left behind
        try:
            text = read_regular_file(self.path, DRAFT_MAX_BYTES).decode("utf-8", errors="replace")
        except FileNotFoundError:
            text = ""
        except (StateFileError, OSError) as error:
            problem = f"the saved draft was not loaded: {error}"
            if self.path.is_file():  # too large to load: kept aside, so the next save cannot replace it unseen
                aside = self.path.with_name(f"draft.not-loaded-{int(time.time())}.txt")
                try:
                    os.replace(self.path, aside)
                    problem += f"; it was kept as {aside.name}"
                except OSError:
                    pass
            self.problems.append(problem)
            log.warning("draft: %s", problem)
            self._saved = None  # unknown: an empty save leaves the path alone, a real one replaces it
            return ""
        self._saved = text
        return text

    def save(self, text: str) -> bool:
        """Write ``text`` (an empty text removes the draft); False when the data folder is not writable."""
        if text == self._saved or (not text and self._saved is None):
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
