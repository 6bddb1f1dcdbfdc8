"""Large robots: time and peak memory of ``python -m engine robot info`` on generated files.

    python -m experiments.large_robots [--links 5000] [--bodies 10000] [--out results/large_robots]
                                       [--engine-root DIR]

Writes a serial chain URDF of ``--links`` links (one revolute joint each, unit masses) and an
MJCF of ``--bodies`` bodies (``--bodies / 100`` chains of 100 hinged capsules under the world
body), then runs ``robot info`` on each in a fresh interpreter and records the wall time, the
CPU time and the peak resident memory (``ru_maxrss`` from ``os.wait4``). ``--engine-root``
runs another checkout's engine (the "before" of a change). Also times MuJoCo's own compile of
the MJCF (``MjModel.from_xml_path``), which the loader cannot avoid. Writes
``large_robots.json`` to ``--out``. A measurement, not a test: the figures depend on the
machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

_INERTIA = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'


def chain_urdf(n: int) -> str:
    out = ['<robot name="chain">']
    for i in range(n):
        out.append(f'<link name="l{i}"><inertial><mass value="1"/>{_INERTIA}</inertial></link>')
        if i:
            out.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                       '<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>'
                       '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')
    out.append("</robot>")
    return "\n".join(out)


def chains_mjcf(n: int, per: int = 100) -> str:
    out = ['<mujoco model="chains"><worldbody>']
    for c in range(max(n // per, 1)):
        for k in range(per):
            out.append(
                f'<body name="b{c}_{k}" pos="0 0 0.1"><joint name="j{c}_{k}" type="hinge" axis="0 1 0"/>'
                '<geom type="capsule" size="0.01" fromto="0 0 0 0 0 0.1" mass="0.1"/>'
            )
        out.append("</body>" * per)
    out.append("</worldbody></mujoco>")
    return "\n".join(out)


def measure(argv: list[str], cwd: Path) -> dict:
    """Run ``argv`` in ``cwd``; wall and CPU seconds and peak memory (MB) of that process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(cwd))
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")[-400:]
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "stderr_tail": err if proc.returncode else "",
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--links", type=int, default=5000)
    p.add_argument("--bodies", type=int, default=10000)
    p.add_argument("--out", type=Path, default=Path("results/large_robots"))
    p.add_argument("--engine-root", type=Path, default=Path.cwd())
    p.add_argument("--label", default="")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    files = args.out / "generated"
    files.mkdir(exist_ok=True)
    urdf = files / f"chain{args.links}.urdf"
    urdf.write_text(chain_urdf(args.links))
    mjcf = files / f"chains{args.bodies}.xml"
    mjcf.write_text(chains_mjcf(args.bodies))
    root = args.engine_root.resolve()
    rows = []
    for name, path in (("urdf chain", urdf), ("mjcf", mjcf)):
        if (name == "urdf chain" and args.links <= 0) or (name == "mjcf" and args.bodies <= 0):
            continue
        row = {"file": name, "size": args.links if name == "urdf chain" else args.bodies, "engine": str(root),
               "label": args.label}
        row |= measure([sys.executable, "-m", "engine", "robot", "info", str(path.resolve())], root)
        if name == "mjcf":
            code = (
                f"import mujoco, time; t = time.process_time(); mujoco.MjModel.from_xml_path({str(path.resolve())!r}); "
                "print(time.process_time() - t)"
            )
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
            row["mujoco_compile_cpu_s"] = round(float(out.stdout.strip() or "nan"), 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    target = args.out / "large_robots.json"
    old = json.loads(target.read_text()) if target.is_file() else []
    target.write_text(json.dumps(old + rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
