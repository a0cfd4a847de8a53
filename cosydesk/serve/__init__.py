"""Local OpenAI-compatible speech server: `POST /v1/audio/speech`, `GET /v1/models`, `GET /v1/audio/voices`.

    from cosydesk.serve import SpeechEngine, ServeConfig, create_app, ServerThread
    engine = SpeechEngine(synthesizer, max_waiting=16)      # one engine, one bounded arrival-order queue
    with ServerThread(create_app(engine, ServeConfig())) as server:
        print(server.base_url)                               # http://127.0.0.1:PORT/v1

Layers: serve -> runtime (Synthesizer) -> frontend/model. Nothing here imports Qt. The heavy parts (FastAPI,
uvicorn, torch) are imported only by the modules that need them, so `cosydesk --help` stays instant.
"""

from __future__ import annotations

__all__ = ["ServeConfig", "ServerThread", "SpeechEngine", "create_app"]


def __getattr__(name: str):
    if name == "ServeConfig":
        from cosydesk.serve.config import ServeConfig

        return ServeConfig
    if name == "SpeechEngine":
        from cosydesk.serve.engine import SpeechEngine

        return SpeechEngine
    if name == "create_app":
        from cosydesk.serve.app import create_app

        return create_app
    if name == "ServerThread":
        from cosydesk.serve.runner import ServerThread

        return ServerThread
    raise AttributeError(name)
