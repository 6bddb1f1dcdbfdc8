"""What the Model lab shows before there is anything to compare: what to do, and a one-click example."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.widgets.job_progress import show_fraction
from app.widgets.run_row import RunRow
from app.workspaces.model_lab.state import EXAMPLE_LOG, ExampleSettings

__all__ = ["EmptyState"]

STEPS = (
    "<b>1. Bring data.</b> Generate a data set from an analytic system (Data source, on the left), "
    "or open a hardware log with File &gt; Open Log… (CSV, TSV, NPZ, Parquet, ROS bags, MCAP).",
    "<b>2. Add models.</b> Pick a model type on the left, press Add (or Add sweep for several "
    "training-set sizes), then Train all.",
    "<b>3. Compare.</b> The metrics table, rollouts against the data, phase portraits and errors "
    "against the prediction horizon appear here; Export writes a report.",
)


class EmptyState(QWidget):
    """The Compare tab's first screen. ``row`` is the example's Run/Cancel/progress row."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("modelLabEmptyState")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 24, 24, 24)
        layout.addStretch(1)
        title = QLabel("Compare learned dynamics models")
        title.setObjectName("placeholderTitle")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title.setWordWrap(True)
        layout.addWidget(title)
        for text in STEPS:
            label = QLabel(text)
            label.setWordWrap(True)
            layout.addWidget(label)
        settings = ExampleSettings()
        note = QLabel(
            f"Or try it at once: trains {' and '.join(settings.models)} for {settings.epochs} epochs "
            f"on the shipped log {EXAMPLE_LOG}.csv (a pendulum with friction) in the background, "
            "then shows the comparison."
        )
        note.setWordWrap(True)
        layout.addSpacing(12)
        layout.addWidget(note)
        self.row = RunRow("Compare models on an example log", progress=True, run_name="exampleButton")
        layout.addWidget(self.row)
        layout.addStretch(2)

    def show_progress(self, fraction, message: str) -> None:
        show_fraction(self.row.progress, fraction, message or "working")
