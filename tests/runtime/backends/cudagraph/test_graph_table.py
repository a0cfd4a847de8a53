"""GraphTable, the bucketed-graph helper of every graphed part: pick, replay or eager body, fallbacks counted,
buffer memory (CPU: stand-in graphs that replay their captured body)."""

from __future__ import annotations

import torch

from cosydesk.runtime.backends.cudagraph.graph_table import GraphTable


class Replayed:
    def __init__(self, body):
        self.replay = body


def _capture(jobs, device, pool, progress, what, errors=None, **kwargs):
    graphs = {}
    for key, body in jobs:
        if key == "broken":
            errors.append(f"{key}: failed")
            continue
        graphs[key] = Replayed(body)
    return graphs


def test_pick_run_and_count_eager_fallbacks():
    table = GraphTable("flow", torch.device("cpu"), [64, 32, 96])
    assert table.buckets == [32, 64, 96]
    assert (table.pick(1), table.pick(33), table.pick(96), table.pick(97)) == (32, 64, 96, None)
    calls = []
    table.capture([(32, lambda: calls.append("graph 32")), ("broken", lambda: None)], capture=_capture,
                  keep_going=True)
    assert set(table.graphs) == {32} and table.capture_errors == ["broken: failed"]
    table.run(32, lambda: calls.append("eager 32"))
    table.run(64, lambda: calls.append("eager 64"))
    table.run(96, lambda: calls.append("eager 96"), count=False)
    assert calls == ["graph 32", "eager 64", "eager 96"] and table.eager_calls == 1
    assert table.graph(32) is table.graphs[32] and table.graph(64) is None and table.eager_calls == 2
    assert table.eager(lambda a, b=0: a + b, 2, b=3) == 5 and table.eager_calls == 3


def test_buffer_bytes_and_report():
    table = GraphTable("vocoder", torch.device("cpu"))
    table.bufs[(20, 0)] = {"mel": torch.zeros(1, 80, 20), "cache": torch.zeros(1, 1, 0), "draws": object()}
    table.bufs["decode"] = torch.zeros(10, dtype=torch.float16)
    assert table.buffer_bytes() == 80 * 20 * 4 + 10 * 2
    assert table.report() == {"graphs": 0, "eager_calls": 0, "buffer_bytes": 80 * 20 * 4 + 20}
