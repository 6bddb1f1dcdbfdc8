"""The log mapping dialog now lives in app/widgets/mapping_dialog.py (the Robot workspace uses it too)."""

from app.widgets.mapping_dialog import ROLES, LogMappingDialog

__all__ = ["ROLES", "LogMappingDialog"]
