"""Log formats users have, written with their own libraries and read back for a replay:
Parquet with list columns and episodes (LeRobot's layout, pyarrow), MCAP with protobuf
messages (mcap-protobuf-support), MCAP with ROS 1 messages (mcap-ros1-support), ROS 1 bags
(rosbags); progress and cancellation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.data.log_replay import ReplayMapping, make_replay
from engine.jobs import JobCancelled
from engine.logs import LogError, LogMapping, apply_mapping, read_log
from engine.logs.reader import ReadOptions, episodes
from engine.robots.library import load_robot

JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def panda():
    return load_robot("panda")


def _trajectory(n, phase=0.0):
    t = np.arange(n) * 0.02
    q = 0.3 * np.sin(np.outer(t, np.arange(1, 8) * 0.5) + phase)
    qd = 0.3 * np.cos(np.outer(t, np.arange(1, 8) * 0.5) + phase) * np.arange(1, 8) * 0.5
    return t, q, qd


def _lerobot_parquet(path):
    """Three episodes of 40 frames, written in row groups of 50 (episodes straddle groups)."""
    rows = []
    for ep in range(3):
        t, q, _ = _trajectory(40, phase=ep)
        for k in range(40):
            rows.append({"observation.state": q[k].astype(np.float32).tolist(),
                         "action": (q[k] + 0.01).astype(np.float32).tolist(),
                         "timestamp": np.float32(t[k]), "frame_index": k, "episode_index": ep,
                         "index": ep * 40 + k, "task_index": 0})
    schema = pa.schema([("observation.state", pa.list_(pa.float32(), 7)), ("action", pa.list_(pa.float32())),
                        ("timestamp", pa.float32()), ("frame_index", pa.int64()),
                        ("episode_index", pa.int64()), ("index", pa.int64()), ("task_index", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=50)


def test_lerobot_parquet_list_columns_and_episodes(tmp_path, panda, recording_context):
    path = tmp_path / "episode.parquet"
    _lerobot_parquet(path)
    ctx = recording_context()
    table = read_log(path, ctx)
    assert [c for c in table.columns if c.startswith("observation")] == [
        f"observation.state[{i}]" for i in range(7)
    ]
    assert "action[6]" in table.columns and table.n_rows == 120
    assert episodes(table) == [0, 1, 2] and any("3 episodes" in n for n in table.notes)
    assert len(ctx.updates) >= 3 and ctx.updates[-1][0] == 1.0   # one report per row group, then done
    one = read_log(path, options=ReadOptions(episode=1))
    _, q_ref, _ = _trajectory(40, phase=1)
    np.testing.assert_allclose(one.to_array([f"observation.state[{i}]" for i in range(7)]),
                               q_ref.astype(np.float32), rtol=0, atol=0)
    rmap = ReplayMapping.auto(one, panda)       # the state vector maps in order; the action is left out
    assert rmap.mapping.q == [f"observation.state[{i}]" for i in range(7)] and rmap.joints == JOINTS
    assert rmap.mapping.time == "timestamp"
    replay = make_replay(one, rmap, panda)
    np.testing.assert_allclose(replay.q, q_ref, atol=1e-7)
    with pytest.raises(JobCancelled):
        read_log(path, recording_context(cancel_after=1))
    with pytest.raises(LogError, match="no episode 9"):
        read_log(path, options=ReadOptions(episode=9))


def test_ragged_list_column_names_the_row(tmp_path):
    pq.write_table(
        pa.table({"t": [0.0, 1.0, 2.0], "state": [[1.0, 2.0], [1.0, 2.0], [3.0]]}), tmp_path / "r.parquet"
    )
    table = read_log(tmp_path / "r.parquet")      # skipped (only the columns a mapping uses must be readable)
    assert table.columns == ["t"] and "row 2 holds 1 values" in table.skipped["state"]
    with pytest.raises(LogError, match="row 2 holds 1 values") as err:
        apply_mapping(table, LogMapping(time="t", q=["state[0]"]))
    assert err.value.column == "state"


def _protobuf_joint_state():
    """A JointState protobuf class built from a descriptor (what protoc would generate)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2  # noqa: F401
    from google.protobuf.message_factory import GetMessageClass

    pool = descriptor_pool.Default()
    try:
        return GetMessageClass(pool.FindMessageTypeByName("lagrange_test.JointState"))
    except KeyError:
        pass
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="lagrange_test/joints.proto", package="lagrange_test",
                                             syntax="proto3", dependency=["google/protobuf/timestamp.proto"])
    m = fdp.message_type.add(name="JointState")
    m.field.add(name="stamp", number=1, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    for i, n in enumerate(("position", "velocity", "effort")):
        m.field.add(name=n, number=3 + i, type=F.TYPE_DOUBLE, label=F.LABEL_REPEATED)
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("lagrange_test.JointState"))


def test_mcap_protobuf_joint_states_replay_on_the_panda(tmp_path, panda, recording_context):
    from mcap_protobuf.writer import Writer

    JointState = _protobuf_joint_state()
    t, q, qd = _trajectory(300)
    path = tmp_path / "pb.mcap"
    with open(path, "wb") as fh, Writer(fh) as writer:
        for k in range(len(t)):
            msg = JointState(name=JOINTS, position=q[k], velocity=qd[k], effort=-q[k])
            ns = 1_700_000_000 * 10**9 + int(round(t[k] * 1e9))
            msg.stamp.FromNanoseconds(ns)
            writer.write_message("/joint_states", msg, log_time=ns, publish_time=ns)
    ctx = recording_context()
    table = read_log(path, ctx)
    assert "protobuf" in table.notes[0] and ctx.updates[-1][0] == 1.0 and ctx.checks >= 2
    np.testing.assert_allclose(table["/joint_states/stamp"], t, atol=1e-9)
    rmap = ReplayMapping.auto(table, panda)
    assert rmap.joints == JOINTS
    assert rmap.mapping.q == [f"/joint_states/position/{j}" for j in JOINTS]
    assert rmap.mapping.qd == [f"/joint_states/velocity/{j}" for j in JOINTS]
    assert rmap.mapping.u == [f"/joint_states/effort/{j}" for j in JOINTS]
    replay = make_replay(table, rmap, panda)
    np.testing.assert_allclose(replay.t, t, atol=1e-9)
    np.testing.assert_allclose(replay.q, q, atol=1e-12)
    np.testing.assert_allclose(replay.qd, qd, atol=1e-12)
    np.testing.assert_allclose(replay.tau, -q, atol=1e-12)
    with pytest.raises(JobCancelled):
        read_log(path, recording_context(cancel_after=1))


ROS1_JOINT_STATE = """Header header
string[] name
float64[] position
float64[] velocity
float64[] effort
================================================================================
MSG: std_msgs/Header
uint32 seq
time stamp
string frame_id
"""


def test_mcap_ros1_messages(tmp_path, panda):
    from mcap_ros1._vendor import genpy
    from mcap_ros1._vendor.genpy import dynamic
    from mcap_ros1.writer import Writer

    JointState = dynamic.generate_dynamic("sensor_msgs/JointState", ROS1_JOINT_STATE)[
        "sensor_msgs/JointState"
    ]
    t, q, qd = _trajectory(50)
    path = tmp_path / "ros1.mcap"
    with open(path, "wb") as fh:
        writer = Writer(fh)
        for k in range(len(t)):
            msg = JointState(name=JOINTS, position=list(q[k]), velocity=list(qd[k]), effort=[])
            ns = 1_600_000_000 * 10**9 + int(round(t[k] * 1e9))
            msg.header.stamp = genpy.Time(ns // 10**9, ns % 10**9)
            msg.header.seq = k
            writer.write_message("/joint_states", msg, log_time=ns)
        writer.finish()
    table = read_log(path)
    assert "ROS 1" in table.notes[0]
    np.testing.assert_array_equal(table["/joint_states/header/seq"], np.arange(50))
    replay = make_replay(table, ReplayMapping.auto(table, panda), panda)
    np.testing.assert_allclose(replay.q, q, atol=1e-12)
    assert replay.tau is None and replay.qd_logged


def test_ros1_bag_with_other_names_and_degrees(tmp_path, panda):
    """A ROS 1 bag of a Float64MultiArray-like record nobody prepared: arm_j1..arm_j7 in degrees."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC)
    JointState = store.types["sensor_msgs/msg/JointState"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    t, q, _ = _trajectory(60)
    q = q * 4.0   # up to 1.2 rad: in degrees beyond the Panda's limits
    names = [f"arm_j{i}" for i in range(1, 8)]
    with Writer(tmp_path / "run.bag") as writer:
        conn = writer.add_connection("/arm/state", JointState.__msgtype__, typestore=store)
        for k in range(len(t)):
            ns = 1_700_000_000 * 10**9 + int(round(t[k] * 1e9))
            msg = JointState(
                header=Header(seq=k, stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""),
                name=names,
                position=np.degrees(q[k]),
                velocity=np.zeros(0),
                effort=np.zeros(0),
            )
            writer.write(conn, ns, store.serialize_ros1(msg, JointState.__msgtype__))
    table = read_log(tmp_path / "run.bag")
    rmap = ReplayMapping.auto(table, panda)
    assert rmap.joints == JOINTS and rmap.mapping.q == [f"/arm/state/position/{n}" for n in names]
    assert set(rmap.mapping.units[c] for c in rmap.mapping.q) == {"deg"}
    replay = make_replay(table, rmap, panda)
    np.testing.assert_allclose(replay.q, q, atol=1e-12)
