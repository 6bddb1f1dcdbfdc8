"""Frame-rate benchmark of the 3D view: orbit the camera around a robot and count frames.

``run_view_benchmark(name_or_path, seconds)`` is what ``python -m app --benchmark-view NAME
--json`` prints. It needs a display (Xvfb is fine) and creates a QApplication if there is
none. Each frame: orbit the camera by one degree, request a repaint, count the frame when
Qt reports it swapped (``frameSwapped``), so the figure includes the full render path.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["link_poses_at_rest", "resolve_robot_path", "run_view_benchmark"]

VIEW_SIZE = (960, 720)


def resolve_robot_path(name_or_path: str) -> Path:
    """A library name or a URDF path -> the URDF path (engine.robots.library when present)."""
    p = Path(name_or_path).expanduser()
    if p.suffix.lower() in (".urdf", ".xml") and p.exists():
        return p.resolve()
    try:
        from engine.robots.library import resolve_robot
    except ImportError as exc:
        raise ValueError(f"{name_or_path!r} is not a URDF file and the robot library "
                         f"(engine.robots.library) is not available") from exc
    resolved = resolve_robot(name_or_path)
    path = getattr(resolved, "path", resolved)
    return Path(path)


def link_poses_at_rest(urdf_path: str | Path, link_names) -> dict[str, np.ndarray]:
    """World poses ((4, 4)) of the links in the engine's neutral pose (mid-limits).

    Only drawing needs them, so the URDF is read leniently (inconsistent inertials and
    mimic joints accepted)."""
    import torch

    from engine.robots import RobotModel
    from engine.robots.ik import neutral_configuration

    model = RobotModel.from_urdf(str(urdf_path), dtype=torch.float64, strict=False, mimic="independent")
    with torch.no_grad():
        T = model.forward_kinematics(neutral_configuration(model)).cpu().numpy()
    names = list(model.link_names)
    return {n: T[names.index(n)] for n in link_names if n in names}


_DEFAULT = object()


def run_view_benchmark(name_or_path: str, seconds: float = 3.0, *, max_triangles=_DEFAULT) -> dict:
    """Orbit the camera around the robot for ``seconds``; return {robot, triangles, fps, seconds}.

    ``fps`` is frames swapped per second of wall time (the whole render path, Xvfb + the
    GL driver included); ``triangles`` is the number of visual triangles drawn per frame
    (after the display budget of GeometryOptions, the workspace's default) and
    ``source_triangles`` the number in the mesh files. ``max_triangles`` overrides the
    display budget (None: every triangle of the files). ``cpu_ms_per_frame``: this process's
    CPU time per frame (all threads, the software rasteriser's included): a figure that
    other processes competing for the cores disturb less than ``fps``.
    """
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.viewer.geometry import GeometryOptions, load_robot_geometry
    from app.viewer.scene import RobotView

    app = QApplication.instance() or QApplication([])
    path = resolve_robot_path(name_or_path)
    options = GeometryOptions() if max_triangles is _DEFAULT else GeometryOptions(max_triangles=max_triangles)
    geometry = load_robot_geometry(path, options)
    view = RobotView()
    view.resize(*VIEW_SIZE)
    view.setWindowTitle(f"benchmark: {geometry.name}")
    view.set_robot(geometry)
    try:
        view.set_link_poses(link_poses_at_rest(path, geometry.links))
    except Exception as exc:  # noqa: BLE001 - draw at the URDF origins if the engine refuses it
        log.warning("benchmark: link poses at rest unavailable (%s); drawing links at the origin", exc)
    view.show()
    view.fit_to_robot()
    # warm up: the first frames upload the vertex buffers and compile the shader
    for _ in range(3):
        view.repaint()
        app.processEvents()

    frames = 0
    loop = QEventLoop()
    clock = QElapsedTimer()

    def on_swap():
        nonlocal frames
        frames += 1
        if clock.elapsed() >= seconds * 1000:
            loop.quit()
            return
        view.orbit(1.0, 0.0)   # orbit() schedules the next update

    view.frameSwapped.connect(on_swap)
    QTimer.singleShot(int(seconds * 1000) + 5000, loop.quit)   # safety net
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    clock.start()
    view.orbit(1.0, 0.0)
    loop.exec()
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    view.frameSwapped.disconnect(on_swap)
    view.close()
    view.deleteLater()
    app.processEvents()
    return {"robot": geometry.name, "triangles": int(geometry.triangles),
            "source_triangles": int(geometry.source_triangles),
            "fps": round(frames / elapsed, 2), "seconds": round(elapsed, 3),
            "cpu_ms_per_frame": round(1000 * cpu / max(frames, 1), 2), "size": list(VIEW_SIZE)}


if __name__ == "__main__":  # pragma: no cover - manual use: python -m app.viewer.benchmark PATH
    import json
    import sys
    budget = _DEFAULT if len(sys.argv) <= 3 else (None if sys.argv[3] == "all" else int(sys.argv[3]))
    print(json.dumps(run_view_benchmark(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 3.0,
                                        max_triangles=budget)))
