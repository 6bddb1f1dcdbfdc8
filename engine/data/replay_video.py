"""A log replay as a video: frames drawn off screen with matplotlib's Agg backend (no Qt, no
display), written as MP4 (imageio-ffmpeg; the ffmpeg binary ships in its wheel) or GIF.

The robot is drawn as its kinematic skeleton: a line from each link's frame to its child's
(every joint, fixed ones included), a dot at each joint and the x/y/z axes (red/green/blue)
of the moving links' frames; an optional model ghost is drawn dashed and translucent. The
camera and the axes' limits stay fixed over the clip; the time is written in a corner.

``write_frames`` is also what the app's export uses for frames grabbed from its 3D view.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol, cast

import numpy as np

from engine.data.log_replay import GhostRollout, LogReplay
from engine.io import DiskFullError, disk_full_as_error, publish_file
from engine.robots.model import RobotModel

if TYPE_CHECKING:
    from mpl_toolkits.mplot3d.axes3d import Axes3D

__all__ = [
    "VideoOptions",
    "VideoWriteError",
    "frame_times",
    "render_frames",
    "write_frames",
    "write_replay_video",
]

VIDEO_SUFFIXES = (".mp4", ".gif")


@dataclass
class VideoOptions:
    """``fps`` frames per second of the video (frames are taken at this rate of log time,
    times ``speed``); ``start``/``end`` the clip in log seconds (None: the whole log);
    ``width``/``height`` in pixels (multiples of 16 keep ffmpeg from resizing)."""

    fps: float = 30.0
    start: float | None = None
    end: float | None = None
    width: int = 640
    height: int = 480
    speed: float = 1.0
    elev: float = 20.0
    azim: float = -60.0

    def validate(self) -> None:
        if not self.fps > 0:
            raise ValueError(f"--fps must be positive, got {self.fps}")
        if not self.speed > 0:
            raise ValueError(f"--speed must be positive, got {self.speed}")
        if self.width < 64 or self.height < 64:
            raise ValueError(f"the frame size {self.width}x{self.height} is too small (at least 64x64)")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"--end ({self.end}) must be after --start ({self.start})")


def frame_times(replay: LogReplay, options: VideoOptions) -> np.ndarray:
    """Log times of the frames: from start to end every ``speed / fps`` seconds."""
    t0 = replay.t[0] if options.start is None else max(float(options.start), replay.t[0])
    t1 = replay.t[-1] if options.end is None else min(float(options.end), replay.t[-1])
    if t1 <= t0:
        raise ValueError(f"the clip {t0:.3f} .. {t1:.3f} s is empty; the log runs "
                         f"{replay.t[0]:.3f} .. {replay.t[-1]:.3f} s")
    step = options.speed / options.fps
    return t0 + step * np.arange(int(np.floor((t1 - t0) / step + 1e-9)) + 1)


def _segments(robot: RobotModel) -> list[tuple[int, int]]:
    index = {name: i for i, name in enumerate(robot.link_names)}
    return [(index[j.parent], index[j.child]) for j in robot.description.joints
            if j.parent in index and j.child in index]


def render_frames(
    robot: RobotModel,
    replay: LogReplay,
    times: np.ndarray,
    options: VideoOptions | None = None,
    ghost: GhostRollout | None = None,
    title: str = "",
) -> Iterator[np.ndarray]:
    """Frames (height, width, 3) uint8 of the replay at ``times`` (a generator)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    options = options or VideoOptions()
    poses = replay.link_poses(robot, times)                     # (F, L, 4, 4)
    ghost_poses = None
    if ghost is not None:
        base = None if replay.base is None else replay.sample(ghost.t, "base")     # at the logged base
        g = LogReplay(t=ghost.t, q=ghost.q, qd=ghost.qd, tau=None, u=np.zeros((ghost.t.size, 0)), base=base,
                      joint_names=replay.joint_names, mapped=replay.mapped)
        ghost_poses = g.link_poses(robot, np.clip(times, ghost.t[0], ghost.t[-1]))
    pts = poses[:, :, :3, 3]
    lo, hi = pts.reshape(-1, 3).min(0), pts.reshape(-1, 3).max(0)
    centre, half = (lo + hi) / 2, max(float((hi - lo).max()) / 2, 0.05) * 1.1
    axis_len = half * 0.12
    segs = _segments(robot)
    moving = sorted({c for _, c in segs} & {robot.link_names.index(j.child) for j in robot.description.joints
                                            if j.movable})
    fig = Figure(figsize=(options.width / 100, options.height / 100), dpi=100)
    canvas = FigureCanvasAgg(fig)
    ax = cast("Axes3D", fig.add_axes((0, 0, 1, 0.94), projection="3d"))
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.view_init(elev=options.elev, azim=options.azim)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    bones = [ax.plot([], [], [], color="#3a6ea5", lw=3.5, solid_capstyle="round")[0] for _ in segs]
    dots = ax.plot([], [], [], "o", color="#1d3557", ms=4)[0]
    triads = [
        [ax.plot([], [], [], color=c, lw=1.2)[0] for c in ("#d62828", "#2a9d8f", "#1d4ed8")] for _ in moving
    ]
    ghost_bones = [ax.plot([], [], [], color="#f4a261", lw=3, alpha=0.45, ls="--")[0] for _ in segs] \
        if ghost_poses is not None else []
    label = fig.text(0.02, 0.96, "", fontsize=11, family="monospace")
    fig.text(0.98, 0.96, title, fontsize=9, ha="right")
    for f, t in enumerate(times):
        P = poses[f]
        for line, (a, b) in zip(bones, segs):
            line.set_data_3d(*np.stack([P[a, :3, 3], P[b, :3, 3]], 1))
        dots.set_data_3d(*P[[b for _, b in segs], :3, 3].T) if segs else None
        for lines, l in zip(triads, moving):
            o = P[l, :3, 3]
            for k, line in enumerate(lines):
                line.set_data_3d(*np.stack([o, o + axis_len * P[l, :3, k]], 1))
        if ghost_poses is not None:
            G = ghost_poses[f]
            for line, (a, b) in zip(ghost_bones, segs):
                line.set_data_3d(*np.stack([G[a, :3, 3], G[b, :3, 3]], 1))
        label.set_text(f"t = {t:7.3f} s")
        canvas.draw()
        yield np.asarray(canvas.buffer_rgba())[..., :3].copy()


class VideoWriteError(ValueError):
    """The encoder could not write the video (the message gives its reason); the file that was
    at the target path, if any, is left as it was."""


class _GifWriter(Protocol):
    """imageio's GIF writer, as used here."""

    def append_data(self, frame: np.ndarray) -> None: ...

    def close(self) -> None: ...


class _FfmpegPipe:
    """ffmpeg (imageio-ffmpeg's binary) encoding raw RGB frames from a pipe to H.264 MP4, with
    its exit status and its error output checked: imageio's writer ignores both, so a disk that
    fills while the trailer is written would pass as a good video."""

    def __init__(self, path: str, width: int, height: int, fps: float):
        import subprocess

        import imageio_ffmpeg

        self.path = path
        self.log = tempfile.TemporaryFile()
        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "rawvideo",
               "-vcodec", "rawvideo", "-s", f"{width}x{height}", "-pix_fmt", "rgb24", "-r", f"{fps:.6g}",
               "-i", "-", "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p", "-crf", "15",
               "-movflags", "+faststart", "-f", "mp4", path]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log)

    def append(self, frame: np.ndarray) -> None:
        try:
            cast(IO[bytes], self.proc.stdin).write(frame.tobytes())
        except (BrokenPipeError, OSError):   # ffmpeg stopped: its own reason is in its log
            self.close()
            raise VideoWriteError("the video encoder stopped before the last frame") from None

    def close(self) -> None:
        """Finish the video; :class:`VideoWriteError` (or DiskFullError) when ffmpeg failed."""
        import contextlib

        with contextlib.suppress(OSError):
            cast(IO[bytes], self.proc.stdin).close()
        code = self.proc.wait()
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace").strip()
        self.log.close()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        failed = code != 0 or any(line.lower().startswith("error") or "error writing" in line.lower()
                                  for line in lines)
        if not failed:
            return
        if "no space left" in text.lower() or "quota exceeded" in text.lower():
            raise DiskFullError(Path(self.path).parent, _written(self.path) or None,
                                "the video did not fit")
        reason = lines[-1] if lines else f"ffmpeg exited with status {code}"
        raise VideoWriteError(f"the video encoder failed: {reason}")

    def kill(self) -> None:
        import contextlib

        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def _written(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def write_frames(path: str | os.PathLike, frames: Iterable[np.ndarray], fps: float, total: int | None = None,
                 ctx=None) -> dict:
    """Write RGB frames (H, W, 3) uint8 as ``.mp4`` (H.264, yuv420p) or ``.gif``; atomic
    (a temporary file, then a rename, only once the encoder has finished without an error).
    Returns ``{"path", "frames", "width", "height", "fps"}``.

    A full disk raises :class:`engine.io.DiskFullError`, an encoder failure
    :class:`VideoWriteError` and a cancel :class:`engine.jobs.JobCancelled`; in each case the
    file that was at ``path`` stays as it was and no temporary file is left. The video gets
    the permissions of any new file (the umask's), not the temporary file's 0600.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ValueError(f"{path}: a video is .mp4 or .gif, not {suffix or 'no suffix'!r}")
    with disk_full_as_error(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=suffix, prefix=f".{path.stem}.", dir=path.parent)
    os.close(fd)
    count = 0
    size: tuple[int, ...] | None = None
    writer: _FfmpegPipe | _GifWriter | None = None
    try:
        with disk_full_as_error(path.parent):
            for frame in frames:
                if ctx is not None and count % 5 == 0:
                    ctx.check_cancelled()
                    ctx.progress(count / total if total else None,
                                 f"frame {count + 1}" + (f"/{total}" if total else ""))
                frame = np.ascontiguousarray(frame[..., :3], dtype=np.uint8)
                if size is None:
                    size = frame.shape[:2]
                    if suffix == ".mp4" and (size[0] % 2 or size[1] % 2):
                        raise ValueError(f"an MP4 frame needs an even size, got {size[1]}x{size[0]}")
                    writer = _open_writer(tmp, suffix, size, fps)
                elif frame.shape[:2] != size:
                    raise ValueError(f"frame {count + 1} is {frame.shape[1]}x{frame.shape[0]}, the first "
                                     f"was {size[1]}x{size[0]}; every frame of a video has one size")
                (cast(_FfmpegPipe, writer).append(frame) if suffix == ".mp4"   # set at the first frame
                 else cast(_GifWriter, writer).append_data(frame))
                count += 1
            if count == 0:
                raise ValueError("no frames to write")
            finished, writer = writer, None
            cast("_FfmpegPipe | _GifWriter", finished).close()
            if _written(tmp) == 0:
                raise VideoWriteError("the video encoder wrote nothing")
            publish_file(tmp, path)
    finally:
        if writer is not None:   # stopped early (an error, a cancel): the encoder goes, its file too
            if isinstance(writer, _FfmpegPipe):
                writer.kill()
            else:
                import contextlib

                with contextlib.suppress(Exception):
                    writer.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
    if ctx is not None:
        ctx.progress(1.0, f"wrote {path.name}")
    return {
        "path": str(path),
        "frames": count,
        "width": int(cast("tuple[int, ...]", size)[1]),
        "height": int(cast("tuple[int, ...]", size)[0]),
        "fps": float(fps),
    }


def _open_writer(tmp: str, suffix: str, size: tuple[int, ...], fps: float) -> _FfmpegPipe | _GifWriter:
    if suffix == ".mp4":
        return _FfmpegPipe(tmp, int(size[1]), int(size[0]), float(fps))
    import imageio.v2 as iio

    return iio.get_writer(tmp, format="GIF", mode="I", duration=1000.0 / float(fps), loop=0)


def write_replay_video(
    path: str | os.PathLike,
    robot: RobotModel,
    replay: LogReplay,
    options: VideoOptions | None = None,
    ctx=None,
    ghost: GhostRollout | None = None,
) -> dict:
    """Render the replay off screen and write it to ``path`` (.mp4 or .gif); a job-friendly call."""
    options = options or VideoOptions()
    options.validate()
    if options.width % 2 or options.height % 2:
        raise ValueError(f"the frame size must be even, got {options.width}x{options.height}")
    times = frame_times(replay, options)
    title = f"{robot.name} - {Path(replay.source).name}" if replay.source else robot.name
    frames = render_frames(robot, replay, times, options, ghost=ghost, title=title)
    return write_frames(path, frames, options.fps, total=len(times), ctx=ctx)
