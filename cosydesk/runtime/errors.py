"""Errors a user can cause and fix. Each message names what was wrong and what would be right."""

from __future__ import annotations


class SynthesisError(ValueError):
    """Base: bad input for synthesis (shown to the user as one line, never as a traceback)."""


class EmptyTextError(SynthesisError):
    pass


class UnknownSpeakerError(SynthesisError):
    pass


class UnsupportedModeError(SynthesisError):
    pass


class PromptError(SynthesisError):
    pass


class TooLongError(SynthesisError):
    """A request does not fit a static buffer of the GPU backend (its speech model's KV cache)."""


class NumericalError(SynthesisError):
    """The model's scores stopped being finite numbers (NaN/inf, e.g. an fp16 overflow): no token can be drawn."""


class OutOfMemoryError(SynthesisError):
    """The GPU ran out of memory during a request (the model stays loaded; the next request may succeed)."""


class InvalidAudioError(SynthesisError):
    """The model produced samples that are not audio (NaN/inf, or pinned at full scale): refused, never written or
    played (a WAV of NaN or of constant -32768 is silent garbage that looks like success)."""
