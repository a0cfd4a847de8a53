"""Settings of the speech server and the bind-address rule. Plain Python: no FastAPI, torch or Qt here.

The rule: the server listens on 127.0.0.1 unless told otherwise, and it refuses to listen on any address that
is not loopback unless an API key is set (anyone on the network could make the machine speak otherwise).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_INPUT_CHARS = 4096  # OpenAI's own limit for /v1/audio/speech
MAX_INSTRUCTIONS_CHARS = 1000
DEFAULT_QUEUE = 16
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or the name localhost; any other name or address counts as reachable from outside."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def bind_problem(host: str, api_key: str | None) -> str | None:
    """Why the server must not start with this address and key (None: it may)."""
    if api_key is not None and not api_key.strip():
        return "--api-key is empty: give a non-empty key (clients send it as 'Authorization: Bearer KEY')"
    if not is_loopback(host) and not api_key:
        return (f"--host {host} would let other machines use this server without a key: add --api-key KEY "
                "(or set COSYDESK_API_KEY), or keep the default --host 127.0.0.1")
    return None


@dataclass
class ServeConfig:
    """What the HTTP layer needs to know; the engine (queue length) is configured separately."""

    model_id: str = "cosydesk"
    api_key: str | None = None
    max_input_chars: int = DEFAULT_MAX_INPUT_CHARS
    max_body_bytes: int | None = None  # None: derived from max_input_chars (see body_limit)
    cors_origins: list[str] = field(default_factory=list)
    voices_dir: Path | None = None  # saved voice profiles; None: <user data>/voices (the app's)
    default_voice: str | None = None  # what OpenAI's voice names (alloy, ...) map to; None: the model's default
    bind_host: str = DEFAULT_HOST

    def body_limit(self) -> int:
        """Bytes a request body may have: room for the longest input fully \\u-escaped, plus instructions."""
        if self.max_body_bytes is not None:
            return self.max_body_bytes
        return 16 * 1024 + 6 * (self.max_input_chars + MAX_INSTRUCTIONS_CHARS)
