"""What a compiled MuJoCo model holds that a :class:`RobotDescription` does not model.

:func:`not_modelled` returns one plain line per kind (equality constraints by type, tendons,
actuators, joint springs, dry friction, soft joint limits, contacts, fluid forces, flexes, mocap
bodies), each naming the elements (the first few, then a count). The MJCF loader puts the lines
on ``RobotDescription.not_modelled``, says them once in a warning (tendons only used by modelled
equalities and limits are not named), and ``robot info --json`` and
the app list them: the tree's mass matrix and bias forces are MuJoCo's, but forward dynamics,
simulation and IK are not the file's whole model, and the user is told what differs.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["fixed_tendon", "line_kind", "mujoco_name", "named_list", "not_modelled"]

_SHOWN = 6          # elements named per line; the rest are counted


def line_kind(line: str) -> str:
    """The kind a not-modelled line names (``"tendons"``, ``"equality constraints <joint>"``...):
    its text before the first ``:`` or `` (``; for short summaries (the app's status line)."""
    return line.split(":", 1)[0].split(" (", 1)[0].strip()


def named_list(names: list[str], shown: int = _SHOWN) -> str:
    """``'a', 'b', 'c'`` or ``'a', 'b', ... (12 in all)``."""
    head = ", ".join(repr(n) for n in names[:shown])
    return head if len(names) <= shown else f"{head}, ... ({len(names)} in all)"


def mujoco_name(m, kind: str, i: int) -> str | None:
    """The name of MuJoCo object ``i`` of ``kind`` ("body", "joint", "geom", "equality",
    "tendon", "actuator", "flex"), or None when it has none."""
    import mujoco

    obj = {"body": mujoco.mjtObj.mjOBJ_BODY, "joint": mujoco.mjtObj.mjOBJ_JOINT,
           "geom": mujoco.mjtObj.mjOBJ_GEOM, "equality": mujoco.mjtObj.mjOBJ_EQUALITY,
           "tendon": mujoco.mjtObj.mjOBJ_TENDON, "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR,
           "flex": mujoco.mjtObj.mjOBJ_FLEX}[kind]
    name = mujoco.mj_id2name(m, obj, i)
    return name or None


def fixed_tendon(m, t: int, kept_joints: Collection[int] | None = None) -> dict[int, float] | None:
    """``{joint id: coefficient}`` of fixed tendon ``t`` when it runs over hinge and slide joints
    only (of ``kept_joints``; None: any), else None: its length is ``sum coef_j q_j``."""
    import mujoco

    out: dict[int, float] = {}
    movable = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    for w in range(int(m.tendon_adr[t]), int(m.tendon_adr[t]) + int(m.tendon_num[t])):
        if int(m.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT):
            return None
        j = int(m.wrap_objid[w])
        if (kept_joints is not None and j not in kept_joints) or int(m.jnt_type[j]) not in movable:
            return None
        out[j] = out.get(j, 0.0) + float(m.wrap_prm[w])
    return out


def _equality_lines(m, skip: set[int]) -> list[str]:
    import mujoco

    E = mujoco.mjtEq
    kinds = {
        int(E.mjEQ_CONNECT): ("connect", "loop closure(s) at a point", "body"),
        int(E.mjEQ_WELD): ("weld", "loop closure(s) of a whole frame", "body"),
        int(E.mjEQ_JOINT): ("joint", "joint coupling(s) (a polynomial of another joint)", "joint"),
        int(E.mjEQ_TENDON): ("tendon", "tendon coupling(s)", "tendon"),
        int(E.mjEQ_DISTANCE): ("distance", "distance constraint(s)", "geom"),
    }
    by_kind: dict[tuple[str, str], list[str]] = {}
    for e in range(m.neq):
        if e in skip:
            continue
        kind, what, obj = kinds.get(int(m.eq_type[e]), ("flex", "flex constraint(s)", ""))
        name = mujoco_name(m, "equality", e)
        if name is None and obj:
            a, b = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            na = mujoco_name(m, obj, a) or f"{obj} {a}"
            name = f"{na}-{mujoco_name(m, obj, b) or f'{obj} {b}'}" if b >= 0 else na
        by_kind.setdefault((kind, what), []).append(name or f"equality {e}")
    return [f"equality constraints <{k}>: {len(v)} {what}: {named_list(v)}" for (k, what), v in by_kind.items()]


def _modelled_tendon(m, t: int, equalities: Collection[int], kept_joints: Collection[int] | None) -> bool:
    """Tendon ``t`` does nothing but appear in the modelled ``equalities`` and, a fixed tendon
    over the tree's hinges and slides, limit its length (a modelled TendonLimit): no spring,
    damping, friction or actuator of its own."""
    import mujoco

    in_eq = any(int(m.eq_type[e]) == int(mujoco.mjtEq.mjEQ_TENDON) and t in (int(m.eq_obj1id[e]), int(m.eq_obj2id[e]))
                for e in equalities)
    limit = bool(m.tendon_limited[t])
    if limit and not fixed_tendon(m, t, kept_joints):
        return False                      # a spatial tendon's limit, or one over joints left out
    acted = any(int(m.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON) and int(m.actuator_trnid[a][0]) == t
                for a in range(m.nu))
    return (in_eq or limit) and not (float(m.tendon_stiffness[t]) or float(m.tendon_damping[t])
                                     or float(m.tendon_frictionloss[t]) or acted)


def _tendon_line(m, modelled_equalities: Collection[int] = (), kept_joints: Collection[int] | None = None) -> list[str]:
    import mujoco

    if not m.ntendon:
        return []
    fixed: list[str] = []
    spatial: list[str] = []
    for t in range(m.ntendon):
        if _modelled_tendon(m, t, modelled_equalities, kept_joints):
            continue
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        name = mujoco_name(m, "tendon", t) or f"tendon {t}"
        joint_only = all(int(m.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_JOINT) for w in range(adr, adr + num))
        (fixed if joint_only else spatial).append(name)
    parts = [f"{len(v)} {k} ({named_list(v)})" for k, v in (("fixed", fixed), ("spatial", spatial)) if v]
    if not parts:
        return []
    return [f"tendons (their springs, damping, friction and the forces through them; a spatial tendon's "
            f"length and limits): {'; '.join(parts)}"]


def _unnamed_actuator(m, a: int) -> str:
    """``actuator 3 (on joint 'j1')``: an actuator without a name, by what it drives."""
    import mujoco

    kinds = {int(mujoco.mjtTrn.mjTRN_JOINT): "joint", int(mujoco.mjtTrn.mjTRN_TENDON): "tendon",
             int(mujoco.mjtTrn.mjTRN_BODY): "body"}
    kind = kinds.get(int(m.actuator_trntype[a]))
    target = mujoco_name(m, kind, int(m.actuator_trnid[a][0])) if kind else None
    return f"actuator {a} (on {kind} {target!r})" if target else f"actuator {a}"


def not_modelled(m, kept_bodies: set[int] | None = None, skip_equalities: Collection[int] = ()) -> list[str]:
    """One line per kind of element of the compiled model ``m`` that the description leaves
    out (see the module docstring); ``kept_bodies``: the bodies the description holds (None:
    all), to name the static bodies it leaves out; ``skip_equalities``: the equality constraints
    it models (joint couplings as mimic joints)."""
    import mujoco

    kept_joints = None if kept_bodies is None else {j for j in range(m.njnt) if int(m.jnt_bodyid[j]) in kept_bodies}
    lines = _equality_lines(m, set(skip_equalities)) + _tendon_line(m, skip_equalities, kept_joints)
    if m.nu:
        names = [mujoco_name(m, "actuator", a) or _unnamed_actuator(m, a) for a in range(m.nu)]
        lines.append(f"actuators ({m.nu}; the model takes joint forces, not controls): {named_list(names)}")
    joint_names = [mujoco_name(m, "joint", j) or f"joint {j}" for j in range(m.njnt)]
    springs = [joint_names[j] for j in range(m.njnt) if float(m.jnt_stiffness[j]) != 0.0]
    if springs:
        lines.append(f"joint springs (stiffness, springref): {named_list(springs)}")
    friction = sorted({joint_names[int(m.dof_jntid[d])] for d in range(m.nv) if float(m.dof_frictionloss[d]) > 0},
                      key=joint_names.index)
    if friction:
        lines.append(f"dry joint friction as MuJoCo's constraint (frictionloss: kept as Joint.friction; "
                     f"simulation applies it as a smooth Coulomb force Fc tanh(qd / v_s), which creeps where "
                     f"MuJoCo's sticks; not in forward_dynamics): {named_list(friction)}")
    ball = int(mujoco.mjtJoint.mjJNT_BALL)
    cones = [joint_names[j] for j in range(m.njnt) if m.jnt_limited[j] and int(m.jnt_type[j]) == ball]
    if cones:
        lines.append(f"ball joint ranges (a cone of rotation; no limit is applied): {named_list(cones)}")
    limited = [joint_names[j] for j in range(m.njnt) if m.jnt_limited[j] and int(m.jnt_type[j]) != ball]
    if limited:
        lines.append(f"joint limits as MuJoCo's soft constraints (solref, solimp; the engine's simulation "
                     f"holds them at hard limits): {named_list(limited)}")
    disabled = int(m.opt.disableflags)
    if not disabled & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        colliding = [g for g in range(m.ngeom) if m.geom_contype[g] or m.geom_conaffinity[g]]
        if colliding or m.npair:
            pairs = f" and {m.npair} explicit pairs" if m.npair else ""
            lines.append(f"contacts ({len(colliding)} colliding geoms{pairs}; the model has no contact)")
    if float(m.opt.density) > 0 or float(m.opt.viscosity) > 0 or any(float(w) for w in m.opt.wind):
        lines.append(f"fluid forces (<option density={float(m.opt.density):g} viscosity="
                     f"{float(m.opt.viscosity):g} wind>)")
    if m.nflex:
        names = [mujoco_name(m, "flex", f) or f"flex {f}" for f in range(m.nflex)]
        lines.append(f"flexes (deformable bodies): {named_list(names)}")
    body_names = [mujoco_name(m, "body", b) or f"body {b}" for b in range(m.nbody)]
    mocap = [body_names[b] for b in range(1, m.nbody) if m.body_mocapid[b] >= 0]
    if mocap:
        lines.append(f"mocap bodies (moved by the simulator's data; welded where they are here): {named_list(mocap)}")
    if kept_bodies is not None:
        static = [body_names[b] for b in range(1, m.nbody) if b not in kept_bodies and m.body_jntnum[b] == 0
                  and m.body_parentid[b] == 0]
        if static:
            lines.append(f"static bodies welded to the world (left out with the world body): {named_list(static)}")
    return lines
