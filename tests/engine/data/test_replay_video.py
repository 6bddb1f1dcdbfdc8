"""Replay videos drawn off screen (engine/data/replay_video.py), read back with imageio."""

from __future__ import annotations

import imageio.v2 as iio
import numpy as np
import pytest

from engine.data.log_replay import LogReplay, rollout_ghost
from engine.data.replay_video import VideoOptions, frame_times, write_frames, write_replay_video
from engine.robots.library import load_robot


@pytest.fixture(scope="module")
def panda_replay():
    robot = load_robot("panda")
    t = np.arange(0, 1.0, 0.01)
    q = np.zeros((t.size, 7))
    q[:, 0] = 1.5 * t            # the arm turns about its base for the first half second, then rests
    q[t > 0.5, 0] = 0.75
    q[:, 3] = -1.5
    replay = LogReplay(
        t=t,
        q=q,
        qd=np.gradient(q, t, axis=0),
        tau=np.zeros_like(q),
        u=np.zeros((t.size, 0)),
        base=None,
        joint_names=robot.joint_names,
        mapped=np.ones(7, bool),
        source="synthetic.csv",
    )
    return robot, replay


def test_mp4_frame_count_and_size(tmp_path, panda_replay):
    robot, replay = panda_replay
    options = VideoOptions(fps=20, start=0.1, end=0.8, width=320, height=240)
    info = write_replay_video(tmp_path / "r.mp4", robot, replay, options)
    expected = len(frame_times(replay, options))
    assert expected == 15 and info["frames"] == expected     # 0.1, 0.15, ..., 0.8
    reader = iio.get_reader(tmp_path / "r.mp4")
    assert reader.count_frames() == expected
    assert reader.get_meta_data()["size"] == (320, 240)
    assert reader.get_meta_data()["fps"] == pytest.approx(20)
    frames = [reader.get_data(i).astype(float) for i in (0, 3, 12, 13)]
    # the arm moves until 0.5 s, then rests: early frames differ, late ones only by the time label
    assert np.abs(frames[0] - frames[1]).mean() > np.abs(frames[2] - frames[3]).mean()


def test_gif_with_ghost_and_atomic_write(tmp_path, panda_replay):
    robot, replay = panda_replay
    ghost = rollout_ghost(robot, replay, 0.0, 0.3)
    info = write_replay_video(
        tmp_path / "r.gif", robot, replay, VideoOptions(fps=10, end=0.3, width=160, height=128), ghost=ghost
    )
    frames = iio.mimread(tmp_path / "r.gif")
    assert len(frames) == info["frames"] == 4 and frames[0].shape[:2] == (128, 160)
    assert [p.name for p in tmp_path.iterdir()] == ["r.gif"]          # no temporary file left
    with pytest.raises(ValueError, match=".mp4 or .gif"):
        write_frames(tmp_path / "r.avi", [np.zeros((16, 16, 3), np.uint8)], 10)
    with pytest.raises(ValueError, match="empty"):
        frame_times(replay, VideoOptions(start=5.0))
