"""The Compare panel: a sortable metrics table and four plots of every trained model against the data.

Table columns: train, test, long-term integration, energy and inertia MSE, wall time (CSV export).
Against a log, a second table gives one-step and k-step errors per signal. Plots (a 2 x 3 grid,
all visible, each exportable as PNG and SVG):

- rollouts against the data over time (a log: the whole measured signal, the validation range
  shaded, each model's k-step rollouts over it);
- phase portrait (q against qd);
- energy over time (generated data; a log has no known energy);
- error against the prediction horizon (log scale);
- learned against true inertia or potential along the data (generated data, models with a
  Lagrangian; the learned potential shifted by a constant to the true one's mean);
- a metric against the training-set size N, one line per model type (the SyMo paper's
  Fig. 3 when runs sweep N).

:meth:`export_report` writes everything (PNG + SVG figures, CSV + JSON table) in one call.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.widgets.layout import SidePanel
from app.widgets.plots import color, export_png_svg, make_plot, shade_region
from app.workspaces.model_lab import lab_jobs
from app.workspaces.model_lab.state import SIZE_METRICS, ModelLabState
from app.workspaces.model_lab.torque_plot import draw_torque_bars

__all__ = ["TABLE_COLUMNS", "ComparePanel"]

# (row key, header)
TABLE_COLUMNS = (
    ("model", "model"),
    ("type", "type"),
    ("trajectories", "N"),
    ("train_mse", "train MSE"),
    ("test_mse", "test MSE"),
    ("integration_mse", "integration MSE"),
    ("energy_mse", "energy MSE"),
    ("inertia_mse", "inertia MSE"),
    ("torque_rmse", "torque RMSE [N m]"),
    ("torque_rmse_sliding", "sliding [N m]"),
    ("noise_level", "noise [N m]"),
    ("rollout_rmse_0.1", "rollout RMSE 0.1 s [rad]"),
    ("rollout_rmse_0.5", "0.5 s [rad]"),
    ("rollout_rmse_1", "1 s [rad]"),
    ("seconds", "wall time [s]"),
    ("epochs", "epochs"),
    ("note", "note"),
)
# the columns of a comparison on a robot's log: shown only when a row has them
ROBOT_COLUMNS = ("torque_rmse", "torque_rmse_sliding", "noise_level", "rollout_rmse_0.1", "rollout_rmse_0.5",
                 "rollout_rmse_1", "note")
FIGURES = ("rollout", "phase", "energy", "horizon", "inertia", "size", "torque")


def rows_height(table: QTableWidget, rows: int) -> int:
    """The height a table needs to show its header and ``rows`` rows."""
    row = table.verticalHeader().defaultSectionSize()
    header = table.horizontalHeader().sizeHint().height()
    return header + rows * row + 2 * table.frameWidth() + 4


def rate_label(label: str) -> str:
    """"cart_x [m]" -> "d(cart_x)/dt [m/s]"; a label without a unit -> "d(label)/dt"."""
    if label.endswith("]") and " [" in label:
        base, unit = label[:-1].rsplit(" [", 1)
        return f"d({base})/dt [{unit}/s]"
    return f"d({label})/dt"


class _SortItem(QTableWidgetItem):
    """A cell that sorts by its number (None/NaN last), shows it compactly."""

    def __init__(self, value):
        self.number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value)
            self.number = v if math.isfinite(v) else math.inf
            text = f"{v:.4g}" if math.isfinite(v) else "diverged"
            if isinstance(value, int):
                text = str(value)
        else:
            text = "—" if value is None else str(value)
        super().__init__(text)
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other):
        if isinstance(other, _SortItem) and (self.number is not None or other.number is not None):
            a = self.number if self.number is not None else math.inf
            b = other.number if other.number is not None else math.inf
            return a < b
        return self.text() < other.text()


class ComparePanel(QWidget):
    """Observes a :class:`ModelLabState` (its own when none is given): data, runs, which plots apply."""

    # "Show on robot": (the log's data source, the chosen run's model or None, the run's name)
    show_on_robot = Signal(dict, object, str)

    def __init__(self, ctx, parent: QWidget | None = None, state: ModelLabState | None = None):
        super().__init__(parent)
        self.ctx = ctx
        self.state = state if state is not None else ModelLabState(getattr(ctx, "jobs", None))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Signal"))
        self.signal = QComboBox()
        self.signal.setMinimumContentsLength(8)
        self.signal.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.signal.currentIndexChanged.connect(lambda i: self._choice(signal=i))
        bar.addWidget(self.signal, 1)
        bar.addStretch(1)
        self.robot_button = QPushButton("Show on robot")
        self.robot_button.setObjectName("showOnRobot")
        self.robot_button.setToolTip("Play the log on the robot in the Robot workspace, with the selected "
                                     "model's prediction as a ghost")
        self.robot_button.setEnabled(False)
        self.robot_button.clicked.connect(self.request_show_on_robot)
        bar.addWidget(self.robot_button)
        bar2 = QHBoxLayout()
        self.learned_label = QLabel("Learned vs true")
        bar2.addWidget(self.learned_label)
        self.learned = QComboBox()
        self.learned.addItems(["inertia", "potential"])
        self.learned.currentTextChanged.connect(lambda t: self._choice(learned=t))
        bar2.addWidget(self.learned)
        self.size_label = QLabel("Error vs N shows")
        bar2.addWidget(self.size_label)
        self.size_metric = QComboBox()
        self.size_metric.addItems(list(SIZE_METRICS))
        self.size_metric.currentTextChanged.connect(lambda t: self._choice(size_metric=t))
        bar2.addWidget(self.size_metric)
        bar2.addStretch(1)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setObjectName("reportButton")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        self.report_action = menu.addAction("Report (figures + table)…", self._report_dialog)
        self.report_action.setToolTip("PNG + SVG figures, CSV + JSON table, into one folder")
        self.csv_action = menu.addAction("Metrics table as CSV…", self._csv_dialog)
        self.figures_action = menu.addAction("Figures (PNG + SVG)…", self._figures_dialog)
        self.export_button.setMenu(menu)
        bar.addWidget(self.export_button)
        layout.addLayout(bar)
        layout.addLayout(bar2)

        split = QSplitter(Qt.Orientation.Vertical)
        self.tables = QTabWidget()
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setObjectName("compareTable")
        self.table.setHorizontalHeaderLabels([h for _, h in TABLE_COLUMNS])
        sliding = self.table.horizontalHeaderItem([k for k, _ in TABLE_COLUMNS].index("torque_rmse_sliding"))
        sliding.setToolTip("Torque RMSE over the samples where the joint slides (|qd| >= 0.1 rad/s). Near rest a "
                           "dry friction sticks: the torque is not a function of the motion there, so no model, "
                           "the true one included, predicts it")
        self.table.verticalHeader().setVisible(False)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(rows_height(self.table, 5))
        self.tables.addTab(self.table, "Metrics")
        self.signal_table = QTableWidget(0, 0)
        self.signal_table.setObjectName("signalTable")
        self.signal_table.setSortingEnabled(True)
        self.signal_table.verticalHeader().setVisible(False)
        self.tables.addTab(self.signal_table, "Per signal (log)")
        split.addWidget(self.tables)

        plots_box = QWidget()
        pv = QVBoxLayout(plots_box)
        pv.setContentsMargins(0, 0, 0, 0)
        self.hidden_note = QLabel("")
        self.hidden_note.setObjectName("hiddenPlots")
        self.hidden_note.setWordWrap(True)
        self.hidden_note.setStyleSheet("color: #8a8f98;")
        pv.addWidget(self.hidden_note)
        grid_widget = QWidget()
        self.grid = QGridLayout(grid_widget)
        self.grid.setContentsMargins(0, 0, 0, 0)
        # on a short screen the plots keep a readable height and scroll (vertically only)
        self.plot_scroll = SidePanel(grid_widget, preferred_width=600)
        pv.addWidget(self.plot_scroll, 1)
        self.plots = {
            "rollout": make_plot("Rollouts vs data", "t [s]", "q"),
            "phase": make_plot("Phase portrait", "q", "qd"),
            "energy": make_plot("Energy", "t [s]", "E [J]"),
            "horizon": make_plot("Error vs horizon", "horizon [s]", "MSE of q", log_y=True),
            "inertia": make_plot("Inertia", "t [s]", "H"),
            "size": make_plot("Error vs N", "trajectories N", "MSE"),
            "torque": make_plot("Torque RMSE per joint (validation)", "joint", "RMSE [N m]"),
        }
        self.plots["size"].getPlotItem().setLogMode(x=True, y=True)
        for key, plot in self.plots.items():
            plot.setObjectName(f"{key}Plot")
            plot.setMinimumSize(180, 150)
        self._columns = 0
        self._shown: list[str] = []
        split.addWidget(plots_box)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([rows_height(self.table, 5) + 30, 520])
        split.setChildrenCollapsible(False)
        self.splitter = split
        layout.addWidget(split, 1)

        ev = self.state.events
        ev.data.connect(lambda data: self._on_data())
        ev.runs.connect(lambda runs: self._on_runs())
        ev.plots.connect(self._apply_plots)
        self._apply_plots(self.state.applicable_plots())

    # -- data and runs (kept in the state) -----------------------------------------------
    @property
    def dataset(self):
        return self.state.data.dataset if self.state.data is not None else None

    @property
    def prepared(self):
        return self.state.data.prepared if self.state.data is not None else None

    @property
    def source(self) -> dict | None:
        return self.state.data.source if self.state.data is not None else None

    @property
    def runs(self) -> list:
        return self.state.runs

    @property
    def is_log(self) -> bool:
        return self.state.data is not None and self.state.data.is_log

    def set_data(self, dataset, source: dict, prepared=None) -> None:
        self.state.set_data(dataset, source, prepared)

    def set_runs(self, runs: list) -> None:
        """Show these runs (those with results) in the tables and plots."""
        self.state.set_runs(runs)

    def rows(self) -> list[dict]:
        return [dict(r.row) for r in self.runs]

    def request_show_on_robot(self) -> None:
        """Emit :attr:`show_on_robot` for the log shown, with the run selected in the metrics
        table (else the first run with a model) as the ghost."""
        if not self.is_log:
            return
        runs = [r for r in self.runs if getattr(r, "model", None) is not None]
        rows = sorted({i.row() for i in self.table.selectedIndexes()}) if hasattr(self, "table") else []
        chosen = None
        if rows:
            name = self.table.item(rows[0], 0).text() if self.table.item(rows[0], 0) else ""
            chosen = next((r for r in runs if r.name == name), None)
        chosen = chosen or (runs[0] if runs else None)
        source = dict(self.source)
        comparison = self.state.robot_comparison
        if comparison is not None and any(chosen is e for e in comparison.entries):
            # the log's robot as the comparison named it, the columns in its joint order (as the models saw them)
            source["robot"], source["mapping"] = comparison.robot, comparison.mapping
        self.show_on_robot.emit(source, chosen.model if chosen else None, chosen.name if chosen else "")

    def _choice(self, **kw) -> None:
        self.state.set_choices(**kw)
        self.redraw_plots()

    def _on_data(self) -> None:
        self.signal.blockSignals(True)
        self.signal.clear()
        self.signal.addItems(self.state.signal_names())
        self.signal.blockSignals(False)
        self.tables.setTabEnabled(1, self.is_log)
        self.robot_button.setEnabled(self.is_log)
        self.redraw_plots()

    def _on_runs(self) -> None:
        self._fill_table()
        self._fill_signal_table()
        self.redraw_plots()

    # -- which plots show ------------------------------------------------------------------
    def _apply_plots(self, applicable: dict) -> None:
        """Hide the plots that do not apply (a note says why); lay the others out in a grid."""
        shown = [k for k in FIGURES if applicable.get(k) is None]
        hidden = {k: why for k, why in applicable.items() if why is not None}
        if self.state.data is None:
            self.hidden_note.setText("")
        else:
            self.hidden_note.setText("Not shown: " + " · ".join(
                f"{self.plots[k].getPlotItem().titleLabel.text or k} ({why})" for k, why in hidden.items())
                if hidden else "")
        self.hidden_note.setVisible(bool(self.hidden_note.text()))
        for w in (self.learned, self.learned_label):
            w.setVisible(self.state.data is not None and applicable.get("inertia") is None)
        for w in (self.size_metric, self.size_label):
            w.setVisible(self.state.data is not None and applicable.get("size") is None)
        self._shown = shown
        self._relayout(force=True)

    def _relayout(self, force: bool = False) -> None:
        columns = 2 if self.width() < 900 or len(self._shown) <= 4 else 3
        if not force and columns == self._columns:
            return
        self._columns = columns
        for plot in self.plots.values():
            self.grid.removeWidget(plot)
            plot.hide()
        for i, key in enumerate(self._shown):
            self.grid.addWidget(self.plots[key], i // columns, i % columns)
            self.plots[key].show()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._relayout()

    def _fill_table(self) -> None:
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(self.runs))
        for i, run in enumerate(self.runs):
            for j, (key, _) in enumerate(TABLE_COLUMNS):
                value = run.row.get(key) if key not in ("model", "type") else \
                    (run.name if key == "model" else run.model_type)
                item = _SortItem(value)
                if key == "model":
                    item.setForeground(QColor(color(run.index)))
                self.table.setItem(i, j, item)
        for j, (key, _) in enumerate(TABLE_COLUMNS):   # a column no run fills is hidden (a log has no energy)
            if key not in ("model", "type"):
                filled = any(run.row.get(key) is not None for run in self.runs)
                self.table.setColumnHidden(j, not filled if self.runs else key in ROBOT_COLUMNS)
        self.table.setSortingEnabled(True)

    def _fill_signal_table(self) -> None:
        rows = [r for r in self.runs if isinstance(r.row.get("one_step"), dict)]
        signals = []
        for r in rows:
            for s in r.row["one_step"]:
                if s not in signals:
                    signals.append(s)
        horizon = next((r.row.get("horizon") for r in rows if r.row.get("horizon")), None)
        k = int(horizon) if horizon else "k"
        headers = ["model"] + [f"1-step {s}" for s in signals] + [f"{k}-step {s}" for s in signals]
        self.signal_table.setSortingEnabled(False)
        self.signal_table.clear()
        self.signal_table.setColumnCount(len(headers))
        self.signal_table.setHorizontalHeaderLabels(headers)
        self.signal_table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            vals = [r.name] + [r.row["one_step"].get(s) for s in signals] + \
                   [(r.row.get("k_step") or {}).get(s) for s in signals]
            for j, v in enumerate(vals):
                self.signal_table.setItem(i, j, _SortItem(v))
        self.signal_table.setSortingEnabled(True)

    # -- plots -----------------------------------------------------------------------------
    def redraw_plots(self) -> None:
        for plot in self.plots.values():
            item = plot.getPlotItem()
            item.clear()
            if item.legend is not None:
                item.legend.clear()
        if self.dataset is None:
            return
        j = max(0, self.signal.currentIndex())
        name = self.signal.currentText() or "q"
        self.plots["rollout"].getPlotItem().setLabel("left", name)
        self.plots["phase"].getPlotItem().setLabel("bottom", name)
        self.plots["phase"].getPlotItem().setLabel("left", rate_label(name))
        for plot in self.plots.values():
            plot.getPlotItem().enableAutoRange()
        if self.is_log:
            self._draw_log(j)
        else:
            self._draw_generated(j)
        self._draw_sizes()
        draw_torque_bars(self.plots["torque"], self.runs, self.state.joint_names())
        for key in ("rollout", "phase", "energy", "inertia"):
            _focus_on_reference(self.plots[key])

    def _draw_sizes(self) -> None:
        """One line per model type: the chosen metric against N (the paper's Fig. 3 for sweeps)."""
        metric = self.state.size_metric
        plot = self.plots["size"]
        plot.getPlotItem().setLabel("left", metric)
        by_type: dict[str, list] = {}
        for run in self.runs:
            v, n = run.row.get(metric), run.row.get("trajectories")
            if isinstance(v, (int, float)) and n and math.isfinite(v) and v > 0:
                by_type.setdefault(run.model_type, []).append((int(n), float(v), run.index))
        for kind, pts in by_type.items():
            pts.sort()
            pen = pg.mkPen(color(pts[0][2]), width=2)
            plot.plot([p[0] for p in pts], [p[1] for p in pts], name=kind, pen=pen, symbol="o",
                      symbolBrush=color(pts[0][2]), symbolSize=7)
        # the N axis labelled at the sizes trained (8, 16, 32, ...), not at log-scale minor ticks
        sizes = sorted({p[0] for pts in by_type.values() for p in pts})
        bottom = plot.getPlotItem().getAxis("bottom")
        bottom.setTicks([[(math.log10(n), str(n)) for n in sizes], []] if sizes else None)
        if sizes:   # at least a factor of 4 around the sizes, so one size is not a lone crowded tick
            lo, hi = math.log10(sizes[0]), math.log10(sizes[-1])
            pad = max(0.1 * (hi - lo), 0.5 * max(0.0, math.log10(4.0) - (hi - lo)))
            plot.getPlotItem().setXRange(lo - pad, hi + pad, padding=0)

    def _draw_log(self, j: int) -> None:
        roll, phase, energy = (self.plots[k] for k in ("rollout", "phase", "energy"))
        p = self.prepared
        if p is not None:
            t, q = np.asarray(p.t, dtype=float), np.asarray(p.q[:, j], dtype=float)
            if getattr(p, "episode", None) is not None:   # episodes restart their clocks: no line between them
                starts = np.flatnonzero(np.diff(p.episode)) + 1
                t, q = np.insert(t, starts, np.nan), np.insert(q, starts, np.nan)
            roll.plot(t, q, name="measured", pen=pg.mkPen("#888888", width=1), connect="finite")
            for seg in p.segments(p.val_mask):
                shade_region(roll, float(p.t[seg.start]), float(p.t[seg.stop - 1]))
        data = self.dataset
        n = data.system.dof
        # measured phase portrait over the validation rollouts
        xs = data.long_x[:, 2:]
        phase.plot(_breaks(xs[..., j]), _breaks(xs[..., n + j]), name="measured", pen=pg.mkPen("#888888"),
                   connect="finite")
        for run in self.runs:
            c = run.curves
            if not c:
                continue
            pen = pg.mkPen(color(run.index), width=2)
            roll.plot(_breaks(c["t"]), _breaks(c["q_pred"][..., j]), name=run.name, pen=pen, connect="finite")
            phase.plot(_breaks(c["q_pred"][..., j]), _breaks(c["qd_pred"][..., j]), name=run.name, pen=pen,
                       connect="finite")
            self._draw_horizon(run, data.h)

    def _draw_generated(self, j: int) -> None:
        roll, phase, energy = (self.plots[k] for k in ("rollout", "phase", "energy"))
        energy.getPlotItem().setTitle("Energy")
        inertia = self.plots["inertia"]
        potential = self.state.learned == "potential"
        inertia.getPlotItem().setTitle(
            "Potential, learned vs true" if potential else "Inertia, learned vs true"
        )
        inertia.getPlotItem().setLabel("left", "V [J]" if potential else f"H[{j},{j}]")

        def learned(c, kind):
            a = c.get(f"potential_{kind}") if potential else c.get(f"inertia_{kind}")
            if a is None:
                return None
            return np.asarray(a) if potential else np.asarray(a)[:, j, j]

        truth_drawn = False
        for run in self.runs:
            c = run.curves
            if not c:
                continue
            if not truth_drawn:
                black = pg.mkPen("#888888", width=2)
                roll.plot(c["t"], c["q_true"][:, j], name="data", pen=black)
                phase.plot(c["q_true"][:, j], c["qd_true"][:, j], name="data", pen=black)
                energy.plot(c["t"], c["energy_true"], name="data", pen=black)
                if learned(c, "true") is not None:
                    inertia.plot(c["t"], learned(c, "true"), name="true", pen=black)
                truth_drawn = True
            pen = pg.mkPen(color(run.index), width=2)
            roll.plot(c["t"], _finite(c["q_pred"][:, j]), name=run.name, pen=pen, connect="finite")
            phase.plot(_finite(c["q_pred"][:, j]), _finite(c["qd_pred"][:, j]), name=run.name, pen=pen,
                       connect="finite")
            energy.plot(c["t"], _finite(c["energy_pred"]), name=run.name, pen=pen, connect="finite")
            if learned(c, "pred") is not None:
                inertia.plot(c["t"], _finite(learned(c, "pred")), name=run.name, pen=pen, connect="finite")
            self._draw_horizon(run, self.dataset.h)

    def _draw_horizon(self, run, h: float) -> None:
        err = np.asarray(run.curves.get("horizon_mse"), dtype=float)
        if err.size == 0:
            return
        x = h * np.arange(1, len(err) + 1)
        ok = np.isfinite(err) & (err > 0)
        self.plots["horizon"].plot(x[ok], err[ok], name=run.name, pen=pg.mkPen(color(run.index), width=2))

    # -- export ------------------------------------------------------------------------------
    def export_csv(self, path: str | Path) -> Path:
        return lab_jobs.write_csv(path, self.rows())

    def export_figures(self, directory: str | Path) -> list[Path]:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        out = []
        for key, plot in self.plots.items():
            if key == "inertia":   # both learned-against-true figures
                current = self.learned.currentIndex()
                for i in range(self.learned.count()):
                    self.learned.setCurrentIndex(i)
                    out += export_png_svg(plot, directory / self.learned.itemText(i))
                self.learned.setCurrentIndex(current)
            else:
                out += export_png_svg(plot, directory / key)
        return out

    def export_report(self, directory: str | Path) -> list[Path]:
        """Figures (PNG + SVG), the table (CSV + JSON with the data source) into ``directory``."""
        if not self.runs:
            raise ValueError("no trained models to report on")
        directory = Path(directory)
        files = self.export_figures(directory)
        info = {
            "source": self.source,
            "data": lab_jobs.data_summary(self.dataset) if self.dataset is not None else None,
            "horizon_mse": {
                r.name: lab_jobs.jsonable(r.curves.get("horizon_mse")) for r in self.runs if r.curves
            },
        }
        paths = lab_jobs.write_report(directory, self.rows(), lab_jobs.jsonable(info))
        return files + [paths["csv"], paths["json"]]

    def _csv_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export metrics", "compare.csv", "CSV (*.csv)")
        if path:
            try:
                self.export_csv(path)
            except OSError as exc:
                self.ctx.show_error("Export CSV", str(exc))

    def _figures_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export figures to")
        if folder:
            try:
                self.export_figures(folder)
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Export figures", str(exc))

    def _report_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Write the report to")
        if folder:
            try:
                files = self.export_report(folder)
                self.ctx.status(f"report: {len(files)} files in {folder}")
            except (OSError, ValueError) as exc:
                self.ctx.show_error("Report", str(exc))


REFERENCE_NAMES = ("data", "measured", "true")


def _span(a) -> tuple[float, float] | None:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return (float(a.min()), float(a.max())) if a.size else None


def _focus_on_reference(plot, margin: float = 1.0, blowup: float = 4.0, flat: float = 0.05) -> None:
    """Keep the data in view when a diverging model's curve would dwarf it.

    The reference curve's (data / measured / true) extent on an axis is its span, but at least
    ``flat`` times its largest magnitude: a conserved energy or a constant inertia is a flat
    line, and its zero span would otherwise zoom the axis onto a band a few ulps wide, where
    every model's curve crosses as a vertical line. When the curves span more than ``blowup``
    times that extent, the axis shows the reference range widened by ``margin`` of the extent on
    each side; otherwise (or when the reference is flat at zero) the plot autoscales.
    """
    items = plot.getPlotItem().listDataItems()
    refs = [it for it in items if it.name() in REFERENCE_NAMES]
    if not refs:
        return
    for axis, attr in (("x", "xData"), ("y", "yData")):
        ref = _span(np.concatenate([np.asarray(getattr(it, attr), dtype=float).ravel() for it in refs]))
        every = _span(np.concatenate([np.asarray(getattr(it, attr), dtype=float).ravel() for it in items
                                      if getattr(it, attr) is not None]))
        if ref is None or every is None:
            continue
        width = max(ref[1] - ref[0], flat * max(abs(ref[0]), abs(ref[1])))
        if width <= 0.0:
            continue
        if (every[1] - every[0]) > blowup * width:
            mid = 0.5 * (ref[0] + ref[1])
            lo, hi = mid - (0.5 + margin) * width, mid + (0.5 + margin) * width
            if axis == "x":
                plot.getPlotItem().setXRange(lo, hi, padding=0)
            else:
                plot.getPlotItem().setYRange(lo, hi, padding=0)


def _finite(a) -> np.ndarray:
    a = np.asarray(a, dtype=float).copy()
    a[~np.isfinite(a)] = np.nan
    return a


def _breaks(a) -> np.ndarray:
    """(R, k) pieces -> one (R * (k + 1),) array with NaN between pieces (for connect='finite')."""
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        return _finite(a)
    pad = np.full((a.shape[0], 1), np.nan)
    return _finite(np.concatenate([a, pad], axis=1).reshape(-1))
