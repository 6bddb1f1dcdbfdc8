"""A collapsed section takes its header's height and nothing more (issue 32: the Targets tab's
"Solver options" left an empty grey frame when closed)."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QLabel

from app.widgets.section import CollapsibleSection


def test_a_closed_section_is_its_header_only_and_opens_on_its_body(qtbot):
    section = CollapsibleSection("Solver options")
    section.body_layout.addWidget(QLabel("a field"))
    qtbot.addWidget(section)
    section.show()
    QApplication.processEvents()
    assert not section.isChecked() and section.body.isHidden()
    assert section.sizeHint().height() == section.header.sizeHint().height()
    seen = []
    section.toggled.connect(seen.append)
    section.setChecked(True)
    QApplication.processEvents()
    assert seen == [True] and section.body.isVisible()
    assert section.sizeHint().height() > section.header.sizeHint().height() + 10
    section.header.click()                                     # the header closes it again
    assert seen == [True, False] and not section.isChecked() and section.body.isHidden()


def test_the_targets_panel_solver_options_take_no_room_when_closed(qtbot):
    from app.workspaces.robot.state import RobotState
    from app.workspaces.robot.targets_panel import TargetsPanel

    panel = TargetsPanel(None, RobotState())
    qtbot.addWidget(panel)
    panel.show()
    QApplication.processEvents()
    box = panel.options_box
    assert box.title() == "Solver options" and not box.isChecked()
    assert box.height() <= box.header.sizeHint().height() + 2 and not panel.options_form.isVisible()
    box.setChecked(True)
    QApplication.processEvents()
    assert panel.options_form.isVisible()
