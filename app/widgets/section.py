"""A collapsible section: a header button (▸ Title / ▾ Title) over a framed body that is shown only
when open. Closed, the section takes the header's height and nothing more (no empty frame)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QSizePolicy, QToolButton, QVBoxLayout, QWidget

__all__ = ["CollapsibleSection"]


class CollapsibleSection(QWidget):
    """``isChecked()`` / ``setChecked(open)`` / ``toggled(open)``, as a checkable group box;
    put the section's widgets in :attr:`body_layout`."""

    toggled = Signal(bool)

    def __init__(self, title: str, parent: QWidget | None = None, open_: bool = False):
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(2)
        self.header = QToolButton()
        self.header.setObjectName("sectionHeader")
        self.header.setText(title)
        self.header.setCheckable(True)
        self.header.setAutoRaise(True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setStyleSheet("QToolButton { border: none; font-weight: bold; text-align: left; }")
        col.addWidget(self.header)
        self.body = QFrame()
        self.body.setObjectName("sectionBody")
        self.body.setFrameShape(QFrame.Shape.StyledPanel)
        self.body_layout = QVBoxLayout(self.body)
        col.addWidget(self.body)
        self.header.toggled.connect(self._on_toggled)
        self._show(open_)
        self.header.setChecked(open_)

    def title(self) -> str:
        return self.header.text()

    def isChecked(self) -> bool:  # noqa: N802 - as QGroupBox
        return self.header.isChecked()

    def setChecked(self, open_: bool) -> None:  # noqa: N802 - as QGroupBox
        self.header.setChecked(open_)

    def _on_toggled(self, open_: bool) -> None:
        self._show(open_)
        self.toggled.emit(open_)

    def _show(self, open_: bool) -> None:
        self.header.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self.body.setVisible(open_)
        self.header.setToolTip(f"{'Hide' if open_ else 'Show'} {self.header.text().lower()}")
