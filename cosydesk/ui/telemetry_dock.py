"""Live telemetry dock: first-audio latency and underruns per utterance, chunk RTF per utterance, memory and
GPU load (or CPU/RAM) over the last 60 s.

What it is for: showing how fast and how heavy synthesis is while it happens. It pulls snapshots from the
plain-Python TelemetrySampler / LatencyRecorder on a QTimer and redraws only there (Friture's pattern):
nothing is drawn per chunk or per sample. The timer runs at ACTIVE_REFRESH_MS while something happens
(synthesis, playback) and at IDLE_REFRESH_MS otherwise, and only while the dock is visible; a plot whose
data did not change is not touched (idle cost: tools/idle_cpu.py). Plot colours follow the widget palette,
so the light and dark themes (cosydesk/ui/theme.py) re-colour them live.

What it must not do: sample hardware itself or block; it never creates plot items after construction.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QDockWidget, QLabel, QVBoxLayout, QWidget

from cosydesk.audio.player import Player
from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.sampler import TelemetrySampler
from cosydesk.telemetry.underruns import UnderrunsPerUtterance
from cosydesk.ui import theme

HISTORY_S = 60.0
MAX_UTTERANCES = 30
RTF_UTTERANCES = 5  # chunk-RTF lines drawn, one per utterance (newest bold)
ACTIVE_REFRESH_MS = 100
IDLE_REFRESH_MS = 2000
ACTIVE_SAMPLE_S = 0.25
IDLE_SAMPLE_S = 2.0
ACTIVE_AFTER_S = 3.0  # stays at the fast rate this long after the last recorded chunk
TITLE_SIZE = "9pt"
RTF_COLOURS = ("#6a3fc8", "#2f6fde", "#188038", "#e8710a", "#d93025")


def _fmt(value, unit: str, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f} {unit}"


class TelemetryDock(QDockWidget):
    def __init__(self, sampler: TelemetrySampler, recorder: LatencyRecorder, player: Player | None = None,
                 parent: QWidget | None = None, refresh_ms: int | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("telemetryDock")
        self.sampler = sampler
        self.recorder = recorder
        self.player = player
        self.underruns = UnderrunsPerUtterance()
        self.values: dict[str, object] = {}  # what the last refresh showed (for tests and accessibility)
        self.redraws = 0  # plot updates done (tests check that an idle refresh draws nothing)
        self._fixed_refresh_ms = refresh_ms  # tests pin the rate; the app lets it follow activity
        self._drawn_version: int | None = None
        self._drawn_underruns: int | None = None
        self._drawn_sample_time: float | None = None
        self._last_activity = 0.0
        self._seen_version = recorder.version
        self._labels: dict[tuple[object, str], str] = {}
        self._titles: dict[object, str] = {}
        self._foreground = QColor("#333333")  # apply_palette() sets it from the palette
        self.plot_colours = ("", "")  # (background, foreground) the plots are drawn in
        self._summary_stale = True

        pg.setConfigOptions(antialias=False)
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        self.summary = QLabel(body)
        self.summary.setObjectName("telemetrySummary")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note = QLabel(body)
        self.note.setObjectName("telemetryNote")
        self.note.setWordWrap(True)
        self.graphs = pg.GraphicsLayoutWidget(body)
        self.graphs.setObjectName("telemetryPlots")
        self.graphs.setMinimumWidth(340)
        layout.addWidget(self.summary)
        layout.addWidget(self.note)
        layout.addWidget(self.graphs, 1)
        self.setWidget(body)

        gpu = sampler.kind == "nvml"
        self.latency_plot = self.graphs.addPlot(row=0, col=0)
        self.latency_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush="#2f6fde")
        self.latency_plot.addItem(self.latency_bars)
        self.underrun_plot = self.graphs.addPlot(row=1, col=0)
        self.underrun_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush="#d93025")
        self.underrun_plot.addItem(self.underrun_bars)
        self.rtf_plot = self.graphs.addPlot(row=2, col=0)
        self.rtf_curves = [self.rtf_plot.plot(pen=pg.mkPen(colour, width=1), symbol="o", symbolSize=4,
                                              symbolBrush=colour, symbolPen=None)
                           for colour in RTF_COLOURS[:RTF_UTTERANCES]]
        self.rtf_plot.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#b3261e", style=Qt.PenStyle.DashLine)))
        self.memory_plot = self.graphs.addPlot(row=3, col=0)
        self.memory_plot.setXRange(-HISTORY_S, 0, padding=0)
        self.legends = []
        if gpu:  # without a GPU there is one curve per plot and the axis label names it
            self.legends.append(self.memory_plot.addLegend(offset=(5, 5)))
        self.memory_curve = self.memory_plot.plot(pen=pg.mkPen("#2f6fde", width=2), name="NVML" if gpu else "RAM")
        self.torch_allocated_curve = self.memory_plot.plot(pen=pg.mkPen("#e8710a", width=1), name="torch alloc")
        self.torch_reserved_curve = self.memory_plot.plot(pen=pg.mkPen("#888", width=1), name="torch reserved")
        self.load_plot = self.graphs.addPlot(row=4, col=0)
        self.load_plot.setXRange(-HISTORY_S, 0, padding=0)
        self.load_plot.setYRange(0, 100, padding=0.02)
        if gpu:
            self.legends.append(self.load_plot.addLegend(offset=(5, 5)))
        self.util_curve = self.load_plot.plot(pen=pg.mkPen("#188038", width=2), name="util %" if gpu else "CPU %")
        self.temp_curve = self.load_plot.plot(pen=pg.mkPen("#d93025", width=1), name="°C")
        self.power_curve = self.load_plot.plot(pen=pg.mkPen("#f9ab00", width=1), name="W")
        self.rtf_plot.setYRange(0, 1.5, padding=0)
        self.plots = (self.latency_plot, self.underrun_plot, self.rtf_plot, self.memory_plot, self.load_plot)
        self.no_data: dict[object, pg.TextItem] = {}
        for plot in self.plots:
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.showGrid(y=True, alpha=0.2)
            text = pg.TextItem(anchor=(0.5, 0.5))
            text.setZValue(10)
            plot.addItem(text, ignoreBounds=True)
            self.no_data[plot] = text
            # kept in the middle when the axes move (it was placed once, by the range before the first layout,
            # and stood half outside the time plots)
            plot.sigRangeChanged.connect(lambda *_args, shown=plot: self._centre_no_data(shown))
        for plot in (self.latency_plot, self.underrun_plot):
            plot.setXRange(0.5, 10.5, padding=0)
        self.underrun_plot.setYRange(0, 5, padding=0)
        self.latency_plot.setYRange(0, 500, padding=0)
        self.underrun_plot.setMaximumHeight(110)
        for plot in self.plots:
            self._centre_no_data(plot)
        for curve in (self.memory_curve, self.util_curve, self.temp_curve, self.power_curve):
            curve.setClipToView(True)
        self.retranslate()
        self.apply_palette()
        theme.theme_signals().changed.connect(self._on_theme)

        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms or IDLE_REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    # -- visibility, language, colours --------------------------------------------------------------------
    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not self.timer.isActive():
            self.timer.start()
            self.refresh()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override: nothing is drawn while hidden
        super().hideEvent(event)
        self.timer.stop()
        self.sampler.set_interval(IDLE_SAMPLE_S)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        elif event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.apply_palette()
        super().changeEvent(event)

    def _title(self, plot, text: str) -> None:
        self._titles[plot] = text
        plot.setTitle(text, size=TITLE_SIZE, color=self._foreground.name())

    def _label(self, plot, side: str, text: str) -> None:
        self._labels[(plot, side)] = text
        plot.setLabel(side, text, color=self._foreground.name())

    def retranslate(self) -> None:
        gpu = self.sampler.kind == "nvml"
        self.setWindowTitle(self.tr("Telemetry"))
        self._title(self.latency_plot, self.tr("First audio per utterance"))
        self._label(self.latency_plot, "left", self.tr("ms"))
        self._label(self.latency_plot, "bottom", self.tr("Utterance"))
        self._title(self.underrun_plot, self.tr("Audio underruns per utterance"))
        self._label(self.underrun_plot, "left", self.tr("Gaps"))
        self._label(self.underrun_plot, "bottom", self.tr("Utterance"))
        self._title(self.rtf_plot, self.tr("Chunk RTF, last {n} utterances")
                    .format(n=RTF_UTTERANCES))
        self._label(self.rtf_plot, "left", self.tr("RTF"))
        self._label(self.rtf_plot, "bottom", self.tr("Chunk of the utterance"))
        self._title(self.memory_plot, self.tr("VRAM, last 60 s") if gpu else self.tr("RAM, last 60 s"))
        self._label(self.memory_plot, "left", self.tr("MB"))
        self._label(self.memory_plot, "bottom", self.tr("Seconds ago"))
        self._title(self.load_plot, self.tr("GPU load, last 60 s") if gpu else self.tr("CPU load, last 60 s"))
        self._label(self.load_plot, "left", self.tr("% · °C · W") if gpu else self.tr("%"))
        self._label(self.load_plot, "bottom", self.tr("Seconds ago"))
        underrun_help = self.tr(
            "An underrun is a moment when the sound card asked for audio and none was ready yet: you hear a "
            "short gap or click. 0 means the utterance played without gaps; more means synthesis could not keep "
            "up with playback (a slower device or a busy computer).")
        self.underrun_plot.setToolTip(underrun_help)
        self.rtf_plot.setToolTip(self.tr(
            "Real-time factor of each audio chunk: computing time divided by the chunk's length. One line per "
            "utterance, the newest bold; above the dashed line at 1 synthesis is slower than playback."))
        self.latency_plot.setToolTip(self.tr("Time from pressing Speak to the first audio of each utterance."))
        self.memory_plot.setToolTip(self.tr("Memory in use over the last minute."))
        self.load_plot.setToolTip(self.tr("Processor or GPU load over the last minute."))
        self.graphs.setToolTip(self.tr("Live speed and memory figures; hover a plot for what it shows."))
        self.summary.setToolTip(underrun_help)
        for text in self.no_data.values():
            text.setText(self.tr("No data yet"))
        note = self.sampler.note
        self.note.setText(self.tr("No NVIDIA GPU found: showing CPU and RAM instead.") if note else "")
        self.note.setVisible(bool(note))
        self._summary_stale = True  # its words changed

    def _on_theme(self, chosen) -> None:
        """The theme changed (theme.apply_theme): its colours now, and the plots repainted now."""
        self.apply_palette(QColor(chosen.base), QColor(chosen.text))
        if self.graphs.isVisible():
            self.graphs.viewport().repaint()

    def apply_palette(self, background: QColor | None = None, foreground: QColor | None = None) -> None:
        """Plot background, axes, titles, labels and legends in the palette's colours (or those given)."""
        palette = self.palette()
        background = background or palette.color(QPalette.ColorRole.Base)
        foreground = foreground or palette.color(QPalette.ColorRole.Text)
        if self.plot_colours == (background.name(), foreground.name()):
            return  # the theme signal and the palette events both report one change
        self._foreground = QColor(foreground)
        self.graphs.setBackground(background)
        for plot in self.plots:
            for side in ("left", "bottom"):
                axis = plot.getAxis(side)
                axis.setPen(foreground)
                axis.setTextPen(foreground)
            self.no_data[plot].setColor(foreground)
        for plot, text in self._titles.items():
            plot.setTitle(text, size=TITLE_SIZE, color=foreground.name())
        for (plot, side), text in self._labels.items():
            plot.setLabel(side, text, color=foreground.name())
        for legend in self.legends:
            legend.setLabelTextColor(foreground)  # for labels added later; it does not redraw existing ones
            for _sample, label in legend.items:
                label.setText(label.text, color=foreground)
        self.plot_colours = (background.name(), foreground.name())

    # -- refresh --------------------------------------------------------------------------------------------
    def _active(self) -> bool:
        version = self.recorder.version
        now = time.monotonic()
        if version != self._seen_version:
            self._seen_version = version
            self._last_activity = now
        playing = self.player is not None and self.player.is_playing
        return playing or now - self._last_activity < ACTIVE_AFTER_S

    def _pace(self, active: bool) -> None:
        if self._fixed_refresh_ms is None:
            interval = ACTIVE_REFRESH_MS if active else IDLE_REFRESH_MS
            if self.timer.interval() != interval:
                self.timer.setInterval(interval)
        self.sampler.set_interval(ACTIVE_SAMPLE_S if active else IDLE_SAMPLE_S)

    def _centre_no_data(self, plot) -> None:
        text = self.no_data.get(plot)
        if text is not None and text.isVisible():
            (x0, x1), (y0, y1) = plot.viewRange()
            text.setPos((x0 + x1) / 2, (y0 + y1) / 2)

    def _show_no_data(self, plot, empty: bool) -> None:
        text = self.no_data[plot]
        if text.isVisible() != empty:
            text.setVisible(empty)
        self._centre_no_data(plot)

    def refresh(self) -> None:
        """Pull the latest snapshots and update the plot items whose data changed."""
        self._pace(self._active())
        utterances = self.recorder.utterances()
        version = self.recorder.version
        if self.player is not None:
            chunks = self.recorder.chunks()
            playing = chunks[-1].utterance if chunks else 0
            self.underruns.observe(playing, int(self.player.underruns))
        underrun_total = int(self.player.underruns) if self.player is not None else 0
        changed = self._summary_stale
        if version != self._drawn_version or underrun_total != self._drawn_underruns:
            self._draw_utterances(utterances[-MAX_UTTERANCES:])
            self._drawn_version, self._drawn_underruns = version, underrun_total
            changed = True
        samples = self.sampler.history(HISTORY_S)
        latest = samples[-1] if samples else None
        if (latest.time_s if latest else None) != self._drawn_sample_time:
            self._draw_samples(samples)
            self._drawn_sample_time = latest.time_s if latest else None
            changed = True
        if changed:
            self._update_summary(latest, utterances[-1:])
            self._summary_stale = False

    def _draw_utterances(self, utterances) -> None:
        self.redraws += 1
        if utterances:
            xs = np.array([u.number for u in utterances], dtype=float)
            heights = np.array([u.first_audio_ms for u in utterances], dtype=float)
            self.latency_bars.setOpts(x=xs, height=heights, width=0.7)
            x_range = (max(0.5, xs[-1] - MAX_UTTERANCES + 0.5), max(10.5, xs[-1] + 0.5))
            self.latency_plot.setXRange(*x_range, padding=0)
            self.latency_plot.setYRange(0, max(100.0, float(np.nanmax(heights)) * 1.15), padding=0)
            counts = np.array(self.underruns.counts([u.number for u in utterances]), dtype=float)
            self.underrun_bars.setOpts(x=xs, height=counts, width=0.7)
            self.underrun_plot.setXRange(*x_range, padding=0)
            self.underrun_plot.setYRange(0, max(5.0, float(counts.max()) * 1.2), padding=0)
        self._show_no_data(self.latency_plot, not utterances)
        self._show_no_data(self.underrun_plot, not utterances)
        groups = self.recorder.chunks_by_utterance(RTF_UTTERANCES)
        highest = 0.0
        for index, curve in enumerate(self.rtf_curves):
            position = index - (len(self.rtf_curves) - len(groups))  # the newest group takes the last curve
            if position < 0:
                curve.setData([], [])
                continue
            _, chunks = groups[position]
            rtf = np.array([c.rtf for c in chunks], dtype=float)
            rtf[~np.isfinite(rtf)] = np.nan
            curve.setData(np.arange(1, len(rtf) + 1, dtype=float), rtf, connect="finite")
            newest = position == len(groups) - 1
            curve.setPen(pg.mkPen(RTF_COLOURS[index], width=3 if newest else 1))
            if np.isfinite(rtf).any():
                highest = max(highest, float(np.nanmax(rtf)))
        longest = max((len(chunks) for _, chunks in groups), default=0)
        self.rtf_plot.setXRange(0.5, max(8.5, longest + 0.5), padding=0)
        self.rtf_plot.setYRange(0, max(1.5, highest * 1.1), padding=0)
        self._show_no_data(self.rtf_plot, not groups)
        self.values["rtf_lines"] = [n for n, _ in groups]
        self.values["underruns_per_utterance"] = {u.number: self.underruns.count(u.number) for u in utterances}

    def _draw_samples(self, samples) -> None:
        self.redraws += 1
        if samples:
            latest = samples[-1]
            now = latest.time_s
            t = np.array([s.time_s - now for s in samples])

            def series(name):
                values = [getattr(s, name) for s in samples]
                return np.array([np.nan if v is None else v for v in values], dtype=float)

            gpu = latest.source == "nvml"
            for curve, name in ((self.memory_curve, "vram_used_mb" if gpu else "ram_used_mb"),
                                (self.torch_allocated_curve, "torch_allocated_mb"),
                                (self.torch_reserved_curve, "torch_reserved_mb"),
                                (self.util_curve, "gpu_util_pct" if gpu else "cpu_pct"),
                                (self.temp_curve, "gpu_temp_c"), (self.power_curve, "gpu_power_w")):
                values = series(name)
                if np.isfinite(values).any():
                    curve.setData(t, values, connect="finite")
                elif curve.xData is not None and len(curve.xData):  # nothing to show (no torch CUDA, no GPU)
                    curve.setData([], [])
        self._show_no_data(self.memory_plot, not samples)
        self._show_no_data(self.load_plot, not samples)

    def _update_summary(self, latest, utterances) -> None:
        lines = []
        values: dict[str, object] = {}
        if latest is not None and latest.source == "nvml":
            used_gb = None if latest.vram_used_mb is None else latest.vram_used_mb / 1024
            total_gb = None if latest.vram_total_mb is None else latest.vram_total_mb / 1024
            lines.append(f"{latest.device_name}")
            lines.append(self.tr("VRAM {used} / {total} GB · util {util} · {temp} · {power}").format(
                used="–" if used_gb is None else f"{used_gb:.1f}", total="–" if total_gb is None else f"{total_gb:.1f}",
                util=_fmt(latest.gpu_util_pct, "%"), temp=_fmt(latest.gpu_temp_c, "°C"),
                power=_fmt(latest.gpu_power_w, "W")))
            if latest.torch_allocated_mb is not None:
                lines.append(self.tr("torch allocated {a} MB · reserved {r} MB").format(
                    a=f"{latest.torch_allocated_mb:.0f}", r=f"{latest.torch_reserved_mb:.0f}"))
            values.update(vram_used_mb=latest.vram_used_mb, gpu_util_pct=latest.gpu_util_pct,
                          gpu_temp_c=latest.gpu_temp_c, gpu_power_w=latest.gpu_power_w)
        elif latest is not None:
            lines.append(self.tr("CPU {cpu} · RAM {used} / {total} GB").format(
                cpu=_fmt(latest.cpu_pct, "%"), used=f"{(latest.ram_used_mb or 0) / 1024:.1f}",
                total=f"{(latest.ram_total_mb or 0) / 1024:.1f}"))
            values.update(cpu_pct=latest.cpu_pct, ram_used_mb=latest.ram_used_mb)
        if utterances:
            last = utterances[-1]
            lines.append(self.tr("Last: first audio {ms} ms · RTF {rtf} · underruns {n}").format(
                ms=f"{last.first_audio_ms:.0f}", rtf=f"{last.rtf:.2f}", n=self.underruns.count(last.number)))
            values.update(first_audio_ms=last.first_audio_ms, rtf=last.rtf,
                          underruns=self.underruns.count(last.number))
        else:
            lines.append(self.tr("No utterance yet: press Speak to see its speed here."))
        self.values.update(values)
        text = "\n".join(lines)
        if text != self.summary.text():
            self.summary.setText(text)
