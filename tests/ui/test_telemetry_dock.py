"""Telemetry dock (D11, D12, D22): labelled axes, chunk RTF per utterance, underruns per utterance with an
explanation, "No data yet" on empty plots, no redraw while nothing changes, plot colours from the palette."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.sampler import NvmlSource, TelemetrySampler
from cosydesk.ui.telemetry_dock import RTF_UTTERANCES, TelemetryDock
from tests.telemetry.fake_nvml import FakeNvml


class _Player:
    underruns = 0
    is_playing = False


def _dock(qtbot, player=None):
    sampler = TelemetrySampler(NvmlSource(FakeNvml()))
    recorder = LatencyRecorder()
    dock = TelemetryDock(sampler, recorder, player, refresh_ms=10_000)
    qtbot.addWidget(dock)
    dock.show()
    return dock, sampler, recorder


def _utterance(recorder, chunk_compute_s, first_ms=150.0):
    for compute_s in chunk_compute_s:
        recorder.record_chunk(0.5, compute_s)
    return recorder.record_utterance(first_ms, 0.4, 0.5 * len(chunk_compute_s), len(chunk_compute_s))


def test_every_axis_is_labelled_with_its_unit(qtbot):
    dock, sampler, _ = _dock(qtbot)
    for plot in dock.plots:
        for side in ("left", "bottom"):
            assert plot.getAxis(side).labelText, f"{plot.titleLabel.text} has no {side} label"
    assert dock.latency_plot.getAxis("left").labelText == "ms"
    assert dock.memory_plot.getAxis("bottom").labelText == "Seconds ago"
    sampler.stop()


def test_empty_plots_say_no_data_yet_until_data_arrives(qtbot):
    dock, sampler, recorder = _dock(qtbot)
    dock.refresh()
    assert all(text.isVisible() and text.toPlainText() == "No data yet" for text in dock.no_data.values())
    assert "No utterance yet" in dock.summary.text()
    # in the middle of each plot (a time plot's stood at 0 s, its right edge, half outside), also when axes move
    assert dock.no_data[dock.memory_plot].pos().x() == -30
    dock.latency_plot.setXRange(0.5, 20.5, padding=0)
    assert dock.no_data[dock.latency_plot].pos().x() == 10.5
    sampler.sample_once()
    _utterance(recorder, [0.1])
    dock.refresh()
    assert not any(text.isVisible() for text in dock.no_data.values())
    sampler.stop()


def test_chunk_rtf_is_one_line_per_utterance(qtbot):
    dock, sampler, recorder = _dock(qtbot)
    _utterance(recorder, [0.1, 0.2, 0.3])
    _utterance(recorder, [0.4, 0.6])
    dock.refresh()
    drawn = [curve.getData()[1] for curve in dock.rtf_curves if curve.getData()[1] is not None
             and len(curve.getData()[1])]
    assert [list(map(float, y.round(2))) for y in drawn] == [[0.2, 0.4, 0.6], [0.8, 1.2]]
    assert list(dock.rtf_curves[-1].getData()[0]) == [1.0, 2.0]  # x: chunk number within its utterance
    assert dock.values["rtf_lines"] == [1, 2]
    for _ in range(RTF_UTTERANCES + 2):
        _utterance(recorder, [0.1])
    dock.refresh()
    assert dock.values["rtf_lines"] == list(range(5, 5 + RTF_UTTERANCES))
    sampler.stop()


def test_underruns_are_shown_per_utterance_with_an_explanation(qtbot):
    player = _Player()
    dock, sampler, recorder = _dock(qtbot, player)
    dock.refresh()
    _utterance(recorder, [0.1])
    player.underruns = 3
    dock.refresh()
    _utterance(recorder, [0.1])
    dock.refresh()
    assert dock.values["underruns_per_utterance"] == {1: 3, 2: 0}
    assert list(dock.underrun_bars.opts["height"]) == [3, 0]
    assert "underruns 0" in dock.summary.text()  # the last utterance's, not a running total
    assert "sound card asked for audio" in dock.underrun_plot.toolTip()
    sampler.stop()


def test_idle_refresh_redraws_nothing(qtbot):
    dock, sampler, recorder = _dock(qtbot)
    sampler.sample_once()
    _utterance(recorder, [0.1])
    dock.refresh()
    before = dock.redraws
    for _ in range(5):
        dock.refresh()
    assert dock.redraws == before
    sampler.sample_once()
    dock.refresh()
    assert dock.redraws == before + 1  # a new sample: the time plots only
    sampler.stop()


def test_hidden_dock_stops_its_timer_and_idle_dock_slows_down(qtbot):
    sampler = TelemetrySampler(NvmlSource(FakeNvml()))
    dock = TelemetryDock(sampler, LatencyRecorder())
    qtbot.addWidget(dock)
    dock.show()
    dock.refresh()
    assert dock.timer.interval() >= 1000 and sampler.interval_s >= 1.0
    dock.recorder.record_chunk(0.5, 0.1)
    dock.refresh()
    assert dock.timer.interval() <= 100 and sampler.interval_s <= 0.25
    dock.hide()
    assert not dock.timer.isActive()
    dock.show()
    assert dock.timer.isActive()
    sampler.stop()


def test_plot_colours_follow_the_palette(qtbot):
    dock, sampler, _ = _dock(qtbot)
    palette = dock.palette()
    palette.setColor(QPalette.ColorRole.Base, QColor("#202124"))
    palette.setColor(QPalette.ColorRole.Text, QColor("#e8eaed"))
    dock.setPalette(palette)
    assert dock.plot_colours == ("#202124", "#e8eaed")
    assert dock.graphs.backgroundBrush().color().name() == "#202124"
    assert dock.latency_plot.getAxis("left").textPen().color().name() == "#e8eaed"
    sampler.stop()


def _legend_colours(dock) -> set[str]:
    """The colours the legends' labels are drawn in (their rendered text, not the option they were given)."""
    import re

    found = set()
    for legend in dock.legends:
        for _sample, label in legend.items:
            found.update(c.lower() for c in re.findall(r"color:\s*(#[0-9a-fA-F]{6})", label.item.toHtml()))
    return found


def test_theme_change_recolours_every_part_of_the_plots_at_once(qtbot):
    """A theme switch re-colours the plots synchronously on the theme signal, before any event is processed: the
    background, axes, titles, "No data yet" and the legends' labels (which kept the old colour: pyqtgraph's
    setLabelTextColor only records it), and the view is repainted then, not on the next refresh."""
    from PySide6.QtCore import QEvent, QObject

    from cosydesk.ui import theme

    dock, sampler, _ = _dock(qtbot)
    dock.show()
    qtbot.waitExposed(dock)
    assert dock.legends and _legend_colours(dock)
    painted = []

    class PaintSpy(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 - Qt override
            if event.type() == QEvent.Type.Paint:
                painted.append(obj)
            return False

    spy = PaintSpy()
    dock.graphs.viewport().installEventFilter(spy)
    dock.graphs.viewport().update()
    qtbot.waitUntil(lambda: bool(painted))  # its first paint is done: from now on a repaint paints at once
    seen = []
    theme.theme_signals().changed.connect(lambda t: seen.append((t.name, dock.plot_colours)))
    try:
        for chosen in (theme.DARK, theme.LIGHT):
            painted.clear()
            theme.apply_theme(chosen.name)  # no event processed between this and the checks below
            assert seen[-1] == (chosen.name, (chosen.base, chosen.text))
            assert dock.graphs.backgroundBrush().color().name() == chosen.base
            for plot in dock.plots:
                assert plot.getAxis("left").textPen().color().name() == chosen.text
                assert dock.no_data[plot].color.name() == chosen.text
            assert _legend_colours(dock) == {chosen.text}
            assert painted, "the plots were not repainted at once"
    finally:
        theme.apply_theme("light")
        sampler.stop()
