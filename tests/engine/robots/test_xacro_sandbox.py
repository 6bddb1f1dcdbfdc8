"""xacro files are programs: they are expanded in a sandboxed child process (engine.robots.xacro_worker).

Each hostile file is first shown to do harm with the plain ``xacro`` package (the reference: the
command runs, /etc/passwd is read), then shown to be refused by the loader in one line, with the
command not run. Legitimate files (the shipped test arm, a ROS-style package with math,
conditionals, includes, a namespace, YAML and ``$(find)``, example-robot-data's xacro) expand to
exactly the text of the plain ``xacro`` package. A macro bomb stops at the limits, and the next
expansion works.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.jobs import JobCancelled
from engine.robots import RobotModel, URDFError
from engine.robots.xacro_loader import XacroLimits, expand_xacro
from engine.robots.xacro_worker import Refused, restricted_eval

ARM = Path(__file__).parent / "xacro_arm" / "arm.urdf.xacro"
HECTOR = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
    / "cmeel.prefix"
    / "share"
    / "example-robot-data"
    / "robots"
    / "hector_description"
    / "robots"
    / "quadrotor_base.urdf.xacro"
)
HEAD = '<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">\n'


def _plain_xacro(path: Path, args=None, find=None) -> str:
    """The reference: the plain xacro package, in a process of its own (it keeps globals)."""
    code = ("import sys, json, xacro\n"
            "from xacro import substitution_args\n"
            "req = json.loads(sys.argv[1])\n"
            "if req['find']: substitution_args._eval_find = lambda pkg: req['find'][pkg]\n"
            "sys.stdout.write(xacro.process_file(req['path'], mappings=req['args']).toxml())\n")
    import json

    req = json.dumps({"path": str(path), "args": dict(args or {}), "find": find or {}})
    out = subprocess.run([sys.executable, "-c", code, req], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + body + "\n</robot>\n")
    return path


# ------------------------------------------------------------------------------ legitimate files

@pytest.mark.parametrize("args", [{}, {"links": "3", "length": "0.5", "tool": "true"}])
def test_the_shipped_arm_expands_exactly_as_plain_xacro(args):
    assert expand_xacro(ARM, args) == _plain_xacro(ARM, args)


@pytest.fixture
def ros_package(tmp_path):
    """A ROS-style package: urdf/ with the robot and an included macro file, config/ with YAML."""
    pkg = tmp_path / "ws" / "src" / "my_arm_description"
    (pkg / "package.xml").parent.mkdir(parents=True)
    (pkg / "package.xml").write_text("<package><name>my_arm_description</name></package>\n")
    (pkg / "config").mkdir()
    (pkg / "config" / "dims.yaml").write_text(
        "arm:\n  length: 0.3\n  masses: [1.5, 1.0]\nangle: !degrees 90\n"
    )
    (pkg / "urdf").mkdir()
    (pkg / "urdf" / "parts.xacro").write_text(
        HEAD.replace(' name="r"', "") +
        '  <xacro:property name="width" value="0.05"/>\n'
        '  <xacro:macro name="rod" params="name parent length mass *origin">\n'
        '    <link name="${name}"><inertial><mass value="${mass}"/>\n'
        '      <inertia ixx="${mass * length**2 / 12}" ixy="0" ixz="0" iyy="${mass * length**2 / 12}" iyz="0"'
        ' izz="${mass * width**2 / 6}"/></inertial></link>\n'
        '    <joint name="${name}_joint" type="revolute"><parent link="${parent}"/><child link="${name}"/>\n'
        '      <xacro:insert_block name="origin"/><axis xyz="0 1 0"/>\n'
        '      <limit lower="${-pi/2}" upper="${radians(90)}" effort="10" velocity="2"/></joint>\n'
        '  </xacro:macro>\n</robot>\n')
    robot = _write(
        pkg / "urdf",
        "arm.urdf.xacro",
        (
            '  <xacro:arg name="second" default="true"/>\n'
            '  <xacro:arg name="prefix" default="arm"/>\n'
            '  <xacro:include filename="$(find my_arm_description)/urdf/parts.xacro" ns="parts"/>\n'
            '  <xacro:property name="dims" value="${xacro.load_yaml(\'../config/dims.yaml\')}"/>\n'
            '  <xacro:property name="xyz" value="0.1 0.2 0.3"/>\n'
            '  <xacro:property name="offsets" value="${[float(v) * 2 for v in xyz.split()]}"/>\n'
            '  <link name="$(arg prefix)_base"/>\n'
            '  <xacro:parts.rod name="$(arg prefix)_upper" parent="$(arg prefix)_base" length="${dims.arm.length}"'
            " mass=\"${dims['arm']['masses'][0]}\">\n"
            '    <origin xyz="${offsets[0]} 0 ${dims.arm.length / 2}" rpy="0 ${math.sin(dims.angle) * pi / 4} 0"/>\n'
            "  </xacro:parts.rod>\n"
            '  <xacro:if value="$(arg second)">\n'
            '    <xacro:parts.rod name="${\'$(arg prefix)\'.upper()}_lower" parent="$(arg prefix)_upper"'
            ' length="${max(0.1, dims.arm.length - parts.width)}" mass="${python.sum(dims.arm.masses) - 1.5}">\n'
            '      <origin xyz="0 0 ${dims.arm.length if len(offsets) == 3 else 0}"/>\n'
            "    </xacro:parts.rod>\n"
            "  </xacro:if>\n"
            '  <xacro:unless value="$(arg second)"><link name="cap_$(eval 1 + 2)"/>'
            '<joint name="cap_joint" type="fixed"><parent link="$(arg prefix)_upper"/><child link="cap_3"/></joint>'
            "</xacro:unless>\n"
            '  <joint name="j_${int(round(atan2(1, 1) * 4 / pi))}" type="fixed"><parent link="$(arg prefix)_base"/>'
            '<child link="${\'tip_%d\' % len(xyz.split())}"/></joint><link name="tip_3"/>\n'
        ),
    )
    return pkg, robot


@pytest.mark.parametrize("args", [{}, {"second": "false", "prefix": "left"}])
def test_a_ros_package_with_math_yaml_includes_and_find_expands_as_plain_xacro(ros_package, args):
    pkg, robot = ros_package
    text = expand_xacro(robot, args)
    assert text == _plain_xacro(robot, args, find={"my_arm_description": str(pkg)})
    model = RobotModel.from_file(robot, xacro_args=args)
    if not args:
        assert model.joint_names == ["arm_upper_joint", "ARM_lower_joint"]
        # the YAML's masses and length, through the macro's rod formula
        assert float(model.link_mass("ARM_lower")) == pytest.approx(1.0)
        assert model.description.link("arm_upper").inertial.inertia[0] == pytest.approx(1.5 * 0.3**2 / 12)
    else:
        assert model.joint_names == ["left_upper_joint"] and "cap_3" in model.link_names


@pytest.mark.skipif(not HECTOR.is_file(), reason="example-robot-data is not installed")
def test_example_robot_data_xacro_expands_as_plain_xacro():
    assert expand_xacro(HECTOR) == _plain_xacro(HECTOR)       # its macro file (pi redefined: a warning)
    # the robot file beside it includes package://.../urdf/quadrotor_base.urdf.xacro, which the
    # package does not ship: one line naming the file it looked for
    with pytest.raises(
        URDFError,
        match=r"quadrotor_base.xacro: xacro could not expand the file: No such file.*"
        r"hector_description/urdf/quadrotor_base.urdf.xacro",
    ) as info:
        expand_xacro(HECTOR.with_name("quadrotor_base.xacro"))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("expression", [
    "1 + 2 * 3 ** 2 - 7 // 2 % 3", "-x / 3 + abs(-y)", "1 < x <= 2 < y", "x if y > 2 else 'no'",
    "x and y or 0", "not x", "[v * 2 for v in range(4) if v % 2]", "{k: v for k, v in zip('ab', [1, 2])}",
    "'a,b'.split(',')[::-1]", "f'{x:.3f}-{y!r}'", "sum(v for v in [1, 2, 3]) / len('abc')", "(1, *[2, 3])",
    "pi * sin(x) + cos(radians(y))", "max([x, y], key=abs)", "'%s:%d' % ('n', 3)", "s.upper() in ['AB', 'C']",
])
def test_the_restricted_evaluator_agrees_with_python(expression):
    names = {
        "x": 1.5,
        "y": 3,
        "s": "ab",
        "pi": math.pi,
        "sin": math.sin,
        "cos": math.cos,
        "radians": math.radians,
        "abs": abs,
        "range": range,
        "zip": zip,
        "sum": sum,
        "len": len,
        "max": max,
    }
    assert restricted_eval(expression, names) == eval(expression, {"__builtins__": {}}, dict(names))  # noqa: S307


@pytest.mark.parametrize("expression", [
    "().__class__", "x.__class__", "s.format(1)", "str.join(',', 'ab')", "(lambda: 1)()", "[a := 1]",
    "getattr(x, 'real')", "_private", "[c for c in ().__class__.__bases__]", "s.encode()",
])
def test_the_restricted_evaluator_refuses_everything_else(expression):
    with pytest.raises((Refused, NameError)):
        restricted_eval(expression, {"x": 1.5, "s": "ab", "str": str})


# ------------------------------------------------------------------------------ hostile files

def _escape_payloads(marker: Path) -> dict[str, str]:
    shell = f"touch {marker}"
    return {
        # no name in it starts with '__', so plain xacro's filter lets it through
        "builtins": "<link name=\"${[python.vars(c()._module)['__builtins__']['__import__']('os').system('"
        + shell
        + "') for c in python.vars(python.type)['__subclasses__'](python.type(0).mro()[-1]) "
        "if 'catch_warnings' in str(c)][0]}\"/>",
        "dunder": '<link name="${[c for c in ().__class__.__base__.__subclasses__() if c.__name__=='
        "'catch_warnings'][0]()._module.__builtins__['__import__']('os').system('" + shell + "')}\"/>",
        "globals": "<link name=\"${xacro.load_yaml.__globals__['os'].system('" + shell + "')}\"/>",
        "format": '<xacro:property name="f" value="{0.__class__.__base__}"/><link name="${f.format(1)}"/>',
        "vars": '<link name="${python.vars(xacro)}"/>',
        "namespace_as_value": "<link name=\"${list(map(*[dict(python)['len'], ['ab']]))}\"/>",
        "lambda": '<link name="${(lambda: 0)()}"/>',
        "eval_substitution": '<link name="$(eval __import__)"/>',
    }


@pytest.mark.parametrize("name", list(_escape_payloads(Path("/m"))))
def test_a_payload_that_runs_a_command_is_refused_in_one_line(tmp_path, capsys, name):
    marker = tmp_path / "pwned"
    path = _write(tmp_path, f"{name}.urdf.xacro", _escape_payloads(marker)[name])
    if name == "builtins":         # the reference: plain xacro runs the command
        subprocess.run([sys.executable, "-c", f"import xacro; xacro.process_file({str(path)!r})"],
                       capture_output=True, timeout=120)
        assert marker.exists()
        marker.unlink()
    assert main(["robot", "info", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and path.name in err
    assert "is not allowed" in err
    assert not marker.exists()


def test_reading_files_and_environment_outside_the_package_is_refused(tmp_path, capsys):
    # the reference: plain xacro reads /etc/passwd into a link name
    leak = _write(tmp_path / "robot", "leak.urdf.xacro", "<link name=\"${xacro.load_yaml('/etc/passwd')}\"/>")
    if Path("/etc/passwd").is_file():
        plain = subprocess.run(
            [sys.executable, "-c", f"import xacro; print(xacro.process_file({str(leak)!r}).toxml())"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "root" in plain.stdout
    (tmp_path / "secret.yaml").write_text("token: s3cret\n")
    (tmp_path / "outside.xacro").write_text(
        HEAD.replace(' name="r"', "") + "<link name='outside'/></robot>\n"
    )
    (tmp_path / "robot" / "linked.xacro").symlink_to(tmp_path / "outside.xacro")
    cases = {
        "leak": ("/etc/passwd", None),
        "deprecated": ("secret.yaml", "<link name=\"${load_yaml('../secret.yaml')}\"/>"),
        "include_up": ("outside.xacro", '<xacro:include filename="../outside.xacro"/>'),
        "include_abs": ("/etc/hosts", '<xacro:include filename="/etc/hosts"/>'),
        "include_link": ("outside.xacro", '<xacro:include filename="linked.xacro"/>'),
        "env": ("HOME", '<link name="$(env HOME)"/>'),
        "optenv": ("HOME", '<link name="$(optenv HOME nobody)"/>'),
    }
    for name, (named, body) in cases.items():
        path = leak if body is None else _write(tmp_path / "robot", f"{name}.urdf.xacro", body)
        with pytest.raises(URDFError) as info:
            expand_xacro(path)
        err = str(info.value)
        assert "\n" not in err and err.startswith(str(path)) and named in err, (name, err)
        assert "not allowed" in err and "s3cret" not in err and "root:" not in err, (name, err)
    assert main(["robot", "info", str(leak)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "leak.urdf.xacro" in err and "root:" not in err


def test_a_missing_package_is_named_with_how_to_make_it_findable(tmp_path, monkeypatch):
    path = _write(tmp_path / "robot", "uses_pkg.urdf.xacro",
                  '<xacro:include filename="$(find shared_parts)/parts.xacro"/><link name="a"/>')
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    with pytest.raises(URDFError) as info:
        expand_xacro(path)
    message = str(info.value)
    assert "'shared_parts'" in message and "ROS_PACKAGE_PATH" in message and "package.xml" in message
    assert "\n" not in message
    # made findable as the message says: ROS_PACKAGE_PATH names the folder that holds it
    parts = tmp_path / "others" / "shared_parts"
    parts.mkdir(parents=True)
    (parts / "parts.xacro").write_text(HEAD.replace(' name="r"', "") + '<link name="from_pkg"/></robot>\n')
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "others"))
    assert "from_pkg" in expand_xacro(path)


# ------------------------------------------------------------------------------ limits

def _bomb(tmp_path: Path, levels: int) -> Path:
    """Nested macros, each calling the one below ten times: 10**levels links from about 1.5 KB."""
    macros = ['<xacro:macro name="l0" params="p"><link name="${p}"/></xacro:macro>']
    for i in range(1, levels + 1):
        calls = "".join(f'<xacro:l{i - 1} p="${{p}}{c}"/>' for c in "abcdefghij")
        macros.append(f'<xacro:macro name="l{i}" params="p">{calls}</xacro:macro>')
    return _write(tmp_path, f"bomb{levels}.urdf.xacro", "\n".join(macros) + f'\n<xacro:l{levels} p="x"/>')


def test_an_expansion_bomb_stops_at_the_time_limit_and_the_next_load_works(tmp_path):
    bomb = _bomb(tmp_path, 5)
    assert bomb.stat().st_size < 2500
    with pytest.raises(
        URDFError, match=r"bomb5.urdf.xacro: expanding the file took longer than 2 s, the limit"
    ):
        expand_xacro(bomb, limits=XacroLimits(time_s=2.0))
    assert RobotModel.from_file(ARM).joint_names == ["joint1", "joint2"]


def test_link_count_and_text_size_limits(tmp_path):
    bomb = _bomb(tmp_path, 3)                                          # 1000 links
    assert expand_xacro(bomb).count("<link ") == 1000
    with pytest.raises(URDFError, match="has 1000 links, more than the 500"):
        expand_xacro(bomb, limits=XacroLimits(max_links=500))
    with pytest.raises(URDFError, match="MB of URDF text, more than"):
        expand_xacro(bomb, limits=XacroLimits(max_bytes=10_000))


def test_a_cancelled_expansion_ends_the_child(tmp_path):
    calls = []

    def check_cancelled():
        calls.append(1)
        if len(calls) > 2:
            raise JobCancelled("cancelled by the user")

    with pytest.raises(JobCancelled):
        expand_xacro(_bomb(tmp_path, 5), limits=XacroLimits(time_s=600), check_cancelled=check_cancelled)
    assert len(calls) == 3


# ------------------------------------------------------------------------------ fuzz

_ARM_TEXT = ARM.read_text()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(_ARM_TEXT) - 1), st.sampled_from(
    ["", "$", "{", "}", "${", "$(", "<", ">", "\"", "'", "_", "__", ".", "(", ")", "x", "0", "\x00", "é"])),
    min_size=1, max_size=6))
def test_mutated_xacro_files_never_give_a_traceback(tmp_path, edits):
    text = _ARM_TEXT
    for at, insert in edits:
        text = text[:at] + insert + text[at + 1:]
    path = tmp_path / "arm.urdf.xacro"
    path.write_text(text, encoding="utf-8")
    (tmp_path / "macros.xacro").write_text((ARM.parent / "macros.xacro").read_text())
    try:
        result = expand_xacro(path)
    except URDFError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
    else:
        assert isinstance(result, str)


def test_the_worker_runs_without_the_engine(tmp_path):
    """The child imports only the standard library and xacro (it starts in a fraction of a second)."""
    worker = Path(__file__).parents[3] / "engine" / "robots" / "xacro_worker.py"
    code = (f"import runpy, sys; sys.argv = ['w']; m = runpy.run_path({str(worker)!r}); "
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('engine', 'torch', 'numpy')))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
