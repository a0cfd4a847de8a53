"""CosyDesk: local, real-time CosyVoice speech synthesis (desktop app and CLI)."""

#: Kept equal to pyproject.toml's version (tests/test_cli.py checks).
__version__ = "0.1.0"
