"""Test plumbing that the app itself never uses: paths and fixture readers (paths.py), ALSA capture of what was
played (alsa_capture.py), sparse audio files (sparse_audio.py)."""
