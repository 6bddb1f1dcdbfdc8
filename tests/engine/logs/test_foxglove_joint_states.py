"""Foxglove joint states in a protobuf MCAP (written by mcap-protobuf-support) are named after
the joints each message carries, so that a replay matches them to the robot by name.

The schema is foxglove's own (https://docs.foxglove.dev/docs/sdk/schemas/joint-states):
``foxglove.JointStates {Timestamp timestamp = 1; repeated foxglove.JointState joints = 2}``,
``foxglove.JointState {string name = 1; optional double position = 2, velocity = 3,
acceleration = 4, effort = 5}``; its classes are built here from that descriptor (what
foxglove-schemas-protobuf ships as generated code), in a pool of their own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.cli import main
from engine.data.log_replay import ReplayMapping, make_replay
from engine.logs import read_log
from engine.robots.library import load_robot

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


def _foxglove_classes():
    """``(JointStates, JointState)`` message classes of foxglove's protobuf schema."""
    from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    pool = descriptor_pool.DescriptorPool()
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    F = descriptor_pb2.FieldDescriptorProto
    one = descriptor_pb2.FileDescriptorProto(name="foxglove/JointState.proto", package="foxglove", syntax="proto3")
    m = one.message_type.add(name="JointState")
    m.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    for number, name in enumerate(("position", "velocity", "acceleration", "effort"), start=2):
        # proto3 `optional`: a synthetic oneof per field, as protoc writes it
        m.oneof_decl.add(name=f"_{name}")
        m.field.add(name=name, number=number, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL,
                    oneof_index=number - 2, proto3_optional=True)
    pool.Add(one)
    many = descriptor_pb2.FileDescriptorProto(
        name="foxglove/JointStates.proto", package="foxglove", syntax="proto3",
        dependency=["foxglove/JointState.proto", "google/protobuf/timestamp.proto"])
    m = many.message_type.add(name="JointStates")
    m.field.add(name="timestamp", number=1, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="joints", number=2, type=F.TYPE_MESSAGE, type_name=".foxglove.JointState",
                label=F.LABEL_REPEATED)
    pool.Add(many)
    return (GetMessageClass(pool.FindMessageTypeByName("foxglove.JointStates")),
            GetMessageClass(pool.FindMessageTypeByName("foxglove.JointState")))


def _trajectory(n):
    t = np.arange(n) * 0.01
    w = np.arange(1, 8) * 0.5
    return t, 0.3 * np.sin(np.outer(t, w)), 0.3 * np.cos(np.outer(t, w)) * w


@pytest.fixture
def foxglove_mcap(tmp_path):
    """``/arm/joint_states``: the Panda's 7 joints by name (position, velocity; effort and
    acceleration left out); ``/gripper/joint_states``: two entries without names."""
    from mcap_protobuf.writer import Writer

    JointStates, JointState = _foxglove_classes()
    t, q, qd = _trajectory(200)
    path = tmp_path / "foxglove.mcap"
    with open(path, "wb") as fh, Writer(fh) as writer:
        for k in range(len(t)):
            ns = 1_700_000_000 * 10**9 + int(round(t[k] * 1e9))
            order = np.roll(np.arange(7), k)          # the joints in a different order in each message
            msg = JointStates(joints=[JointState(name=JOINTS[j], position=q[k, j], velocity=qd[k, j])
                                      for j in order])
            msg.timestamp.FromNanoseconds(ns)
            writer.write_message("/arm/joint_states", msg, log_time=ns, publish_time=ns)
            if k % 2 == 0:
                grip = JointStates(joints=[JointState(position=0.01 * k), JointState(position=0.02)])
                grip.timestamp.FromNanoseconds(ns + 3_000_000)
                writer.write_message("/gripper/joint_states", grip, log_time=ns + 3_000_000,
                                     publish_time=ns + 3_000_000)
    return path, t, q, qd


def test_joint_columns_named_after_the_joints(foxglove_mcap, capsys):
    path, t, q, qd = foxglove_mcap
    assert main(["logs", "inspect", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    names = [c["name"] for c in summary["columns"]]
    for j in JOINTS:
        assert f"/arm/joint_states/joints/{j}/position" in names
        assert f"/arm/joint_states/joints/{j}/velocity" in names
    assert not any(n.startswith("/arm/joint_states/joints/0") for n in names)
    assert not any(n.endswith(("/effort", "/acceleration")) for n in names)     # left out: no column of zeros
    # entries without names keep their index, and a note says so
    assert "/gripper/joint_states/joints/0/position" in names
    assert any("/gripper/joint_states/joints: entries without a name" in n for n in summary["notes"])
    table = read_log(path)
    arm = np.isfinite(table["/arm/joint_states/t"])
    for i, j in enumerate(JOINTS):        # each value under its joint, whatever its place in the message
        np.testing.assert_array_equal(table[f"/arm/joint_states/joints/{j}/position"][arm], q[:, i])


def test_foxglove_joint_states_replay_on_the_panda_by_name(foxglove_mcap, capsys):
    path, t, q, qd = foxglove_mcap
    code = main(["logs", "replay", str(path), "--robot", "panda", "--topics", "/arm/joint_states", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["joints"] == JOINTS
    assert summary["q"] == [f"/arm/joint_states/joints/{j}/position" for j in JOINTS]
    assert summary["qd"] == [f"/arm/joint_states/joints/{j}/velocity" for j in JOINTS]
    panda = load_robot("panda")
    table = read_log(path)                 # both topics: the gripper's indexed columns match no joint
    replay = make_replay(table, ReplayMapping.auto(table, panda), panda)
    np.testing.assert_allclose(replay.t, t, atol=1e-9)
    np.testing.assert_allclose(replay.q, q, atol=1e-12)
    np.testing.assert_allclose(replay.qd, qd, atol=1e-12)


def test_topics_sharing_an_instant_are_no_time_problem(tmp_path, capsys):
    """Two topics logged at the same instants: the recording's clock repeats between topics,
    which is no problem; a stamp that goes back within a topic is, named with its topic."""
    from mcap_protobuf.writer import Writer

    JointStates, JointState = _foxglove_classes()
    path = tmp_path / "two.mcap"
    with open(path, "wb") as fh, Writer(fh) as writer:
        for k in range(50):
            ns = 1_700_000_000 * 10**9 + k * 10_000_000
            for topic in ("/left/joint_states", "/right/joint_states"):
                msg = JointStates(joints=[JointState(name="j1", position=0.01 * k)])
                msg.timestamp.FromNanoseconds(ns - (20_000_000 if topic == "/right/joint_states" and k == 30 else 0))
                writer.write_message(topic, msg, log_time=ns, publish_time=ns)
    assert main(["logs", "inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []
    assert main(["logs", "inspect", str(path), "--time", "/right/joint_states/timestamp", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [p["kind"] for p in problems] == ["time"] and problems[0]["row"] == 2 * 30 + 1
    assert "not increasing on /right/joint_states" in problems[0]["message"]


def test_ros2_foxglove_msgs_joint_states_named_by_joint(tmp_path):
    """The ROS 2 form (foxglove_msgs/msg/JointStates, written by rosbags into an MCAP bag)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_HUMBLE)
    store.register(get_types_from_msg("string name\nfloat64 position\nfloat64 velocity\nfloat64 acceleration\n"
                                      "float64 effort\n", "foxglove_msgs/msg/JointState"))
    store.register(get_types_from_msg("builtin_interfaces/Time timestamp\nfoxglove_msgs/JointState[] joints\n",
                                      "foxglove_msgs/msg/JointStates"))
    JointStates, JointState = store.types["foxglove_msgs/msg/JointStates"], store.types["foxglove_msgs/msg/JointState"]
    Time = store.types["builtin_interfaces/msg/Time"]
    t, q, qd = _trajectory(40)
    with Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/arm/joint_states", JointStates.__msgtype__, typestore=store)
        for k in range(len(t)):
            ns = 1_700_000_000 * 10**9 + int(round(t[k] * 1e9))
            joints = [JointState(name=JOINTS[j], position=q[k, j], velocity=qd[k, j], acceleration=0.0, effort=0.0)
                      for j in reversed(range(7))]
            msg = JointStates(timestamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), joints=joints)
            writer.write(conn, ns, store.serialize_cdr(msg, JointStates.__msgtype__))
    table = read_log(tmp_path / "bag")
    assert not any("/joints/0/" in c for c in table.columns)
    for i, j in enumerate(JOINTS):
        np.testing.assert_array_equal(table[f"/arm/joint_states/joints/{j}/position"], q[:, i])
