"""The reusable 3D robot scene: Qt-free geometry loading plus the pyqtgraph GL view.

- :mod:`app.viewer.geometry`: load a URDF's visual/collision meshes (no Qt; runs in jobs).
- :mod:`app.viewer.scene`: :class:`RobotView`, the GL widget (UI thread).
- :mod:`app.viewer.gizmo`: :class:`TargetGizmo`, a draggable target pose.
- :mod:`app.viewer.benchmark`: ``run_view_benchmark(name_or_path, seconds)``.
"""
