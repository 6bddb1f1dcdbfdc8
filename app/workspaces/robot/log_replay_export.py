"""The log replay's video export, without making the UI thread wait.

The 3D view can only be grabbed on the UI thread, so the work is split in two:

- a ``QTimer`` on the UI thread renders frames in short slices (about 25 ms of rendering a
  tick, at least one frame) into a bounded queue; when the queue is full it skips the tick,
  so the event loop keeps running whatever the encoder's speed;
- a job on the app's job runner (``app/jobs.py``) takes the frames from the queue and encodes
  them (:func:`engine.data.replay_video.write_frames`: a temporary file, renamed over the
  target only when the encoder succeeded), reporting progress and honouring cancel.

Progress (fraction and an estimate of the time left) comes from the job; ``cancel()`` stops
both halves, and leaves no partial file and any older file at the target as it was.
"""

from __future__ import annotations

import queue
import time

import numpy as np
from PySide6.QtCore import QElapsedTimer, QObject, QTimer, Signal

from engine.jobs import JobCancelled

__all__ = ["VideoExport", "eta_text", "fit_frame"]

SLICE_MS = 25          # rendering per timer tick, then back to the event loop
QUEUE_FRAMES = 8       # frames rendered ahead of the encoder


def eta_text(fraction: float, elapsed_s: float) -> str:
    """``"40 %, about 3 s left"`` from the fraction done and the seconds so far."""
    pct = f"{100 * fraction:.0f} %"
    if not 0 < fraction < 1 or elapsed_s <= 0:
        return pct
    left = elapsed_s * (1 - fraction) / fraction
    if left < 60:
        return f"{pct}, about {max(left, 1):.0f} s left"
    return f"{pct}, about {left / 60:.0f} min left"


def fit_frame(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``frame`` (H, W, 3) cropped or padded (black, bottom and right) to ``size`` (H, W): the
    window may be resized while the export runs, the video keeps its first frame's size."""
    h, w = size
    if frame.shape[:2] == (h, w):
        return frame
    out = np.zeros((h, w, frame.shape[2]), frame.dtype)
    hh, ww = min(h, frame.shape[0]), min(w, frame.shape[1])
    out[:hh, :ww] = frame[:hh, :ww]
    return out


class VideoExport(QObject):
    """One export of ``render(t)`` frames at ``times`` (s of log time) to ``path`` at ``fps``.

    ``render(t) -> (H, W, 3) uint8`` runs on the UI thread. Signals: ``progressed(fraction,
    text)`` (text with the time left), ``ended(info_or_None, message)`` once (``info`` from
    ``write_frames`` when it worked; None and the reason when it failed or was cancelled).
    ``fractions`` keeps every progress fraction reported, ``result`` the info.
    """

    progressed = Signal(float, str)
    ended = Signal(object, str)

    def __init__(self, jobs, render, times: np.ndarray, path: str, fps: float, parent: QObject | None = None):
        super().__init__(parent)
        self._jobs, self._render = jobs, render
        self.times, self.path, self.fps = np.asarray(times, float), str(path), float(fps)
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self._next = 0                 # the next frame to render
        self._sent_end = False
        self._size: tuple[int, int] | None = None   # the first frame's (H, W): the video's size
        self._stopped = False
        self.handle = None
        self.result: dict | None = None
        self.message = ""
        self.fractions: list[float] = []
        self.done = False
        self._clock = QElapsedTimer()
        self._timer = QTimer(self, interval=0)
        self._timer.timeout.connect(self._render_slice)

    # ------------------------------------------------------------------ control
    def start(self) -> VideoExport:
        from engine.data.replay_video import write_frames

        q, path, fps, total, stopped = (
            self._queue,
            self.path,
            self.fps,
            len(self.times),
            lambda: self._stopped,
        )

        def frames(ctx):
            while True:
                try:
                    frame = q.get(timeout=0.05)
                except queue.Empty:
                    ctx.check_cancelled()
                    if stopped():
                        raise JobCancelled("cancelled") from None
                    continue
                if frame is None:
                    return
                yield frame

        def job(ctx):
            return write_frames(path, frames(ctx), fps, total=total, ctx=ctx)

        self._clock.start()
        self.handle = self._jobs.submit(job, name=f"export video {path}", on_result=self._on_result,
                                        on_error=self._on_error, on_progress=self._on_progress,
                                        on_cancelled=self._on_cancelled)
        self._timer.start()
        return self

    def cancel(self) -> None:
        """Stop rendering and encoding; the target keeps whatever file it had."""
        self._stopped = True
        self._timer.stop()
        if self.handle is not None:
            self.handle.cancel()

    @property
    def running(self) -> bool:
        return not self.done

    # ------------------------------------------------------------------ UI thread: frames in slices
    def _render_slice(self) -> None:
        if self._stopped:
            self._timer.stop()
            return
        started = time.perf_counter()
        while self._next < len(self.times):
            if self._queue.full():
                return              # the encoder is behind: come back on a later tick
            frame = self._render(float(self.times[self._next]))
            if self._size is None:
                self._size = frame.shape[:2]
            self._queue.put_nowait(fit_frame(frame, self._size))
            self._next += 1
            if (time.perf_counter() - started) * 1000 >= SLICE_MS:
                return
        try:
            self._queue.put_nowait(None)   # the end of the clip
        except queue.Full:
            return
        self._sent_end = True
        self._timer.stop()

    # ------------------------------------------------------------------ the job's end
    def _on_progress(self, update) -> None:
        if update.fraction is None:
            return
        fraction = min(max(float(update.fraction), 0.0), 1.0)
        self.fractions.append(fraction)
        self.progressed.emit(fraction, eta_text(fraction, self._clock.elapsed() / 1000))

    def _on_result(self, info: dict) -> None:
        if not self.fractions or self.fractions[-1] < 1.0:
            self.fractions.append(1.0)
            self.progressed.emit(1.0, eta_text(1.0, self._clock.elapsed() / 1000))
        self._finish(info, f"Wrote {info['path']}: {info['frames']} frames at {self.fps:g} fps")

    def _on_error(self, message: str, _tb: str) -> None:
        self._finish(None, f"No video written: {message}")

    def _on_cancelled(self) -> None:
        self._finish(None, "No video written: cancelled (any earlier file there is unchanged)")

    def _finish(self, info: dict | None, message: str) -> None:
        self._stopped = True
        self._timer.stop()
        while not self._queue.empty():   # drop frames the encoder will never take
            self._queue.get_nowait()
        self.result, self.message, self.done = info, message, True
        self.ended.emit(info, message)
