"""Live telemetry dock: first-audio latency, chunk RTF, memory over the last 60 s, GPU load (or CPU/RAM).

What it is for: showing how fast and how heavy synthesis is while it happens. It pulls snapshots from the
plain-Python TelemetrySampler / LatencyRecorder on a ~10 Hz QTimer and redraws only there (Friture's
pattern): nothing is drawn per chunk or per sample.

What it must not do: sample hardware itself or block; it never creates plot items after construction.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QLabel, QVBoxLayout, QWidget

from cosydesk.audio.player import Player
from cosydesk.telemetry.recorder import LatencyRecorder
from cosydesk.telemetry.sampler import TelemetrySampler

HISTORY_S = 60.0
MAX_UTTERANCES = 30
MAX_CHUNKS = 120


def _fmt(value, unit: str, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f} {unit}"


class TelemetryDock(QDockWidget):
    def __init__(self, sampler: TelemetrySampler, recorder: LatencyRecorder, player: Player | None = None,
                 parent: QWidget | None = None, refresh_ms: int = 100) -> None:
        super().__init__(parent)
        self.setObjectName("telemetryDock")
        self.sampler = sampler
        self.recorder = recorder
        self.player = player
        self.values: dict[str, object] = {}  # what the last refresh showed (for tests and accessibility)

        pg.setConfigOptions(antialias=False, background="w", foreground="#333")
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
        self.graphs.setMinimumWidth(340)
        layout.addWidget(self.summary)
        layout.addWidget(self.note)
        layout.addWidget(self.graphs, 1)
        self.setWidget(body)

        gpu = sampler.kind == "nvml"
        self.latency_plot = self.graphs.addPlot(row=0, col=0)
        self.latency_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush="#2f6fde")
        self.latency_plot.addItem(self.latency_bars)
        self.rtf_plot = self.graphs.addPlot(row=1, col=0)
        self.rtf_curve = self.rtf_plot.plot(pen=pg.mkPen("#6a3fc8", width=2))
        self.rtf_plot.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#b3261e", style=Qt.PenStyle.DashLine)))
        self.memory_plot = self.graphs.addPlot(row=2, col=0)
        self.memory_plot.setXRange(-HISTORY_S, 0, padding=0)
        if gpu:  # without a GPU there is one curve per plot and the title names it
            self.memory_plot.addLegend(offset=(5, 5))
        self.memory_curve = self.memory_plot.plot(pen=pg.mkPen("#2f6fde", width=2), name="NVML" if gpu else "RAM")
        self.torch_allocated_curve = self.memory_plot.plot(pen=pg.mkPen("#e8710a", width=1), name="torch alloc")
        self.torch_reserved_curve = self.memory_plot.plot(pen=pg.mkPen("#888", width=1), name="torch reserved")
        self.load_plot = self.graphs.addPlot(row=3, col=0)
        self.load_plot.setXRange(-HISTORY_S, 0, padding=0)
        self.load_plot.setYRange(0, 100, padding=0.02)
        if gpu:
            self.load_plot.addLegend(offset=(5, 5))
        self.util_curve = self.load_plot.plot(pen=pg.mkPen("#188038", width=2), name="util %" if gpu else "CPU %")
        self.temp_curve = self.load_plot.plot(pen=pg.mkPen("#d93025", width=1), name="°C")
        self.power_curve = self.load_plot.plot(pen=pg.mkPen("#f9ab00", width=1), name="W")
        self.rtf_plot.setYRange(0, 1.5, padding=0)
        for plot in (self.latency_plot, self.rtf_plot, self.memory_plot, self.load_plot):
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.showGrid(y=True, alpha=0.2)
        for curve in (self.memory_curve, self.util_curve, self.temp_curve, self.power_curve):
            curve.setClipToView(True)
        self.retranslate()

        self.timer = QTimer(self)
        self.timer.setInterval(refresh_ms)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def retranslate(self) -> None:
        gpu = self.sampler.kind == "nvml"
        self.setWindowTitle(self.tr("Telemetry"))
        size = "9pt"
        self.latency_plot.setTitle(self.tr("First audio (ms) per utterance"), size=size)
        self.rtf_plot.setTitle(self.tr("Chunk RTF (below 1 = faster than real time)"), size=size)
        self.memory_plot.setTitle(self.tr("VRAM (MB), last 60 s") if gpu else self.tr("RAM (MB), last 60 s"), size=size)
        self.load_plot.setTitle(self.tr("GPU util % · temp °C · power W") if gpu else self.tr("CPU load (%), last 60 s"), size=size)
        note = self.sampler.note
        self.note.setText(self.tr("No NVIDIA GPU found: showing CPU and RAM instead.") if note else "")
        self.note.setVisible(bool(note))

    def refresh(self) -> None:
        """Pull the latest snapshots and update the existing plot items."""
        utterances = self.recorder.utterances()[-MAX_UTTERANCES:]
        if utterances:
            first = max(0, len(self.recorder.utterances()) - MAX_UTTERANCES)
            xs = np.arange(first + 1, first + 1 + len(utterances), dtype=float)
            heights = np.array([u.first_audio_ms for u in utterances], dtype=float)
            self.latency_bars.setOpts(x=xs, height=heights, width=0.7)
            self.latency_plot.setXRange(max(0.5, xs[-1] - MAX_UTTERANCES + 0.5), max(10.5, xs[-1] + 0.5), padding=0)
        chunks = self.recorder.chunks()[-MAX_CHUNKS:]
        rtf = np.array([c.rtf for c in chunks], dtype=float)
        rtf = rtf[np.isfinite(rtf)]
        self.rtf_curve.setData(np.arange(len(rtf), dtype=float), rtf)
        if len(rtf):
            self.rtf_plot.setYRange(0, max(1.5, float(rtf.max()) * 1.1), padding=0)

        samples = self.sampler.history(HISTORY_S)
        latest = samples[-1] if samples else None
        if samples:
            now = samples[-1].time_s
            t = np.array([s.time_s - now for s in samples])

            def series(name):
                values = [getattr(s, name) for s in samples]
                return np.array([np.nan if v is None else v for v in values], dtype=float)

            gpu = latest.source == "nvml"
            self.memory_curve.setData(t, series("vram_used_mb" if gpu else "ram_used_mb"), connect="finite")
            allocated, reserved = series("torch_allocated_mb"), series("torch_reserved_mb")
            self.torch_allocated_curve.setData(t, allocated, connect="finite")
            self.torch_reserved_curve.setData(t, reserved, connect="finite")
            self.util_curve.setData(t, series("gpu_util_pct" if gpu else "cpu_pct"), connect="finite")
            self.temp_curve.setData(t, series("gpu_temp_c"), connect="finite")
            self.power_curve.setData(t, series("gpu_power_w"), connect="finite")
        self._update_summary(latest, utterances)

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
            lines.append(self.tr("last: first audio {ms} ms · RTF {rtf}").format(
                ms=f"{last.first_audio_ms:.0f}", rtf=f"{last.rtf:.2f}"))
            values.update(first_audio_ms=last.first_audio_ms, rtf=last.rtf)
        if self.player is not None:
            lines.append(self.tr("audio underruns: {n}").format(n=self.player.underruns))
            values["underruns"] = self.player.underruns
        self.values = values
        text = "\n".join(lines)
        if text != self.summary.text():
            self.summary.setText(text)
