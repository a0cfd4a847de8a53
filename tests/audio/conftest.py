"""Audio tests: route ALSA's default device into a capture file before sounddevice is first imported."""

from __future__ import annotations

import os
import tempfile

from tests.support.alsa_capture import install_alsa_file_capture

ALSA_CAPTURE = install_alsa_file_capture(tempfile.mkdtemp(prefix=f"cosydesk-alsa-{os.getpid()}-"))
