"""What the Robot workspace keeps in a session (the state's robot, its MJCF kinematic tree, pose,
targets and IK choices; angle units, keyframes, the replayed log) and how it comes back: once the
robot is loaded, each part is restored on its own, and a damaged part is named and skipped."""

from __future__ import annotations

import numpy as np

__all__ = ["restore_robot_session", "robot_session_state"]


def robot_session_state(page) -> dict:
    """The session of ``page`` (a :class:`~app.workspaces.robot.page.RobotPage`) as plain data."""
    motion = page.motion
    return {
        **page.state.session_state(),
        "units": page.joints.units,
        "keyframes": {"times": list(motion.key_times), "poses": [q.tolist() for q in motion.key_poses]},
        "replay": page.replay.session_state(),
    }


def checked_q(page, q) -> np.ndarray:
    """``q`` as the shown robot's configuration (nq,: a floating robot's base pose, 7 numbers, then
    its joints; a ball joint's 4); ValueError when it does not fit the robot."""
    values = np.asarray(q, dtype=float).reshape(-1)
    model = page.robot.model
    nq = int(getattr(model, "nq", model.dof))
    if values.shape[0] != nq or not np.all(np.isfinite(values)):
        raise ValueError(f"expected {nq} finite numbers, got {str(q)[:80]}")
    return values


def restore_robot_session(page, state: dict) -> None:
    """Load the session's robot on ``page``, then restore the rest; damaged parts are named in
    one message ("skipped …; the rest was restored")."""
    if state.get("units") in ("deg", "rad"):
        page.joints.set_units(state["units"])
    source = state.get("robot")
    if not source:
        return

    def restore_q(q):
        if q is not None:
            page.set_q(checked_q(page, q).tolist())

    def apply(_loaded):
        page.robot_loaded.disconnect(apply)
        skipped = []  # damaged parts are named and skipped; the rest is restored
        parts = [("joint positions 'q'", lambda: restore_q(state.get("q")))]
        targets = state.get("targets", [])
        targets = targets if isinstance(targets, list) else [targets]
        parts += [(f"target {i + 1}", lambda t=t: page.targets.add_target(
            t["link"], np.asarray(t["pose"], float), bool(t.get("position_only"))))
            for i, t in enumerate(targets)]
        if "held_links" in state or "ik_base" in state:
            parts.append(("whole-body IK choices", lambda: page.set_whole_body(
                list(state.get("held_links") or []), state.get("ik_base") or "free")))
        kf = state.get("keyframes") or {}
        poses = kf.get("poses", []) if isinstance(kf, dict) else [kf]
        parts += [(f"keyframe {i + 1}", lambda q=q: page.motion.add_keyframe(checked_q(page, q)))
                  for i, q in enumerate(poses)]
        parts.append(("log replay", lambda: page.replay.restore_session(state.get("replay"))))
        for what, restore in parts:
            try:
                restore()
            except (TypeError, ValueError, KeyError, IndexError) as exc:
                skipped.append(f"{what} ({exc})")
        page.state.clear_history()            # a restored session starts a fresh history
        if skipped:
            page.ctx.show_error("Session partly restored",
                                "Robot workspace: skipped " + "; ".join(skipped) + ". The rest was restored.")
    page.robot_loaded.connect(apply)
    tree = state.get("tree") if isinstance(state.get("tree"), str) else None    # an MJCF scene's tree
    if page.load_robot(source, xacro_args=state.get("xacro_args") or None, why="session", tree=tree) is None:
        page.robot_loaded.disconnect(apply)     # a xacro robot the user chose not to expand
