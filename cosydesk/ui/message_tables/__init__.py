"""Translation tables for the messages built below the UI (see cosydesk/ui/error_text.py, which reads them).

Each module of this package defines ``ZH_CN: dict[str, str]``: an English message template -> its Simplified
Chinese template. Templates are the literal text with numbered fields ``{0}``, ``{1}``, … in the order they
appear in the English text (the Chinese template may reorder them); a field matches any text, and what it
captured is itself translated when it matches an entry whole. File names, keys, flags and numbers stay verbatim.
One module per layer: runtime.py, frontend.py, audio.py, app.py (hub, state files, UI, worker, Diagnostics),
model.py (model/ and runtime/backends/tensorrt/).
"""
