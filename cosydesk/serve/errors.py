"""Errors of the speech server in OpenAI's JSON shape: {"error": {"message", "type", "param", "code"}}.

Every problem a client can cause is an ApiError with a 4xx status and a message that names the field, the
value and what would be accepted. Runtime errors (cosydesk.runtime.errors) are translated here, so a bad text
or voice found by the engine is a 400 as well. Only real server faults become 5xx. No FastAPI imports here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class ApiError(Exception):
    status: int
    message: str
    param: str | None = None
    code: str | None = None
    type: str = "invalid_request_error"
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def body_bytes(self) -> bytes:
        return json.dumps(self.body(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def bad_request(message: str, param: str | None = None, code: str | None = "invalid_value") -> ApiError:
    return ApiError(400, message, param=param, code=code)


def queue_full(retry_after_s: int, waiting: int) -> ApiError:
    return ApiError(429, f"the speech queue is full ({waiting} requests waiting): retry in about {retry_after_s} s",
                    code="rate_limit_exceeded", type="rate_limit_error", headers={"Retry-After": str(retry_after_s)})


def server_error(message: str) -> ApiError:
    return ApiError(500, message, code="internal_error", type="server_error")


# runtime error class name -> the request field it is about
_RUNTIME_PARAMS = {
    "EmptyTextError": ("input", "empty_input"),
    "TooLongError": ("input", "input_too_long"),
    "UnknownSpeakerError": ("voice", "voice_not_found"),
    "PromptError": ("voice", "voice_unusable"),
    "UnsupportedModeError": ("instructions", "unsupported_mode"),
}


def from_runtime_error(err: BaseException) -> ApiError:
    """The ApiError for an exception raised by the engine before the first audio was sent."""
    from cosydesk.runtime.errors import OutOfMemoryError, SynthesisError

    if isinstance(err, ApiError):
        return err
    if isinstance(err, OutOfMemoryError):  # the server's resources, not the request: retryable
        return ApiError(503, str(err), code="out_of_memory", type="server_error", headers={"Retry-After": "5"})
    if isinstance(err, SynthesisError):
        param, code = next(((p, c) for cls in type(err).__mro__ for name, (p, c) in _RUNTIME_PARAMS.items()
                            if cls.__name__ == name), (None, "synthesis_failed"))
        return ApiError(400, str(err), param=param, code=code)
    return server_error(f"synthesis failed inside the server ({type(err).__name__}: {err}); the server keeps running")
