"""The one form rule, typed like a user: a refused value stays as typed, turns red, the reason
shows next to the form naming the field (never a command-line flag), and Run/Optimise waits
until it is fixed. Inconsistent input (a target beyond the horizon) is warned about inline."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.widgets.forms import INVALID_STYLE, DataclassForm
from engine.car.costs import Target
from engine.robots.ik import IKOptions


def _type(qtbot, spin, text: str) -> None:
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), text)
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)


def test_minus_five_in_the_car_horizon_is_red_with_its_reason_and_optimise_waits(car_page, qtbot):
    panel = car_page.plan_panel
    horizon_before = car_page.state.horizon
    assert panel.optimise_button.isEnabled()
    _type(qtbot, panel.horizon_spin, "-5")
    assert panel.horizon_spin.value() == -5                     # kept as typed, not clamped to 5
    assert panel.horizon_spin.styleSheet() == INVALID_STYLE
    problem = panel.problem_form.problem_label
    assert problem.isVisible() and problem.text().startswith("Horizon (steps): -5 is below the minimum 1")
    assert not panel.optimise_button.isEnabled()
    assert "Horizon (steps)" in panel.optimise_button.toolTip()
    assert car_page.state.horizon == horizon_before              # the state keeps the last good value
    _type(qtbot, panel.horizon_spin, "60")
    assert panel.horizon_spin.styleSheet() == "" and not problem.isVisible()
    assert car_page.state.horizon == 60 and panel.optimise_button.isEnabled()


def test_targets_beyond_the_horizon_are_warned_about_and_optimise_waits(car_page, qtbot):
    panel, state = car_page.plan_panel, car_page.state
    _type(qtbot, panel.horizon_spin, "60")
    state.set_targets([Target(20, 1.0, 0.0, 0.0), Target(40, 2.0, 0.5, 0.0)])
    assert not panel.horizon_warning.isVisible() and panel.optimise_button.isEnabled()
    _type(qtbot, panel.horizon_spin, "30")
    assert state.horizon == 30
    warning = panel.horizon_warning
    assert (
        warning.isVisible() and "Target 2 (step 40)" in warning.text() and "horizon of 30" in warning.text()
    )
    assert not panel.optimise_button.isEnabled()
    assert "beyond the horizon" in panel.optimise_button.toolTip()
    state.edit_target(1, step=25)                                 # the cause gone, the warning goes
    assert not warning.isVisible() and panel.optimise_button.isEnabled()


def test_a_negative_ik_tolerance_names_the_field_at_once_and_optimise_waits(qtbot):
    from app.workspaces.robot.state import RobotState
    from app.workspaces.robot.targets_panel import TargetsPanel

    panel = TargetsPanel(None, RobotState())
    qtbot.addWidget(panel)
    panel.show()
    panel.options_box.setChecked(True)                            # the user opens "Solver options"
    spin = panel.options_form.editor("tol_pos")
    assert panel.optimise_button.isEnabled()
    _type(qtbot, spin, "-5")
    problem = panel.options_form.problem_label.text()
    assert problem.startswith("Position tolerance (m): "), problem
    assert "--tol-pos" not in problem and "tol_pos" not in problem
    assert spin.styleSheet() == INVALID_STYLE
    assert not panel.optimise_button.isEnabled()
    _type(qtbot, spin, "0.002")
    assert panel.optimise_button.isEnabled() and panel.ik_options().tol_pos == 0.002
    panel.options_box.setChecked(False)
    panel.options_form.set_field("tol_pos", -1.0)                 # refused while the box is closed:
    assert panel.options_box.isChecked() and panel.options_form.isVisible()   # it opens on the field


def test_every_form_checks_its_dataclass_as_it_is_typed(qtbot):
    """No ranges given: the dataclass's own checks (the ones the CLI runs) decide, per field."""
    form = DataclassForm(IKOptions, include=["mu_min", "mu_max"])
    qtbot.addWidget(form)
    seen = []
    form.validity_changed.connect(seen.append)
    form.set_field("mu_max", 1e-4)                  # below mu_min: refused by IKOptions itself
    assert seen == [False] and list(form.problems()) == ["mu_max"]
    assert form.editor("mu_max").styleSheet() == INVALID_STYLE
    assert form.editor("mu_min").styleSheet() == ""
    form.set_field("mu_max", 1e6)
    assert seen == [False, True] and form.problems() == {} and form.value().mu_max == 1e6
