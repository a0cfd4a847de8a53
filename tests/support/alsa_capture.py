"""Route PortAudio's ALSA default device into a raw float32 file (tests and CI on machines without sound).

What it is for: checking that what the player sends to the device equals what the synthesizer produced.
The ALSA "file" plugin writes every sample the stream plays into a file (rewritten each time a stream
opens); the "null" slave throws the sound away. It is not paced in real time.

What it must not do: be used by the app itself. It only works if called before `import sounddevice`
(PortAudio reads the ALSA config once).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

_CONF = """pcm.!default {{ type plug; slave {{ pcm "cosydesk_rec"; format FLOAT_LE; }} }}
pcm.cosydesk_rec {{ type file; slave.pcm "null"; file "{capture}"; format "raw" }}
"""


def install_alsa_file_capture(folder: str | os.PathLike) -> Path | None:
    """Point ALSA_CONFIG_PATH at a config that captures the default device into <folder>/capture.f32.

    Returns the capture file path, or None when sounddevice was imported already (too late) or when the
    variable already points at another capture config (then that one is used: see capture_path()).
    """
    existing = capture_path()
    if existing is not None:
        return existing
    if "sounddevice" in sys.modules:
        return None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    capture = folder / "capture.f32"
    conf = folder / "alsa-capture.conf"
    conf.write_text(_CONF.format(capture=capture))
    base = "/usr/share/alsa/alsa.conf"
    os.environ["ALSA_CONFIG_PATH"] = f"{base}:{conf}"
    os.environ["COSYDESK_ALSA_CAPTURE"] = str(capture)
    return capture


def capture_path() -> Path | None:
    value = os.environ.get("COSYDESK_ALSA_CAPTURE")
    return Path(value) if value and "ALSA_CONFIG_PATH" in os.environ else None


def read_capture(path: str | os.PathLike | None = None) -> np.ndarray:
    """Samples captured since the last stream opened, with PortAudio's leading priming zeros removed."""
    file = Path(path) if path else capture_path()
    if file is None or not file.exists():
        return np.zeros(0, np.float32)
    data = np.fromfile(file, dtype=np.float32)
    nonzero = np.flatnonzero(data)
    return data[nonzero[0]:] if len(nonzero) else np.zeros(0, np.float32)
