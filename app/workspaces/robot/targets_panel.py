"""Target poses for IK: pick an end-effector link, place targets (gizmos in the view or
typed values), Optimise / Follow / Cancel, and the solve's residual and message.

The targets belong to the workspace's :class:`~app.workspaces.robot.state.RobotState`: the
panel observes ``state.events.targets`` and shows each target as a :class:`Target` with a
:class:`~app.viewer.gizmo.TargetGizmo` in the view; every edit (a drag, typed values, add,
remove, position only) is a call on the state, so it is undoable and a script sees the same.
The panel emits ``targets_changed()`` after the shown targets follow the state,
``target_dragged()`` while a gizmo moves, ``drag_finished()`` when the mouse lets go, and
``optimise_requested()`` / ``cancel_requested()``; the page runs the solves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from scipy.spatial.transform import Rotation

from app.viewer.gizmo import TargetGizmo
from app.widgets.forms import DataclassForm
from app.widgets.run_row import RunRow
from app.widgets.section import CollapsibleSection
from engine.robots.ik import IKOptions

__all__ = ["Target", "TargetsPanel", "pose_from_xyz_rpy", "xyz_rpy_from_pose"]

TARGET_COLORS = [(1.0, 0.85, 0.1, 1.0), (0.1, 0.9, 1.0, 1.0), (1.0, 0.4, 0.9, 1.0),
                 (0.5, 1.0, 0.3, 1.0), (1.0, 0.55, 0.2, 1.0)]


def pose_from_xyz_rpy(xyz, rpy) -> np.ndarray:
    """(4, 4) from a position (m) and URDF roll-pitch-yaw (rad; R = Rz(y) Ry(p) Rx(r))."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()
    T[:3, 3] = xyz
    return T


def xyz_rpy_from_pose(T) -> tuple[np.ndarray, np.ndarray]:
    T = np.asarray(T, float)
    return T[:3, 3].copy(), Rotation.from_matrix(T[:3, :3]).as_euler("xyz")


@dataclass
class Target:
    """How the panel shows one of the state's targets: its link, gizmo and position-only flag."""

    link: str
    gizmo: TargetGizmo
    position_only: bool = False

    @property
    def pose(self) -> np.ndarray:
        return self.gizmo.pose


class TargetsPanel(QWidget):
    targets_changed = Signal()
    target_dragged = Signal()          # a gizmo moved under the mouse (follow mode solves)
    drag_finished = Signal()           # the mouse let go of a gizmo
    optimise_requested = Signal()
    cancel_requested = Signal()
    end_effector_changed = Signal(str)
    whole_body_changed = Signal()      # the held links or the base choice of a floating robot changed

    def __init__(self, view, state, parent=None):
        super().__init__(parent)
        self.view = view
        self.state = state
        self.targets: list[Target] = []
        self._updating = False
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.link_box = QComboBox()
        self.link_box.setToolTip("The end-effector link (or click a link in the view)")
        self.link_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.link_box.setMinimumContentsLength(14)      # long link names do not widen the side column
        self.link_box.currentTextChanged.connect(self._on_link_changed)
        form.addRow("End effector", self.link_box)
        layout.addLayout(form)
        buttons = QHBoxLayout()
        self.add_button = QPushButton("Add target")
        self.add_button.setToolTip("Place a target at the end effector's current pose")
        self.add_button.clicked.connect(lambda: self.add_target(self.link_box.currentText()))
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(self.clear)
        for b in (self.add_button, self.remove_button, self.clear_button):
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self.list = QListWidget()
        self.list.setMaximumHeight(110)
        self.list.currentRowChanged.connect(self._on_row_changed)
        layout.addWidget(self.list)
        self.hint = QLabel("Add a target for the end effector, drag its gizmo in the 3D view, then "
                           "Optimise: inverse kinematics reaches it (Follow keeps reaching while you drag).")
        self.hint.setObjectName("targetsHint")
        self.hint.setWordWrap(True)
        layout.addWidget(self.hint)
        self.targets_changed.connect(self._on_targets_changed)

        grid = QGridLayout()
        self.value_spins: list[QDoubleSpinBox] = []
        for k, (name, unit, rng) in enumerate([("x", " m", 5.0), ("y", " m", 5.0), ("z", " m", 5.0),
                                                ("roll", " °", 180.0), ("pitch", " °", 180.0),
                                                ("yaw", " °", 180.0)]):
            spin = QDoubleSpinBox()
            spin.setRange(-rng, rng)
            spin.setDecimals(4 if unit == " m" else 1)
            spin.setSingleStep(0.01 if unit == " m" else 5.0)
            spin.setSuffix(unit)
            spin.setKeyboardTracking(False)
            spin.setObjectName(f"target_{name}")
            spin.valueChanged.connect(self._on_typed)
            grid.addWidget(QLabel(name), k // 3 * 2, k % 3)
            grid.addWidget(spin, k // 3 * 2 + 1, k % 3)
            self.value_spins.append(spin)
        layout.addLayout(grid)
        self.position_only_box = QCheckBox("Position only (ignore orientation)")
        self.position_only_box.toggled.connect(self._on_position_only)
        layout.addWidget(self.position_only_box)

        self.run_row = RunRow("Optimise", run_tooltip="Solve IK for all targets (a job; the robot animates "
                                                      "to the solution)")
        self.optimise_button = self.run_row.run_button
        self.cancel_button = self.run_row.cancel_button
        self.run_row.run_clicked.connect(self.optimise_requested)
        self.run_row.cancel_clicked.connect(self.cancel_requested)
        self.follow_box = QCheckBox("Follow")
        self.follow_box.setToolTip("Re-solve while a target is dragged")
        self.run_row.add_widget(self.follow_box)
        layout.addWidget(self.run_row)
        layout.addWidget(self._whole_body_box())
        # closed, the section is its header only (no empty frame under it)
        self.options_box = CollapsibleSection("Solver options")
        self.options_box.setObjectName("ik_options_section")
        box = self.options_box.body_layout
        self.options_form = DataclassForm(
            IKOptions, include=["tol_pos", "tol_rot", "max_iters", "n_starts", "rotation_weight", "seed"],
            labels={"tol_pos": "Position tolerance (m)", "tol_rot": "Rotation tolerance (rad)",
                    "max_iters": "Iterations per start", "n_starts": "Starts",
                    "rotation_weight": "Rotation weight (m/rad)", "seed": "Random seed"})
        box.addWidget(self.options_form)
        # the one form rule: a refused value is red with its reason, Optimise waits, and the box opens
        self.run_row.watch_forms(self.options_form)
        self.options_form.validity_changed.connect(lambda ok: ok or self.options_box.setChecked(True))
        layout.addWidget(self.options_box)
        self.residual_label = QLabel("residual: –")
        self.residual_label.setObjectName("ik_residual")
        self.message_label = QLabel("")
        self.message_label.setObjectName("ik_message")
        self.message_label.setWordWrap(True)
        layout.addWidget(self.residual_label)
        layout.addWidget(self.message_label)
        layout.addStretch(1)
        self._gizmo_size = 0.12
        state.events.targets.connect(self._on_state_targets)

    def _whole_body_box(self) -> QGroupBox:
        """A floating robot's whole-body IK: the links kept in place and the base free or fixed."""
        box = self.whole_body_box = QGroupBox("Whole body (floating base)")
        box.setObjectName("whole_body_box")
        col = QVBoxLayout(box)
        col.addWidget(QLabel("Keep in place (their poses now):"))
        self.hold_list = QListWidget()
        self.hold_list.setObjectName("hold_list")
        self.hold_list.setMaximumHeight(88)
        self.hold_list.setToolTip("Checked links keep their current poses while the targets are reached "
                                  "(the feet by default: the robot reaches without stepping)")
        self.hold_list.itemChanged.connect(lambda _item: self.whole_body_changed.emit())
        col.addWidget(self.hold_list)
        row = QHBoxLayout()
        row.addWidget(QLabel("Base"))
        self.base_box = QComboBox()
        self.base_box.setObjectName("ik_base_box")
        self.base_box.addItem("free: moves with the solve", "free")
        self.base_box.addItem("fixed: stays where it is", "fixed")
        self.base_box.currentIndexChanged.connect(lambda _i: self.whole_body_changed.emit())
        row.addWidget(self.base_box, 1)
        col.addLayout(row)
        box.setVisible(False)
        return box

    def set_whole_body(self, floating: bool, links=(), held=(), base: str = "free") -> None:
        """Show the whole-body choices for a floating robot: ``links`` offered (held ones first and
        checked), the base "free" or "fixed"; hidden for a fixed-base robot."""
        self.whole_body_box.setVisible(bool(floating))
        self.hold_list.blockSignals(True)
        self.hold_list.clear()
        held = [l for l in held if l in links]
        for link in held + [l for l in links if l not in held]:
            item = QListWidgetItem(link)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if link in held else Qt.CheckState.Unchecked)
            self.hold_list.addItem(item)
        self.hold_list.blockSignals(False)
        self.base_box.blockSignals(True)
        self.base_box.setCurrentIndex(max(0, self.base_box.findData(base)))
        self.base_box.blockSignals(False)

    def held_links(self) -> list[str]:
        return [self.hold_list.item(i).text() for i in range(self.hold_list.count())
                if self.hold_list.item(i).checkState() == Qt.CheckState.Checked]

    def ik_base(self) -> str:
        return self.base_box.currentData() or "free"

    # ------------------------------------------------------------ robot
    def set_robot(self, links, default_link: str, gizmo_size: float) -> None:
        """New robot: ``links`` offered as end effectors (its targets: the state's, none yet)."""
        self._gizmo_size = gizmo_size
        self.link_box.blockSignals(True)
        self.link_box.clear()
        self.link_box.addItems(list(links))
        self.link_box.setCurrentText(default_link)
        self.link_box.blockSignals(False)
        self.end_effector_changed.emit(default_link)
        self.set_message("", None)

    @property
    def end_effector(self) -> str:
        return self.link_box.currentText()

    def set_end_effector(self, link: str) -> None:
        if self.link_box.findText(link) >= 0:
            self.link_box.setCurrentText(link)

    def _on_link_changed(self, link: str) -> None:
        if link:
            self.end_effector_changed.emit(link)

    # ------------------------------------------------------------ targets
    def add_target(
        self, link: str, pose: np.ndarray | None = None, position_only: bool | None = None
    ) -> Target:
        """Add (or replace) the target of ``link`` in the state; default pose: the link's current
        pose, default position-only: the checkbox."""
        if self.link_box.findText(link) < 0:
            raise ValueError(f"no link named {link!r} in this robot")
        self.state.add_target(link, pose, bool(self.position_only_box.isChecked() if position_only is None
                                               else position_only))
        return self.target_for(link)

    def _on_state_targets(self, specs) -> None:
        """Show the state's targets: a gizmo per target (made, moved, removed as they change)."""
        links = [t.link for t in specs]
        for t in [t for t in self.targets if t.link not in links]:
            self.view.remove_gizmo(t.gizmo)
        shown = {t.link: t for t in self.targets}
        added = None
        self.targets = []
        for spec in specs:
            t = shown.get(spec.link)
            if t is None:
                t = added = self._make_target(spec)
            elif not np.array_equal(t.gizmo.pose, spec.pose):
                t.gizmo.set_pose(spec.pose)
            if t.position_only != spec.position_only:
                t.position_only = spec.position_only
                t.gizmo.set_rotate_enabled(not spec.position_only)
            self.targets.append(t)
        selected = self.list.currentRow()
        self.list.blockSignals(True)
        if self.list.count() != len(self.targets):
            self.list.clear()
            self.list.addItems([self._row_text(t) for t in self.targets])
        else:
            for i, t in enumerate(self.targets):
                self.list.item(i).setText(self._row_text(t))
        self.list.blockSignals(False)
        if added is not None:
            selected = self.targets.index(added)
        self.list.setCurrentRow(min(max(selected, 0), len(self.targets) - 1) if self.targets else -1)
        self._on_row_changed(self.list.currentRow())
        self.targets_changed.emit()

    def _make_target(self, spec) -> Target:
        color = TARGET_COLORS[len(self.targets) % len(TARGET_COLORS)]
        gizmo = TargetGizmo(pose=spec.pose, size=self._gizmo_size, color=color, label=spec.link)
        gizmo.set_rotate_enabled(not spec.position_only)
        target = Target(spec.link, gizmo, spec.position_only)
        gizmo.pose_changed.connect(lambda T, link=spec.link: self._on_gizmo_moved(link, T))
        gizmo.drag_finished.connect(self.drag_finished)
        self.view.add_gizmo(gizmo)
        return target

    def _on_targets_changed(self) -> None:
        """The hint without targets; the value fields only edit a target (blank without one); a
        message whose cause is gone (set_message's ``until``) clears."""
        self.hint.setVisible(not self.targets)
        until = getattr(self, "_message_until", None)
        if until is not None and until():
            self.set_message("", None)
        for spin in self.value_spins:
            spin.setEnabled(bool(self.targets))
            if not self.targets:
                spin.setSpecialValueText(" ")          # shown at the minimum: blank, not a stale pose
                self._updating = True
                spin.setValue(spin.minimum())
                self._updating = False
            else:
                spin.setSpecialValueText("")
        self.position_only_box.setEnabled(bool(self.targets))

    def target_for(self, link: str) -> Target | None:
        return next((t for t in self.targets if t.link == link), None)

    def set_target_pose(self, link: str, pose: np.ndarray) -> None:
        """Move the target of ``link`` (through the state: one undoable step)."""
        self.state.set_target_pose(link, pose)

    def remove_selected(self) -> None:
        t = self.selected()
        if t is not None:
            self.state.remove_target(t.link)

    def clear(self) -> None:
        self.state.clear_targets()

    def selected(self) -> Target | None:
        i = self.list.currentRow()
        return self.targets[i] if 0 <= i < len(self.targets) else None

    def select_gizmo(self, gizmo) -> None:
        for i, t in enumerate(self.targets):
            if t.gizmo is gizmo:
                self.list.setCurrentRow(i)

    def _row_text(self, t: Target) -> str:
        p = t.pose[:3, 3]
        return f"{t.link}: ({p[0]:+.3f}, {p[1]:+.3f}, {p[2]:+.3f}) m" + (
            " [position]" if t.position_only else ""
        )

    def _on_gizmo_moved(self, link: str, pose: np.ndarray) -> None:
        """A gizmo moved under the mouse: the state's target follows (the drag is one undo step)."""
        if self.state.target(link) is not None:
            self.state.set_target_pose(link, pose)
            self.target_dragged.emit()

    def _on_row_changed(self, i: int) -> None:
        t = self.selected()
        if t is not None:
            self._show_values(t)
            self.position_only_box.blockSignals(True)
            self.position_only_box.setChecked(t.position_only)
            self.position_only_box.blockSignals(False)

    def _show_values(self, t: Target) -> None:
        xyz, rpy = xyz_rpy_from_pose(t.pose)
        self._updating = True
        for spin, v in zip(self.value_spins, list(xyz) + list(np.degrees(rpy))):
            spin.setValue(float(v))
        self._updating = False

    def _on_typed(self, _value: float) -> None:
        if self._updating:
            return
        t = self.selected()
        if t is None:
            return
        vals = [s.value() for s in self.value_spins]
        self.state.set_target_pose(t.link, pose_from_xyz_rpy(vals[:3], np.radians(vals[3:])), "edit target")

    def _on_position_only(self, on: bool) -> None:
        t = self.selected()
        if t is not None:
            self.state.set_target_position_only(t.link, bool(on))

    # ------------------------------------------------------------ state
    def ik_options(self) -> IKOptions:
        """The engine's IKOptions with the edits of the form (its defaults otherwise)."""
        return self.options_form.value()

    def set_busy(self, busy: bool) -> None:
        self.run_row.set_running(busy)

    def set_message(self, message: str, residual: float | None, ok: bool = True, until=None) -> None:
        """``until``: a callable telling when the message's cause is gone (checked whenever the
        targets change; the message then clears), or None for a message that stays until the next."""
        self._message_until = until
        self.message_label.setText(message)
        self.message_label.setStyleSheet("" if ok else "color: #ff8a65;")
        self.residual_label.setText("residual: –" if residual is None else f"residual: {residual:.3g}")
