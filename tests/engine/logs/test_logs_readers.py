"""Every format round-trips: written by our writers or by pandas / pyarrow / rosbags / mcap, read back equal."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.logs import LogError, LogTable, ReadOptions, read_log
from engine.logs.writers import write_csv, write_log, write_npz, write_parquet


def _columns(n=57, seed=0):
    rng = np.random.default_rng(seed)
    return {"t": np.arange(n) * 0.01, "q1": rng.normal(size=n) * 1e3, "q2": rng.normal(size=n) * 1e-7,
            "tau": rng.uniform(-5, 5, n)}


@pytest.mark.parametrize("delimiter,suffix", [(",", ".csv"), ("\t", ".tsv"), (";", ".csv"), ("|", ".txt"),
                                              (" ", ".dat")])
def test_delimited_round_trip_exact(tmp_path, delimiter, suffix):
    cols = _columns()
    path = write_csv(tmp_path / f"log{suffix}", cols, delimiter=delimiter, comments=["made by a test", "2nd"])
    table = read_log(path)
    assert table.columns == list(cols)
    for name, values in cols.items():
        np.testing.assert_array_equal(table[name], values)
    assert table.row_lines[0] == 4 and table.row_lines[-1] == 3 + len(cols["t"])  # 2 comments + header


def test_csv_written_by_pandas_reads_equal(tmp_path):
    cols = _columns(200, seed=3)
    pd.DataFrame(cols).to_csv(tmp_path / "p.csv", index=False, float_format="%.17g")
    table = read_log(tmp_path / "p.csv")
    for name, values in cols.items():
        np.testing.assert_array_equal(table[name], values)


def test_csv_comments_blank_lines_missing_cells_and_quotes(tmp_path):
    text = ('# a comment\n\n  # indented comment\n"t", "angle (deg)" ,torque\n0,1.5,2\n\n'
            '# mid comment\n0.1, "2",\n0.2,NaN,nan\n')
    (tmp_path / "c.csv").write_text(text)
    table = read_log(tmp_path / "c.csv")
    assert table.columns == ["t", "angle (deg)", "torque"]
    np.testing.assert_array_equal(table["t"], [0, 0.1, 0.2])
    np.testing.assert_array_equal(table["angle (deg)"], [1.5, 2, np.nan])
    np.testing.assert_array_equal(table["torque"], [2, np.nan, np.nan])
    assert table.row_lines.tolist() == [5, 8, 9]


def test_csv_decimal_comma_and_headerless_and_crlf(tmp_path):
    (tmp_path / "eu.csv").write_text("zeit;winkel\r\n0,5;1,25\r\n1,5;-2,75\r\n")
    table = read_log(tmp_path / "eu.csv")
    np.testing.assert_array_equal(table.to_array(), [[0.5, 1.25], [1.5, -2.75]])
    (tmp_path / "nohead.csv").write_text("1,2\n3,4\n")
    table = read_log(tmp_path / "nohead.csv")
    assert table.columns == ["col1", "col2"]
    np.testing.assert_array_equal(table.to_array(), [[1, 2], [3, 4]])


def test_csv_duplicate_header_names_are_renamed(tmp_path):
    (tmp_path / "d.csv").write_text("t,x,x,x_2\n0,1,2,3\n")
    table = read_log(tmp_path / "d.csv")
    # every copy is renamed (the first too), around a name the header already has
    assert table.columns == ["t", "x_1", "x_3", "x_2"]
    assert table.repeated == {"x": ["x_1", "x_3"]}
    np.testing.assert_array_equal(table.to_array(), [[0, 1, 2, 3]])
    assert any("repeats column 'x' (fields 2, 3)" in n for n in table.notes)


def test_explicit_delimiter_overrides_sniffing(tmp_path):
    (tmp_path / "x.txt").write_text("a;b,c\n1;2,3\n")
    with pytest.raises(LogError, match="non-numeric"):
        read_log(tmp_path / "x.txt", options=ReadOptions(delimiter=","))
    table = read_log(tmp_path / "x.txt", options=ReadOptions(delimiter=";"))
    assert table.columns == ["a", "b,c"]


def test_npz_round_trip_both_layouts(tmp_path):
    cols = _columns()
    table = read_log(write_npz(tmp_path / "a.npz", cols))
    assert table.columns == list(cols)
    for name, values in cols.items():
        np.testing.assert_array_equal(table[name], values)
    # plain layout: one array per column, a 2-D array split into columns, scalars skipped
    np.savez(tmp_path / "b.npz", t=cols["t"], q=np.stack([cols["q1"], cols["q2"]], 1), rate=np.float64(100),
             label=np.array("pendulum"))
    table = read_log(tmp_path / "b.npz")
    assert table.columns == ["t", "q[0]", "q[1]"]
    np.testing.assert_array_equal(table["q[1]"], cols["q2"])
    assert any("rate" in n for n in table.notes)


def test_parquet_round_trip_ours_pandas_and_row_groups(tmp_path, recording_context):
    cols = _columns(1000)
    table = read_log(write_parquet(tmp_path / "a.parquet", cols))
    for name, values in cols.items():
        np.testing.assert_array_equal(table[name], values)
    df = pd.DataFrame(cols)
    df["count"] = np.arange(1000, dtype=np.int32)
    df["flag"] = df["count"] % 2 == 0
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "b.parquet", row_group_size=100)
    ctx = recording_context()
    table = read_log(tmp_path / "b.parquet", ctx)
    np.testing.assert_array_equal(table["count"], np.arange(1000))
    np.testing.assert_array_equal(table["flag"], (np.arange(1000) % 2 == 0).astype(float))
    assert len(ctx.updates) >= 10  # one per row group


def test_parquet_timestamps_become_seconds(tmp_path):
    stamps = pd.to_datetime([0, 10, 25], unit="ms")
    pq.write_table(pa.table({"stamp": pa.array(stamps, type=pa.timestamp("ms")), "x": [1.0, None, 3.0]}),
                   tmp_path / "s.parquet")
    table = read_log(tmp_path / "s.parquet")
    np.testing.assert_allclose(table["stamp"], [0, 0.010, 0.025])
    np.testing.assert_array_equal(table["x"], [1, np.nan, 3])


def test_write_log_by_suffix(tmp_path):
    cols = _columns(10)
    for suffix in (".csv", ".tsv", ".npz", ".parquet"):
        table = read_log(write_log(tmp_path / f"x{suffix}", LogTable(list(cols), cols)))
        np.testing.assert_array_equal(table.to_array(), np.stack(list(cols.values()), 1))


def _write_bag(path, kind):
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.rosbag2 import Writer as Writer2
    from rosbags.rosbag2.enums import StoragePlugin
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if kind == "ros1" else Stores.ROS2_HUMBLE)
    JointState = store.types["sensor_msgs/msg/JointState"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    Float64 = store.types["std_msgs/msg/Float64"]
    serialize = store.serialize_ros1 if kind == "ros1" else store.serialize_cdr
    if kind == "ros1":
        writer = Writer1(path)
    else:
        writer = Writer2(path, version=9,
                         storage_plugin=StoragePlugin.MCAP if kind == "mcap" else StoragePlugin.SQLITE3)
    pos = np.array([[0.1 * i, -0.2 * i] for i in range(6)])
    with writer:
        js = writer.add_connection("/joint_states", JointState.__msgtype__, typestore=store)
        cmd = writer.add_connection("/cmd", Float64.__msgtype__, typestore=store)
        for i in range(6):
            stamp = Time(sec=1_700_000_000 + i, nanosec=250_000_000)
            header = (
                Header(seq=i, stamp=stamp, frame_id="")
                if kind == "ros1"
                else Header(stamp=stamp, frame_id="")
            )
            msg = JointState(
                header=header,
                name=["shoulder", "elbow"],
                position=pos[i],
                velocity=np.array([1.0, 2.0]),
                effort=np.array([], dtype=np.float64),
            )
            writer.write(js, (1_700_000_000 + i) * 10**9, serialize(msg, JointState.__msgtype__))
            writer.write(cmd, (1_700_000_000 + i) * 10**9 + 5 * 10**8, serialize(Float64(data=0.5 * i),
                                                                                 Float64.__msgtype__))
    return pos


@pytest.mark.parametrize("kind", ["ros1", "ros2", "mcap"])
def test_ros_bags_flatten_joint_states(tmp_path, kind):
    path = tmp_path / ("run.bag" if kind == "ros1" else f"run_{kind}")
    pos = _write_bag(path, kind)
    if kind == "mcap":
        path = next(path.glob("*.mcap"))  # the bare .mcap file, without metadata.yaml
    table = read_log(path)
    assert table.sparse
    js = np.isfinite(table["/joint_states/t"])
    np.testing.assert_array_equal(table["/joint_states/position/shoulder"][js], pos[:, 0])
    np.testing.assert_array_equal(table["/joint_states/position/elbow"][js], pos[:, 1])
    np.testing.assert_array_equal(table["/joint_states/velocity/elbow"][js], 2.0)
    np.testing.assert_allclose(table["t"], np.arange(12) * 0.5)  # s since the first message
    np.testing.assert_allclose(table["/joint_states/header/stamp"][js], np.arange(6) + 0.25)
    cmd = np.isfinite(table["/cmd/t"])
    np.testing.assert_array_equal(table["/cmd/data"][cmd], 0.5 * np.arange(6))
    assert not np.any(cmd & js)
    one = read_log(path, options=ReadOptions(topics=["/cmd"]))
    assert not one.sparse and one.n_rows == 6


def test_ros2_bag_folder_reads(tmp_path):
    path = tmp_path / "folder_bag"
    _write_bag(path, "ros2")
    assert read_log(path).n_rows == 12


def test_json_mcap_round_trip(tmp_path):
    from mcap.writer import Writer

    path = tmp_path / "foxglove.mcap"
    with open(path, "wb") as fh:
        writer = Writer(fh)
        writer.start()
        schema = writer.register_schema("Pose", "jsonschema", b"{}")
        channel = writer.register_channel("/pose", "json", schema)
        for i in range(5):
            payload = {"timestamp": {"sec": 10 + i, "nsec": 0}, "position": {"x": 0.5 * i, "y": -1.0},
                       "joints": {"name": ["a", "b"], "position": [i, 2 * i]}, "label": "car"}
            writer.add_message(channel, log_time=(10 + i) * 10**9, data=json.dumps(payload).encode(),
                               publish_time=(10 + i) * 10**9)
        writer.finish()
    table = read_log(path)
    assert not table.sparse
    np.testing.assert_array_equal(table["/pose/position/x"], 0.5 * np.arange(5))
    np.testing.assert_array_equal(table["/pose/joints/position/b"], 2 * np.arange(5))
    np.testing.assert_array_equal(table["/pose/timestamp"], np.arange(5))  # on the origin of t
    np.testing.assert_array_equal(table["t"], np.arange(5))


def test_parser_without_pandas_gives_the_same_table(tmp_path, monkeypatch):
    import builtins

    text = '# c\nt;"a b";c\n0,5;1;\n1,5;2;NaN\n\n2,5;3;4\n'
    path = tmp_path / "eu.csv"
    path.write_text(text)
    with_pandas = read_log(path)
    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    without = read_log(path)
    assert without.columns == with_pandas.columns == ["t", "a b", "c"]
    np.testing.assert_array_equal(without.to_array(), with_pandas.to_array())
    np.testing.assert_array_equal(without.row_lines, [3, 4, 6])
    path.write_text("t,x\n1,2\n3,zz\n")
    with pytest.raises(LogError) as info:
        read_log(path)
    assert (info.value.line, info.value.column) == (3, "x")


def test_bag_to_prepared_log_end_to_end(tmp_path, capsys):
    """A multi-rate ROS 1 bag: joint states at 100 Hz, a command at 20 Hz, prepared on one grid."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    from engine.cli import main
    from engine.logs import LogMapping, PrepareConfig, prepare_log

    store = get_typestore(Stores.ROS1_NOETIC)
    JointState, Float64 = store.types["sensor_msgs/msg/JointState"], store.types["std_msgs/msg/Float64"]
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    path = tmp_path / "arm.bag"
    t0 = 1_700_000_000 * 10**9
    with Writer(path) as writer:
        js = writer.add_connection("/joint_states", JointState.__msgtype__, typestore=store)
        cmd = writer.add_connection("/cmd", Float64.__msgtype__, typestore=store)
        for i in range(300):  # 3 s at 100 Hz
            t = i * 0.01
            msg = JointState(header=Header(seq=i, stamp=Time(sec=0, nanosec=0), frame_id=""), name=["j"],
                             position=np.array([np.sin(t)]), velocity=np.array([np.cos(t)]),
                             effort=np.array([], dtype=np.float64))
            writer.write(js, t0 + i * 10**7, store.serialize_ros1(msg, JointState.__msgtype__))
        for i in range(60):  # 3 s at 20 Hz, offset by 3 ms
            t = i * 0.05 + 0.003
            writer.write(
                cmd, t0 + round(t * 1e9), store.serialize_ros1(Float64(data=2 * t), Float64.__msgtype__)
            )
    table = read_log(path)
    mapping = LogMapping(
        time="t", q=["/joint_states/position/j"], qd=["/joint_states/velocity/j"], u=["/cmd/data"]
    )
    p = prepare_log(table, mapping, PrepareConfig(dt=0.01, smooth=False))
    assert p.t[0] == pytest.approx(0.003) and p.t[-1] <= 2.953 + 1e-9
    np.testing.assert_allclose(p.u[:, 0], 2 * p.t, atol=1e-9)
    np.testing.assert_allclose(p.q[:, 0], np.sin(p.t), atol=2e-5)
    np.testing.assert_allclose(p.qd[:, 0], np.cos(p.t), atol=2e-5)
    assert main(["logs", "inspect", str(path), "--topics", "/cmd", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 60 and out["format"] == "ros1" and abs(out["rate_hz"] - 20) < 1e-6
