"""The speech response: audio bytes leave as the engine hands over chunks; a client that leaves cancels.

The status line waits for the job's first event: a request the engine rejects before any audio (text with
nothing pronounceable, a voice it cannot load) still gets its 4xx in OpenAI's shape, and a good one sends its
status, headers and first audio together, at the engine's first-audio latency. A task listens for the client's
disconnect the whole time (also while the job waits in the queue) and cancels the job. An engine failure after
audio has left cannot change the status any more: the connection is closed without the final chunk, which
HTTP clients report as an incomplete read rather than a short, "successful" file.
"""

from __future__ import annotations

import asyncio
import logging

import anyio
from starlette.responses import Response

from cosydesk.serve.engine import Job, JobEvent
from cosydesk.serve.errors import ApiError, from_runtime_error

log = logging.getLogger("cosydesk.serve")


class SpeechResponse(Response):
    """An ASGI response fed from one engine job's events (queued on the event loop by the engine's sink)."""

    def __init__(self, job: Job, events: asyncio.Queue, encoder, media_type: str, headers: dict[str, str]) -> None:
        self.job = job
        self.events = events
        self.encoder = encoder
        self.media_type = media_type
        self.extra_headers = dict(headers)
        self.status_code = 200
        self.background = None
        self.ended = False  # the job's end (or error) event has been taken
        self.disconnected = False

    def _raw_headers(self, extra: dict[str, str]) -> list[tuple[bytes, bytes]]:
        merged = {"content-type": self.media_type, **self.extra_headers, **extra}
        return [(key.encode("latin-1"), value.encode("latin-1")) for key, value in merged.items()]

    async def __call__(self, scope, receive, send) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._watch_disconnect, receive, tasks.cancel_scope)
            try:
                await self._respond(send)
            finally:
                if not self.ended:
                    self.job.cancel()
                tasks.cancel_scope.cancel()

    async def _watch_disconnect(self, receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not self.ended:
                    self.disconnected = True
                    self.job.cancel()
                    scope.cancel()
                return

    async def _next(self) -> JobEvent:
        event = await self.events.get()
        if event.kind != "chunk":
            self.ended = True
        return event

    async def _send_error(self, send, err: ApiError) -> None:
        body = err.body_bytes()
        headers = {"content-type": "application/json", "content-length": str(len(body)), **err.headers}
        await send({"type": "http.response.start", "status": err.status,
                    "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _respond(self, send) -> None:
        first = await self._next()
        if first.kind == "error":
            await self._send_error(send, from_runtime_error(first.error))
            return
        if not getattr(self.encoder, "streams", True):
            await self._respond_whole(send, first)
            return
        await send({"type": "http.response.start", "status": 200, "headers": self._raw_headers({})})
        data = self.encoder.start()
        event = first
        while True:
            if event.kind == "chunk":
                data += self.encoder.feed(event.chunk.pcm)
                if data:
                    await send({"type": "http.response.body", "body": data, "more_body": True})
            elif event.kind == "end":
                await send({"type": "http.response.body", "body": data + self.encoder.finish(), "more_body": False})
                return
            else:
                log.warning("speech request %d failed after %d chunks of audio had been sent (%s: %s); closing its "
                            "connection", self.job.id, self.job.chunks, type(event.error).__name__, event.error)
                return  # no final chunk: the client sees the response as incomplete
            data = b""
            event = await self._next()

    async def _respond_whole(self, send, event: JobEvent) -> None:
        """Formats whose header needs the whole audio (flac): encode as chunks come, send once at the end."""
        data = self.encoder.start()
        while event.kind == "chunk":
            data += self.encoder.feed(event.chunk.pcm)
            event = await self._next()
        if event.kind == "error":
            await self._send_error(send, from_runtime_error(event.error))
            return
        data += self.encoder.finish()
        await send({"type": "http.response.start", "status": 200,
                    "headers": self._raw_headers({"content-length": str(len(data))})})
        await send({"type": "http.response.body", "body": data, "more_body": False})
