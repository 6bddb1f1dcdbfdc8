"""The widget kit (app/widgets): forms that reject out-of-range values and say why, the Run/Cancel
row that follows them, the loss plot keyed by run or by loss term, side panels that do not scroll
sideways."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from app.widgets.forms import DataclassForm, FieldSpec, FormError, range_problem
from app.widgets.layout import SidePanel
from app.widgets.plots import LossPlot, curve_data
from app.widgets.run_row import RunRow


@dataclass
class Task:
    q0: tuple[float, float] = (-0.6, -0.2)
    period: float = 2.5
    epochs: int = 10
    name: str = "swing"


def _type(qtbot, editor, text):
    editor.lineEdit().selectAll()
    qtbot.keyClicks(editor.lineEdit(), text)
    qtbot.keyClick(editor.lineEdit(), Qt.Key.Key_Return)


def test_range_problem_in_words():
    assert range_problem(1.0, 0.0, 2.0) is None
    assert range_problem(30.0, 0.2, 20.0) == "30 is above the maximum 20 (allowed 0.2 to 20)"
    assert range_problem(-1.0, 0.0, None) == "-1 is below the minimum 0"
    assert range_problem(float("nan"), None, None) == "must be a finite number"


def test_typed_values_out_of_range_are_rejected_not_clamped(qtbot):
    form = DataclassForm(Task(), specs={"q0": FieldSpec("start q0 (rad)", -3.2, 3.2),
                                        "period": FieldSpec("period T (s)", 0.2, 20.0),
                                        "epochs": FieldSpec("epochs", 1, 1000)})
    qtbot.addWidget(form)
    row = RunRow("Learn")
    qtbot.addWidget(row)
    row.watch_forms(form)
    form.show()
    row.show()
    validity = []
    form.validity_changed.connect(validity.append)
    assert form.field_names() == ["q0", "period", "epochs"]
    assert row.run_button.isEnabled()
    period = form.editor("period")
    _type(qtbot, period, "30")
    assert period.value() == 30.0                        # kept as typed, not clamped to 20
    assert form.problems() == {"period": "30 is above the maximum 20 (allowed 0.2 to 20)"}
    assert validity == [False]
    assert form.problem_label.isVisible() and "period T (s)" in form.problem_label.text()
    assert "above the maximum" in period.toolTip()
    assert not row.run_button.isEnabled() and "period T (s)" in row.run_button.toolTip()
    try:
        form.value()
        raise AssertionError("value() accepted an out-of-range period")
    except FormError as exc:
        assert exc.field == "period" and "above the maximum 20" in str(exc)
    _type(qtbot, period, "3.5")
    assert form.is_valid() and validity == [False, True] and row.run_button.isEnabled()
    assert form.value() == Task(period=3.5)
    # integers too; and while a job runs Run stays disabled whatever the form
    _type(qtbot, form.editor("epochs"), "0")
    assert "epochs" in form.problems() and form.editor("epochs").value() == 0
    form.set_field("epochs", 5)
    assert form.is_valid()
    row.set_running(True)
    assert not row.run_button.isEnabled() and row.cancel_button.isEnabled()
    row.set_running(False)
    assert row.run_button.isEnabled() and not row.cancel_button.isEnabled()
    row.set_ready(False, "learn a mode first")
    assert not row.run_button.isEnabled() and row.run_button.toolTip() == "learn a mode first"


def test_pair_fields_are_two_spin_boxes_and_set_field_emits_once(qtbot):
    form = DataclassForm(Task(), include=["q0", "name"], ranges={"q0": (-3.2, 3.2)})
    qtbot.addWidget(form)
    changes = []
    form.changed.connect(lambda: changes.append(1))
    parts = form.editor("q0").parts
    assert len(parts) == 2 and parts[0].value() == -0.6 and parts[1].value() == -0.2
    form.set_field("q0", (0.25, -1.5))
    assert changes == [1] and form.value().q0 == (0.25, -1.5)
    parts[1].setValue(4.0)
    assert form.problems() == {"q0": "4 is above the maximum 3.2 (allowed -3.2 to 3.2)"}


def test_loss_plot_by_run_and_by_loss_term(qtbot):
    terms = LossPlot("", keys=("total", "task"))
    qtbot.addWidget(terms)
    assert terms.keys() == ["total", "task"]
    terms.append_values(1, {"total": 2.0, "task": 1.0, "other": 5.0})
    terms.append_values(2, {"total": 1.0, "task": float("nan")})
    assert terms.points("total") == 2 and terms.points("task") == 1 and "other" not in terms.keys()
    terms.set_history({"total": [3.0, 2.0, 1.0]})
    x, y = curve_data(terms.curves["total"])
    np.testing.assert_allclose(x, [1, 2, 3])
    assert terms.points("task") == 0
    terms.clear_data()
    assert terms.points("total") == 0 and terms.keys() == ["total", "task"]


def test_side_panel_scrolls_vertically_only_and_is_as_wide_as_its_content(qtbot):
    content = QWidget()
    lay = QVBoxLayout(content)
    for i in range(60):
        label = QLabel(f"a line of controls number {i}")
        label.setMinimumWidth(220)
        lay.addWidget(label)
    panel = SidePanel(content)
    qtbot.addWidget(panel)
    panel.resize(panel.minimumSizeHint().width(), 300)
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert panel.verticalScrollBar().maximum() > 0
    assert content.width() >= 220 and content.width() <= panel.viewport().width()


def test_splitter_sizes_are_remembered_and_panels_collapse(qtbot, tmp_path):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QSplitter

    from app.widgets.layout import remember_splitter

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)

    def make():
        splitter = QSplitter()
        for _ in range(2):
            splitter.addWidget(QLabel("panel"))
        qtbot.addWidget(splitter)
        splitter.resize(600, 200)
        splitter.show()
        qtbot.waitExposed(splitter)
        remember_splitter(splitter, settings, "test/splitter", default=[300, 300])
        return splitter

    first = make()
    assert first.isCollapsible(0) and first.isCollapsible(1)
    first.setSizes([0, 600])                          # the side panel collapsed
    first.splitterMoved.emit(0, 1)
    second = make()
    assert second.sizes()[0] == 0 and second.sizes()[1] > 500


def test_numbers_stay_readable_under_the_app_style_sheet(qtbot):
    """The style sheet once squeezed a spin box's text field to 1 px (the numbers vanished)."""
    from engine.paths import resource

    form = DataclassForm(Task(), specs={"q0": FieldSpec("q0", -3.2, 3.2), "period": FieldSpec("T", 0.2, 20)})
    form.setStyleSheet(resource("style.qss").read_text(encoding="utf-8"))
    qtbot.addWidget(form)
    form.resize(360, 120)
    form.show()
    qtbot.waitExposed(form)
    for editor in [form.editor("period"), *form.editor("q0").parts]:
        assert editor.lineEdit().width() > editor.width() // 2
        assert editor.lineEdit().text() in ("2.5", "-0.6", "-0.2")


def test_collapse_button_hides_and_restores_the_side_panel(qtbot, tmp_path):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QSplitter

    from app.widgets.layout import collapse_button, remember_splitter

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    splitter = QSplitter()
    for _ in range(2):
        splitter.addWidget(QLabel("panel"))
    qtbot.addWidget(splitter)
    splitter.resize(800, 200)
    splitter.show()
    qtbot.waitExposed(splitter)
    remember_splitter(splitter, settings, "k", default=[300, 500])
    button = collapse_button(splitter, 0)
    before = splitter.sizes()[0]
    assert before > 0 and "Hide" in button.toolTip()
    button.click()
    assert splitter.sizes()[0] == 0 and "Show" in button.toolTip()
    assert settings.value("k").split(",")[0] == "0"            # remembered collapsed
    button.click()
    assert abs(splitter.sizes()[0] - before) <= 2


def test_run_row_keeps_its_own_tooltip_when_nothing_blocks_it(qtbot):
    from app.widgets.run_row import RunRow

    row = RunRow("Optimise", run_tooltip="Solve IK for all targets")
    qtbot.addWidget(row)
    assert row.run_button.toolTip() == "Solve IK for all targets"
    row.set_ready(False, "add a target first")
    assert row.run_button.toolTip() == "add a target first" and not row.run_button.isEnabled()
    row.set_ready(True)
    row.set_running(True)
    assert row.run_button.toolTip() == "Solve IK for all targets" and not row.run_button.isEnabled()
    clicks = []
    row.run_clicked.connect(lambda: clicks.append("run"))
    row.set_running(False)
    row.run_button.click()
    assert clicks == ["run"]


def test_elided_label_never_widens_its_row(qtbot):
    from PySide6.QtWidgets import QHBoxLayout, QWidget

    from app.widgets.layout import ElidedLabel

    host = QWidget()
    qtbot.addWidget(host)
    row = QHBoxLayout(host)
    label = ElidedLabel()
    row.addWidget(label, 1)
    host.resize(200, 30)
    host.show()
    text = "panda: 7 joints, 13 links, 9984 triangles; " * 10
    label.setText(text)
    assert host.minimumSizeHint().width() < 200
    shown = label.text()
    assert shown.endswith("…") and len(shown) < len(text) and text.startswith(shown[:-1])
    assert label.full_text() == text and label.toolTip() == text
    assert label.fontMetrics().horizontalAdvance(shown) <= label.width()
    label.setText("short")
    assert label.text() == "short"
