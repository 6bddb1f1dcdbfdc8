"""Match log columns to a robot's joints by name, and guess their units.

A log from a robot nobody prepared for names its columns its own way (``q1``, ``J1_pos_deg``,
``/joint_states/position/panda_joint1``, ``observation.state[0]``). :func:`match_joints` finds,
for each joint of the robot, its position column and, where present, its velocity and torque
columns, and a floating base's pose columns:

- names are compared as *tokens*, case-, underscore- and punctuation-insensitively, letters and
  digits split (``panda_joint1`` -> ``panda joint 1``);
- the role of a column comes from its words (``q``/``pos``/``position``/``angle``/``state``,
  ``qd``/``dq``/``vel``/``velocity``, ``tau``/``torque``/``effort``), its unit from unit words
  (``deg``, ``rad``, ``degs``, ``ms``...);
- a column matches a joint when the joint's tokens end the column's tokens, or, with the
  common prefixes stripped (``panda joint`` from the joints, ``q`` from the columns), their
  remainders agree; a role group of exactly as many numbered columns as the robot has joints
  (``observation.state[0..6]``) maps in order;
- commands and set points (``action``, ``cmd``, ``target``, ``desired``...) are left out;
- positions with no unit word are taken as degrees when radians would leave the joint
  limits and degrees would not (velocities of such a log then in deg/s).

The result is a :class:`JointMatch`: a :class:`~engine.logs.mapping.LogMapping` (q, qd and u
in joint order), the robot joint of each q column, the base columns and plain notes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from engine.logs.mapping import LogMapping
from engine.logs.validate import guess_time_column, time_unit_from_name

__all__ = ["BASE_FIELDS", "JointMatch", "match_joints", "tokens"]

ROLE_WORDS = {
    "qd": {"qd", "dq", "qdot", "vel", "velocity", "velocities", "speed", "omega", "v"},
    "u": {"tau", "torque", "torques", "effort", "efforts", "eff", "trq", "u", "current", "force"},
    "q": {"q", "pos", "position", "positions", "angle", "angles", "theta", "state", "joint", "joints"},
}
UNIT_WORDS = {
    "deg": "deg",
    "degree": "deg",
    "degrees": "deg",
    "rad": "rad",
    "radian": "rad",
    "radians": "rad",
    "degs": "deg/s",
    "dps": "deg/s",
    "rads": "rad/s",
    "rpm": "rpm",
    "nm": "N m",
    "mnm": "mN m",
    "ms": "ms",
    "us": "us",
    "ns": "ns",
    "mm": "mm",
}
BASE_FIELDS = ("x", "y", "z", "qw", "qx", "qy", "qz")
# commands and set points are not what the robot did: never matched automatically
COMMAND_WORDS = {"action", "actions", "cmd", "command", "commanded", "target", "desired", "des", "ref",
                 "reference", "setpoint", "goal"}
_TIME_WORDS = {"t", "time", "timestamp", "stamp", "sec", "secs", "seconds"}
_JOINT_WORDS = {"joint", "joints", "jnt"}
_BOOKKEEPING = _TIME_WORDS | {"seq", "nsec", "nanosec", "index", "id", "count", "frame"}


def tokens(name: str) -> list[str]:
    """Lower-case word and number tokens of a name: ``"Panda_Joint1.pos"`` -> panda joint 1 pos."""
    return re.findall(r"[a-z]+|\d+", name.lower())


@dataclass
class JointMatch:
    """What :func:`match_joints` found: ``mapping`` (q, qd, u in the order of ``joints``),
    ``joints`` (the robot joint of each q column), ``base`` (the 7 columns x y z qw qx qy qz
    of a floating base's pose, or empty) and ``notes`` (plain sentences for the user)."""

    mapping: LogMapping
    joints: list[str]
    base: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _role_and_key(name: str) -> tuple[str | None, tuple[str, ...], str | None, tuple[str, ...]]:
    toks = tokens(name)
    unit = None
    for a, b in zip(toks, toks[1:]):
        if (a, b) in (("deg", "s"), ("rad", "s")):
            unit = f"{a}/s"
    if unit is None:
        unit = next((UNIT_WORDS[t] for t in toks if t in UNIT_WORDS), None)
    words = [t for t in toks if t not in UNIT_WORDS and not (unit and unit.endswith("/s") and t == "s")]
    role = None
    # the most specific role word wins: velocity and torque words over position words
    for r in ("qd", "u", "q"):
        if any(t in ROLE_WORDS[r] for t in words):
            role = r
            break
    key = tuple(t for t in words if role is None or t not in ROLE_WORDS[role])
    if role == "qd":  # "joint_vel" keeps "joint" out of the key as a position word would
        key = tuple(t for t in key if t not in ("joint", "joints"))
    return role, key, unit, tuple(words)


def _strip_common(keys: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    if len(keys) < 2:
        return keys
    n = 0
    while all(len(k) > n + 1 for k in keys) and len({k[n] for k in keys}) == 1:
        n += 1
    return [k[n:] for k in keys]


def _bare(key: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t for t in key if t not in _JOINT_WORDS) or key


def _contains(words: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return n > 0 and any(words[i:i + n] == part for i in range(len(words) - n + 1))


def _assign(joints: list[str], cols: list[str], keys: list[tuple[str, ...]],
            words: list[tuple[str, ...]]) -> dict[str, str]:
    """joint -> column for one role group."""
    jkeys = [tuple(t for t in tokens(j)) for j in joints]
    out: dict[str, str] = {}
    used: set[str] = set()
    # 1. the joint's tokens inside the column's (topic paths, "panda_joint1_pos", "theta_vel")
    for j, jk in zip(joints, jkeys):
        hits = [c for c, w in zip(cols, words) if _contains(w, jk) and c not in used]
        if len(hits) == 1:
            out[j] = hits[0]
            used.add(hits[0])
    # 2. remainders after the common prefixes ("joint" words left out: "shoulder_pan_joint" = "shoulder_pan")
    if len(out) < len(joints):
        jrest = dict(zip(joints, _strip_common([_bare(k) for k in jkeys])))
        crest = dict(zip(cols, _strip_common([_bare(k) for k in keys])))

        def numbers(rest):
            return [int(r[0]) for r in rest if len(r) == 1 and r[0].isdigit()]

        jn, cn = numbers(jrest.values()), numbers(crest.values())
        if len(jn) == len(jrest) and len(cn) == len(crest) and cn and min(cn) == 0 and min(jn) == 1:
            crest = {c: (str(int(r[0]) + 1),) for c, r in crest.items()}   # 0-based columns, 1-based joints
        for j in joints:
            if j in out:
                continue
            hits = [c for c in cols if c not in used and crest[c] == jrest[j] and crest[c]]
            if len(hits) == 1:
                out[j] = hits[0]
                used.add(hits[0])
    # 3. exactly dof numbered columns in order ("observation.state[0]".."[6]", "q0".."q6")
    if not out and len(cols) == len(joints):
        rest = _strip_common(keys)
        if all(len(r) == 1 and r[0].isdigit() for r in rest):
            order = sorted(range(len(cols)), key=lambda i: int(rest[i][0]))
            out = {j: cols[i] for j, i in zip(joints, order)}
    return out


def _base_columns(columns: list[str]) -> list[str]:
    found: dict[str, str] = {}
    for c in columns:
        toks = tokens(c)
        if "base" not in toks and "odom" not in toks:
            continue
        last = toks[-1]
        quat = any(t in ("quat", "quaternion", "orientation", "rot") for t in toks)
        name = {"w": "qw", "x": "qx", "y": "qy", "z": "qz"}.get(last) if quat else last
        if name in ("x", "y", "z", "qw", "qx", "qy", "qz") and name not in found:
            found[name] = c
    if all(k in found for k in ("x", "y", "z")):
        if all(k in found for k in ("qw", "qx", "qy", "qz")):
            return [found[k] for k in BASE_FIELDS]
        return [found[k] for k in ("x", "y", "z")]
    return []


def _looks_like_degrees(values: np.ndarray, limits: np.ndarray | None) -> bool:
    """Radians would leave the joint limits by far, degrees would fit (revolute joints)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return False
    lo, hi = float(finite.min()), float(finite.max())
    if limits is None or not np.all(np.isfinite(limits)) or limits[1] <= limits[0]:
        return max(abs(lo), abs(hi)) > 2.0 * math.pi + 0.5
    margin = 0.35
    out_rad = lo < limits[0] - margin or hi > limits[1] + margin
    d = math.pi / 180.0
    in_deg = lo * d >= limits[0] - margin and hi * d <= limits[1] + margin
    return out_rad and in_deg


def match_joints(columns: list[str], joint_names: list[str], *, data: dict[str, np.ndarray] | None = None,
                 limits: np.ndarray | None = None, revolute: list[bool] | None = None,
                 floating_base: bool = False) -> JointMatch:
    """Match log ``columns`` to robot ``joint_names`` (see the module doc).

    ``data``: the columns' values (for the time guess and the degrees check); ``limits``:
    ``(dof, 2)`` lower/upper position limits in SI; ``revolute``: which joints are revolute
    (the degree check only looks at those). Raises LogError (field ``q``) when no joint
    matches.
    """
    notes: list[str] = []
    time = None
    if data is not None:
        from engine.logs.table import LogTable

        time = guess_time_column(LogTable(columns=list(columns), data={c: data[c] for c in columns}))
    if time is None:
        time = next((c for c in columns if tokens(c) and tokens(c)[-1] in _TIME_WORDS), None)
    base = _base_columns(columns) if floating_base else []
    groups: dict[str, list[tuple]] = {"q": [], "qd": [], "u": []}
    for c in columns:
        if c == time or c in base:
            continue
        role, key, unit, words = _role_and_key(c)
        if COMMAND_WORDS.intersection(words) or (words and words[-1] in _BOOKKEEPING):
            continue
        if role is None and key and key[-1].isdigit():
            role = "q"      # a bare "j1", "a3": a position
        if role is None and any(_contains(words, tuple(tokens(j))) for j in joint_names):
            role = "q"      # a column named after a joint: its position
        if role in groups:
            groups[role].append((c, key, unit, words))
    found = {}
    units: dict[str, str] = {}
    for role, items in groups.items():
        cols = [c for c, _, _, _ in items]
        found[role] = _assign(list(joint_names), cols, [it[1] for it in items], [it[3] for it in items]) \
            if cols else {}
        for c, _, unit, _ in items:
            if unit:
                units[c] = unit
    joints = [j for j in joint_names if j in found["q"]]
    if not joints:
        from engine.logs.errors import LogError

        raise LogError(f"no column matches a joint of the robot ({', '.join(joint_names[:8])}); "
                       "map the columns by hand", column="q")
    missing = [j for j in joint_names if j not in found["q"]]
    if missing:
        notes.append(f"no position column for {', '.join(missing)}: held at 0")
    q = [found["q"][j] for j in joints]
    qd = [found["qd"][j] for j in joints] if all(j in found["qd"] for j in joints) else []
    u = [found["u"][j] for j in joints] if all(j in found["u"] for j in joints) else []
    if found["qd"] and not qd:
        notes.append("velocity columns do not cover every matched joint: velocities from differences")
    degrees = False
    if data is not None:
        rev = revolute if revolute is not None else [True] * len(joint_names)
        index = {j: i for i, j in enumerate(joint_names)}
        checks = [_looks_like_degrees(data[c], None if limits is None else np.asarray(limits)[index[j]])
                  for j, c in zip(joints, q) if rev[index[j]] and c not in units]
        if checks and sum(checks) > len(checks) / 2:
            degrees = True
            for j, c in zip(joints, q):
                if rev[index[j]] and c not in units:
                    units[c] = "deg"
            notes.append("positions have no unit in their names and leave the joint limits in radians: "
                         "read as degrees")
    if degrees or any(units.get(c) == "deg" for c in q):
        for c in qd:
            units.setdefault(c, "deg/s")
    if time is not None and time not in units and time_unit_from_name(time) != "s":
        units[time] = time_unit_from_name(time)
    mapping = LogMapping(time=time, q=q, qd=qd, u=u, units=units,
                         sample_period=None if time else 0.01, name="matched by name")
    if time is None:
        notes.append("no time column: rows taken 0.01 s apart")
    notes.append(f"matched {len(joints)} of {len(joint_names)} joints"
                 + (f", velocities {len(qd)}" if qd else "") + (f", torques {len(u)}" if u else ""))
    return JointMatch(mapping=mapping, joints=joints, base=base, notes=notes)
