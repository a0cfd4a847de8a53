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


def test_shared_prefix_views_are_contiguous_starts_of_one_allocation_counted_once():
    from cosydesk.runtime.backends.cudagraph.graph_table import shared_prefix_views

    views = shared_prefix_views({32: (2, 32, 32), 64: (2, 64, 64), 16: (2, 16, 16)}, torch.device("cpu"),
                                torch.bool, fill=True)
    assert {k: tuple(v.shape) for k, v in views.items()} == {32: (2, 32, 32), 64: (2, 64, 64), 16: (2, 16, 16)}
    assert all(v.is_contiguous() and bool(v.all()) for v in views.values())
    assert len({v.data_ptr() for v in views.values()}) == 1  # each one starts the same allocation
    views[64].view(-1)[: 2 * 16 * 16].zero_()
    assert not bool(views[16].any())  # a write through one is seen by every view of that start
    table = GraphTable("flow", torch.device("cpu"), [16, 32, 64])
    table.bufs.update({b: {"allowed": views[b], "spks": torch.zeros(2, 80)} for b in views})
    assert table.buffer_bytes() == 2 * 64 * 64 + 3 * 2 * 80 * 4  # the shared allocation once, each spks once


def test_buffer_bytes_counts_tensors_inside_dataclasses():
    from cosydesk.model.hift_source import NsfDraws

    table = GraphTable("vocoder", torch.device("cpu"))
    table.bufs[(20, 0)] = {"draws": NsfDraws(torch.zeros(1, 9), torch.zeros(1, 9600, 9))}
    assert table.buffer_bytes() == (9 + 9600 * 9) * 4
