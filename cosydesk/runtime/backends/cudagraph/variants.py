"""Picking the first launch variant of a set of hand-written kernels that works on this GPU.

Kernels are tried at load, fastest settings first (with programmatic dependent launch, tuned tiles), then more
portable ones (plain launches, tiles that fit 64 KB of shared memory). A fallback is announced with a warning,
and when nothing works the caller keeps its module form, also with a warning: a slower app, never a broken one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

Setting = TypeVar("Setting")


def first_working(variants: Sequence[tuple[bool, Setting]], trial: Callable[[bool, Setting], str | None],
                  what: str, otherwise: str) -> tuple[bool, Setting] | None:
    """The first ``(pdl, setting)`` of ``variants`` whose ``trial(pdl, setting)`` returns None (no error), or None
    when every trial returned an error. ``what`` names the kernels in the warnings, ``otherwise`` says what the
    caller does when none works."""
    failures = []
    for pdl, setting in variants:
        error = trial(pdl, setting)
        if error is None:
            if failures:
                warnings.warn(f"{what}: {'; '.join(failures)}; using pdl={pdl}, {setting}", RuntimeWarning,
                              stacklevel=3)
            return pdl, setting
        failures.append(f"pdl={pdl}, {setting}: {error}")
    warnings.warn(f"{what} unavailable ({'; '.join(failures)}); {otherwise}", RuntimeWarning, stacklevel=3)
    return None
