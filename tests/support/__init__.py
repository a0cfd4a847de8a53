"""Test plumbing that the app itself never uses (ALSA capture of what was played)."""
