"""MJCF ``<equality connect|weld|tendon>`` -> :mod:`engine.robots.constraints`, from MuJoCo's compiled model.

MuJoCo's compiler fills ``eq_data`` so that each constraint holds at ``qpos0`` (the file's pose):

- ``connect`` (body semantic): ``data[0:3]`` the anchor in body1, ``data[3:6]`` the same point in
  body2; (site semantic) the two sites' positions in their bodies;
- ``weld`` (body semantic): ``data[0:3]`` the ``anchor`` in body2, ``data[3:6]`` the point of body1
  on it, ``data[6:10]`` the relative orientation (``relpose``, or the one at ``qpos0`` when its
  quaternion is zero), ``data[10]`` ``torquescale``; (site semantic) the sites' frames;
- ``tendon``: ``L1 - L1_0 = c0 + c1 (L2 - L2_0) + ...`` over fixed tendons (``L = sum coef_j q_j``);
  kept when linear (``c2 = c3 = c4 = 0``);
- a fixed tendon's ``limited="true" range="a b"`` (``tendon_range``): a unilateral
  :class:`TendonLimit` (a joint-coupling tendon over hinges and slides of the tree).

Enforced as hard constraints: MuJoCo's softness (``solref``, ``solimp``; a limit's ``solreflimit``,
``solimplimit`` and ``margin``) is named in ``not_modelled``. Left out (and so still listed as not
modelled): inactive equalities, ones
between bodies outside the loaded tree, tendon equalities over spatial tendons or non-linear.
"""

from __future__ import annotations

from engine.robots.constraints import (
    Constraint,
    LoopConstraint,
    TendonConstraint,
    TendonLimit,
    WeldConstraint,
)
from engine.robots.mjcf_inventory import fixed_tendon, mujoco_name, named_list

__all__ = ["mujoco_constraints", "softness_line"]


def _vec(a) -> tuple[float, float, float]:
    return (float(a[0]), float(a[1]), float(a[2]))


def _quat(a) -> tuple[float, float, float, float]:
    return (float(a[0]), float(a[1]), float(a[2]), float(a[3]))


def _name(m, e: int, kind: str, a: str | None, b: str | None) -> str:
    return mujoco_name(m, "equality", e) or f"{kind} {a or 'world'}-{b or 'world'}"


def mujoco_constraints(m, body_names: list[str], joint_names: list[str], kept_bodies: set[int],
                       kept_joints: set[int]) -> tuple[tuple[Constraint, ...], set[int]]:
    """``(constraints, {equality ids modelled})`` of the compiled model ``m`` for the tree of
    ``kept_bodies`` (``body_names``/``joint_names``: each MuJoCo body's and joint's name in the
    description; the world body is ``None``)."""
    import mujoco

    E = mujoco.mjtEq
    out: list[Constraint] = []
    used: set[int] = set()
    for e in range(m.neq):
        if not m.eq_active0[e]:
            continue
        kind, data = int(m.eq_type[e]), m.eq_data[e]
        a, b = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        if kind in (int(E.mjEQ_CONNECT), int(E.mjEQ_WELD)):
            sites = int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE)
            ba, bb = (int(m.site_bodyid[a]), int(m.site_bodyid[b])) if sites else (a, b)
            if any(x != 0 and x not in kept_bodies for x in (ba, bb)):
                continue
            n1 = body_names[ba] if ba else None
            n2 = body_names[bb] if bb else None
            name = _name(m, e, "connect" if kind == int(E.mjEQ_CONNECT) else "weld", n1, n2)
            if kind == int(E.mjEQ_CONNECT):
                p1, p2 = (m.site_pos[a], m.site_pos[b]) if sites else (data[0:3], data[3:6])
                out.append(LoopConstraint(name, n1, n2, _vec(p1), _vec(p2)))
            elif sites:
                out.append(WeldConstraint(name, n1, n2, _vec(m.site_pos[a]), _vec(m.site_pos[b]),
                                          _quat(m.site_quat[a]), _quat(m.site_quat[b]), float(data[10])))
            else:
                out.append(WeldConstraint(name, n1, n2, _vec(data[3:6]), _vec(data[0:3]), _quat(data[6:10]),
                                          (1.0, 0.0, 0.0, 0.0), float(data[10])))
            used.add(e)
        elif kind == int(E.mjEQ_TENDON):
            if any(float(c) for c in data[2:5]):
                continue
            t1 = fixed_tendon(m, a, kept_joints)
            t2 = fixed_tendon(m, b, kept_joints) if b >= 0 else {}
            if t1 is None or t2 is None:
                continue
            c0, c1 = float(data[0]), float(data[1])
            coef = dict(t1)
            for j, c in t2.items():
                coef[j] = coef.get(j, 0.0) - c1 * c
            L2_0 = float(m.tendon_length0[b]) if b >= 0 else 0.0
            offset = float(m.tendon_length0[a]) + c0 - (c1 * L2_0 if b >= 0 else 0.0)
            tendons = tuple(mujoco_name(m, "tendon", t) or f"tendon {t}" for t in ((a, b) if b >= 0 else (a,)))
            out.append(TendonConstraint(mujoco_name(m, "equality", e) or f"tendon {'-'.join(tendons)}",
                                        tuple(joint_names[j] for j in coef), tuple(coef.values()), offset,
                                        tendons))
            used.add(e)
    for t in range(m.ntendon):
        limit = fixed_tendon(m, t, kept_joints) if m.tendon_limited[t] else None
        if limit:
            lo, hi = (float(x) for x in m.tendon_range[t])
            out.append(TendonLimit(mujoco_name(m, "tendon", t) or f"tendon {t}", tuple(joint_names[j] for j in limit),
                                   tuple(limit.values()), lo, hi))
    return tuple(out), used


def softness_line(constraints) -> list[str]:
    """The not-modelled lines for MuJoCo's constraint softness, when there are modelled constraints."""
    eqs = [c.name for c in constraints if not isinstance(c, TendonLimit)]
    limits = [c.name for c in constraints if isinstance(c, TendonLimit)]
    lines = [f"equality constraint softness (solref, solimp; modelled as hard constraints): "
             f"{named_list(eqs)}"] if eqs else []
    if limits:
        lines.append(f"tendon limit softness (solreflimit, solimplimit, margin; modelled as hard one-sided "
                     f"constraints): {named_list(limits)}")
    return lines
