"""The Robot workspace's constraints at the shown pose: the state's constraint marks (loop
closures, welds, tendon couplings and limits: :meth:`RobotState.constraint_marks`, from the
engine) drawn by the 3D view's constraints layer (:mod:`app.viewer.constraints_layer`) and listed,
one line each with how far it is from holding, under the Dynamics tab's readouts; updated at every
pose the state shows (sliders, IK, simulation playback, undo)."""

from __future__ import annotations

from html import escape

__all__ = ["ConstraintOverlay", "constraint_lines"]

TOLERANCE = 1e-3          # m or rad, as the 3D view's layer: within it a constraint "holds"


def constraint_lines(marks) -> list[tuple[str, bool]]:
    """``(text, holds)`` per constraint mark: its kind, name, a tendon's length, and how far off."""
    out = []
    for m in marks:
        text = f"{m.kind} {m.name!r}"
        if m.value is not None:
            text += f": length {m.value:.4g}"
        holds = m.violation <= TOLERANCE
        if m.kind == "tendon limit":
            text += " (in range)" if m.violation == 0 else f" ({m.violation:.3g} beyond its range)"
        else:
            text += " (holds)" if holds else f" (off by {m.violation:.3g})"
        out.append((text, holds))
    return out


class ConstraintOverlay:
    """Keeps ``view.constraints`` (and ``label``, a QLabel, when given) on ``state``'s pose."""

    def __init__(self, view, state, label=None):
        self.view, self.state, self.label = view, state, label
        state.events.robot.connect(lambda _loaded: self.refresh())
        state.events.q.connect(lambda _q: self.refresh())

    def refresh(self) -> None:
        marks = self.state.constraint_marks() if self.state.robot is not None else []
        self.view.constraints.set_marks(marks)
        if self.label is not None:
            lines = constraint_lines(marks)
            self.label.setVisible(bool(lines))
            self.label.setText("<b>constraints</b><br>" + "<br>".join(
                escape(text) if ok else f"<span style='color:#ff6b6b'>{escape(text)}</span>"
                for text, ok in lines))
