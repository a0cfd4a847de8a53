"""The FastAPI application: OpenAI's speech endpoints in front of one SpeechEngine.

    app = create_app(engine, ServeConfig(model_id="CosyVoice2-0.5B", api_key=None))

Routes: POST /v1/audio/speech, GET /v1/models, GET /v1/models/{id}, GET /v1/audio/voices (an extension).
Every request passes `_guard`: the API key when one is set; without a key, the Host header must name a
loopback address (a web page that re-points its own domain at 127.0.0.1 cannot reach the server), and POST
bodies must be JSON (a page cannot send that cross-origin without CORS consent). Bodies are size-limited
before they are parsed. All errors leave in OpenAI's shape; nothing a client sends yields a 5xx.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.requests import Request as HttpRequest

from cosydesk.runtime.types import Request
from cosydesk.serve.config import ServeConfig, is_loopback
from cosydesk.serve.encoders import available_formats, make_encoder
from cosydesk.serve.engine import EngineClosed, JobEvent, QueueFull, SpeechEngine
from cosydesk.serve.errors import ApiError, bad_request, queue_full, server_error
from cosydesk.serve.response import SpeechResponse
from cosydesk.serve.speech_request import MEDIA_TYPES, parse_speech_body
from cosydesk.serve.voices import VoiceCatalogue

log = logging.getLogger("cosydesk.serve")
OPENAI_MODEL_ALIASES = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")


def _error_response(err: ApiError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers or None)


def _host_name(host_header: str) -> str:
    """'[::1]:8000' -> '::1', '127.0.0.1:8000' -> '127.0.0.1', 'localhost' -> 'localhost'."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def _guard(request: HttpRequest, config: ServeConfig) -> None:
    if config.api_key:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "this server needs an API key: send the header 'Authorization: Bearer KEY'",
                           code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(token.strip().encode(), config.api_key.encode()):
            raise ApiError(401, "incorrect API key: send the key the server was started with (--api-key)",
                           code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
        return
    host = request.headers.get("host")
    if host is not None and not is_loopback(_host_name(host)):
        raise ApiError(403, f"Host {host!r} is not a loopback address: without --api-key this server answers only "
                       "requests addressed to 127.0.0.1, ::1 or localhost", code="forbidden_host")


async def _read_json_body(request: HttpRequest, limit: int) -> bytes:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(415, f"the body must be JSON sent with 'Content-Type: application/json' (got "
                       f"{media_type or 'no Content-Type'})", code="unsupported_media_type")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise bad_request(f"Content-Length {declared!r} is not a number", code="invalid_header")
        if int(declared) > limit:
            raise ApiError(413, f"the request body has {int(declared)} bytes; at most {limit} are accepted",
                           code="body_too_large")
    body = bytearray()
    try:
        async for piece in request.stream():
            body += piece
            if len(body) > limit:
                raise ApiError(413, f"the request body is larger than {limit} bytes", code="body_too_large")
    except ClientDisconnect:
        raise bad_request("the client closed the connection before the whole body arrived",
                          code="client_disconnected") from None
    return bytes(body)


def create_app(engine: SpeechEngine, config: ServeConfig | None = None,
               catalogue: VoiceCatalogue | None = None) -> FastAPI:
    """The ASGI app for `engine` (its Synthesizer already loaded)."""
    config = config or ServeConfig()
    synth = engine.synth
    catalogue = catalogue or VoiceCatalogue(synth, config.voices_dir, config.default_voice)
    formats = available_formats()
    created = int(time.time())
    app = FastAPI(title="CosyDesk speech server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.engine, app.state.config, app.state.catalogue = engine, config, catalogue

    if config.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["authorization", "content-type"],
                           expose_headers=["x-sample-rate", "x-request-id", "retry-after"])

    @app.exception_handler(ApiError)
    async def _api_error(request: HttpRequest, err: ApiError) -> JSONResponse:
        return _error_response(err)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: HttpRequest, err: StarletteHTTPException) -> JSONResponse:
        what = {404: f"no such endpoint: {request.method} {request.url.path}",
                405: f"{request.method} is not allowed on {request.url.path}"}.get(err.status_code, str(err.detail))
        code = {404: "not_found", 405: "method_not_allowed"}.get(err.status_code)
        return _error_response(ApiError(err.status_code, what, code=code))

    @app.exception_handler(Exception)
    async def _unexpected(request: HttpRequest, err: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return _error_response(server_error(f"unexpected server error ({type(err).__name__}); the server keeps running"))

    def model_entry(model_id: str) -> dict:
        return {"id": model_id, "object": "model", "created": created, "owned_by": "cosydesk"}

    @app.get("/v1/models")
    async def list_models(request: HttpRequest) -> dict:
        _guard(request, config)
        ids = [config.model_id] + [name for name in OPENAI_MODEL_ALIASES if name != config.model_id]
        return {"object": "list", "data": [model_entry(model_id) for model_id in ids]}

    @app.get("/v1/models/{model_id}")
    async def get_model(model_id: str, request: HttpRequest) -> dict:
        _guard(request, config)
        if model_id != config.model_id and model_id not in OPENAI_MODEL_ALIASES:
            raise ApiError(404, f"model {model_id!r} is not served here (this server has {config.model_id!r})",
                           param="model", code="model_not_found")
        return model_entry(model_id)

    @app.get("/v1/audio/voices")
    async def list_voices(request: HttpRequest) -> dict:
        _guard(request, config)
        return {"object": "list", "model": config.model_id, "sample_rate": synth.sample_rate,
                "styles": list(synth.styles()), "data": [voice.describe() for voice in catalogue.list()]}

    @app.post("/v1/audio/speech")
    async def speech(request: HttpRequest):
        _guard(request, config)
        raw = await _read_json_body(request, config.body_limit())
        params = parse_speech_body(raw, model_id=config.model_id, max_input_chars=config.max_input_chars,
                                   formats=formats)
        voice = catalogue.resolve(params.voice)
        if params.instructions and not voice.styles:
            target = f" (it maps to {voice.maps_to})" if voice.maps_to else ""
            why = ("styles need a voice profile (a saved prompt recording) with this model" if synth.supports("instruct2")
                   else "this model has no instruct mode (CosyVoice-300M-Instruct and CosyVoice2/3 have one)")
            raise bad_request(f"'instructions' cannot be used with voice {params.voice!r}{target}: {why}; remove "
                              "them or pick a voice whose 'styles' is true in GET /v1/audio/voices",
                              "instructions", "unsupported_mode")
        runtime_request = Request(text=params.input, instruct=params.instructions, speed=params.speed,
                                  **voice.request_fields())
        encoder = make_encoder(params.response_format, synth.sample_rate)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[JobEvent] = asyncio.Queue()

        def sink(event: JobEvent) -> None:  # called on the engine's thread
            loop.call_soon_threadsafe(events.put_nowait, event)

        try:
            job = engine.submit(runtime_request, sink)
        except QueueFull as full:
            raise queue_full(full.retry_after_s, full.waiting) from None
        except EngineClosed:
            raise ApiError(503, "the server is shutting down", code="shutting_down", type="server_error") from None
        headers = {"x-sample-rate": str(encoder.sample_rate), "x-request-id": str(job.id), "cache-control": "no-store"}
        return SpeechResponse(job, events, encoder, MEDIA_TYPES[params.response_format], headers)

    return app
