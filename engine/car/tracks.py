"""Race tracks: a closed centre line with a width, and fast differentiable track coordinates.

A track is loaded from CSV (columns ``x, y`` and optionally ``width``, metres; ``#`` comments)
or JSON (``{"kind": "car_track", "name", "centre": [[x, y], ...], "width"}``). The centre
line is resampled uniformly; the arc length ``s`` along it and the signed lateral offset ``d``
(positive to the left) of every point of a grid covering the track are precomputed, so that
:meth:`TrackField.coordinates` is a bilinear lookup (``grid_sample``): batched, differentiable
and O(1) per point. ``s`` is stored as the angle ``2 pi s / length`` (cos, sin) so it wraps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine import io
from engine.paths import resource
from engine.validation import InputError, check_allocation, check_file_size, check_range

__all__ = [
    "MAX_TRACK_EXTENT",
    "MAX_TRACK_FILE_BYTES",
    "MAX_TRACK_LENGTH",
    "MAX_TRACK_POINTS",
    "MAX_TRACK_WIDTH",
    "MIN_TRACK_WIDTH",
    "Track",
    "TrackError",
    "TrackField",
    "default_track",
    "load_track",
    "save_track",
    "track_names",
]


class TrackError(ValueError):
    """A track file that cannot be used; the message names the file / line / field."""


# The limits of a track, one source for track files, sessions, drawn tracks and the app's width
# control. TrackField covers the track with a grid of 4 cm cells and resamples the centre line
# every 5 mm, so the extent and the length bound its memory and time (the grid is also checked
# against the memory budget); a file is refused by its size before it is parsed.
MAX_TRACK_POINTS = 5000
MAX_TRACK_EXTENT = 100.0        # m, each side of the centre line's bounding box
MAX_TRACK_COORDINATE = 1000.0   # m, |x| and |y| (the grid is float32)
MAX_TRACK_LENGTH = 1000.0       # m
MIN_TRACK_WIDTH = 0.05          # m
MAX_TRACK_WIDTH = 10.0          # m
MAX_TRACK_FILE_BYTES = 10 << 20
MIN_ROUNDNESS = 1e-3            # 4 pi area / length^2 (1 for a circle, 0 for points on a line)


@dataclass
class Track:
    """A closed centre line ``centre`` (M, 2) in m and a constant ``width`` in m.

    Checked on construction (:class:`TrackError` naming the problem): 4 to
    :data:`MAX_TRACK_POINTS` finite points within the size limits, no two consecutive points
    the same, a line that does not cross or touch itself and encloses an area (not collinear),
    longer than pi times the width (so the inner edge can go round).
    """

    name: str
    centre: np.ndarray
    width: float

    def __post_init__(self):
        self.centre = check_centre_line(self.name, self.centre, self.width)

    @classmethod
    def from_dict(cls, data, source: str = "track") -> Track:
        """A track from its JSON object (``name``, ``centre`` [[x, y], ...], ``width``);
        :class:`TrackError` starting with ``source`` otherwise. Sizes are checked first."""
        if not isinstance(data, dict) or "centre" not in data:
            raise TrackError(f"{source}: not a track (needs field 'centre')")
        centre, name = data["centre"], data.get("name", "track")
        if not isinstance(centre, list) or not all(isinstance(p, list) and len(p) == 2 for p in centre):
            raise TrackError(f"{source}: field 'centre' must be a list of [x, y] points")
        if len(centre) > MAX_TRACK_POINTS:
            raise TrackError(f"{source}: field 'centre' has {len(centre)} points, at most {MAX_TRACK_POINTS} "
                             "are allowed")
        if not isinstance(name, str) or len(name) > 200:
            raise TrackError(f"{source}: field 'name' must be text of at most 200 characters")
        try:
            width = check_range(
                None, "width", data.get("width", 1.0), MIN_TRACK_WIDTH, MAX_TRACK_WIDTH, unit="m"
            )
            points = np.asarray([[_number(v) for v in p] for p in centre], dtype=float).reshape(-1, 2)
            return cls(name, points, width)
        except (TypeError, ValueError) as exc:
            raise TrackError(f"{source}: {exc}") from None

    @property
    def length(self) -> float:
        d = np.diff(np.vstack([self.centre, self.centre[:1]]), axis=0)
        return float(np.hypot(d[:, 0], d[:, 1]).sum())

    def resampled(self, spacing: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """Uniform points (K, 2) along the closed centre line and their arc lengths (K,)."""
        pts = np.vstack([self.centre, self.centre[:1]])
        seg = np.hypot(*np.diff(pts, axis=0).T)
        s = np.concatenate([[0.0], np.cumsum(seg)])
        k = max(8, int(math.ceil(s[-1] / spacing)))
        sq = np.linspace(0.0, s[-1], k, endpoint=False)
        return np.stack([np.interp(sq, s, pts[:, 0]), np.interp(sq, s, pts[:, 1])], -1), sq

    def start_pose(self) -> tuple[float, float, float]:
        """The first centre-line point, heading along the track."""
        p, _ = self.resampled()
        d = p[1] - p[0]
        return float(p[0, 0]), float(p[0, 1]), float(math.atan2(d[1], d[0]))

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Left and right borders (K, 2) for drawing."""
        p, _ = self.resampled()
        t = np.roll(p, -1, 0) - np.roll(p, 1, 0)
        t /= np.linalg.norm(t, axis=1, keepdims=True)
        n = np.stack([-t[:, 1], t[:, 0]], -1)
        return p + n * self.width / 2, p - n * self.width / 2

    def to_dict(self) -> dict:
        return {"kind": "car_track", "name": self.name, "centre": self.centre.tolist(), "width": self.width}


def _number(v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TrackError(f"field 'centre': {str(v)[:40]!r} is not a number")
    return float(v)


def check_centre_line(name: str, centre, width: float) -> np.ndarray:
    """The closed centre line (M, 2) of a track named ``name`` as floats, without a repeated
    closing point; :class:`TrackError` (one line: what is wrong and where) for a line the
    planner and the MPC cannot use."""
    who = f"track {str(name)[:40]!r}"
    try:
        check_range(who, "width", width, MIN_TRACK_WIDTH, MAX_TRACK_WIDTH, unit="m")
    except InputError as exc:
        raise TrackError(str(exc)) from None
    try:
        c = np.asarray(centre, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise TrackError(f"{who}: the centre line must be a list of [x, y] numbers") from None
    if c.ndim != 2 or c.shape[1] != 2 or len(c) < 4:
        raise TrackError(f"{who}: the centre line must have at least 4 points [x, y]")
    if len(c) > MAX_TRACK_POINTS:
        raise TrackError(
            f"{who}: the centre line has {len(c)} points, at most {MAX_TRACK_POINTS} are allowed"
        )
    if not np.isfinite(c).all():
        raise TrackError(f"{who}: the centre line has NaN or infinite coordinates")
    if np.abs(c).max() > MAX_TRACK_COORDINATE:
        raise TrackError(f"{who}: coordinates must be within +-{MAX_TRACK_COORDINATE:g} m of the origin")
    extent = c.max(0) - c.min(0)
    if extent.max() > MAX_TRACK_EXTENT:
        raise TrackError(f"{who}: the track spans {extent.max():.4g} m, at most {MAX_TRACK_EXTENT:g} m "
                         "(are the coordinates in metres?)")
    if np.hypot(*(c[0] - c[-1])) < 1e-9:
        c = c[:-1]
    seg = np.hypot(*np.diff(np.vstack([c, c[:1]]), axis=0).T)
    if len(c) < 3 or seg.sum() < 1e-9:
        raise TrackError(f"{who}: the centre line has zero length (its points are all the same)")
    same = np.flatnonzero(seg < 1e-9)
    if same.size:
        i = int(same[0])
        raise TrackError(f"{who}: points {i + 1} and {(i + 1) % len(c) + 1} are the same; remove one of them")
    length = float(seg.sum())
    if length > MAX_TRACK_LENGTH:
        raise TrackError(f"{who}: the centre line is {length:.4g} m long, at most {MAX_TRACK_LENGTH:g} m")
    spread = np.linalg.svd(c - c.mean(0), compute_uv=False)
    if spread[1] <= 1e-9 * spread[0]:
        raise TrackError(
            f"{who}: all points of the centre line lie on one line; a track must go round a loop"
        )
    d_in, d_out = c - np.roll(c, 1, 0), np.roll(c, -1, 0) - c
    cross = d_in[:, 0] * d_out[:, 1] - d_in[:, 1] * d_out[:, 0]
    dot = (d_in * d_out).sum(1)
    back = np.flatnonzero((np.abs(cross) <= 1e-9 * np.hypot(*d_in.T) * np.hypot(*d_out.T)) & (dot < 0))
    if back.size:
        raise TrackError(f"{who}: the centre line turns straight back on itself at point {int(back[0]) + 1}")
    crossing = _first_crossing(c)
    if crossing is not None:
        i, j = crossing
        raise TrackError(f"{who}: the centre line crosses or touches itself (segment {i + 1}-{i + 2} meets "
                         f"segment {j + 1}-{(j + 1) % len(c) + 1}); a track must be a simple loop, not a "
                         "figure eight")
    x, y = c[:, 0], c[:, 1]
    area = 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    if 4 * math.pi * area / length**2 < MIN_ROUNDNESS:
        raise TrackError(
            f"{who}: the centre line encloses (almost) no area: its points lie (nearly) on one line"
        )
    if length < math.pi * width:
        raise TrackError(f"{who}: the centre line ({length:.3g} m) is too short for a {width:g} m wide track "
                         f"(at least pi x width = {math.pi * width:.3g} m)")
    return c


def _first_crossing(c: np.ndarray) -> tuple[int, int] | None:
    """The first pair ``(i, j)``, ``i < j``, of non-neighbouring segments of the closed polyline
    ``c`` (M, 2) (segment ``k`` runs from point ``k`` to ``k + 1 mod M``) that cross, touch or
    overlap; None for a simple loop.

    Two segments can meet only if their midpoints are closer than the longer one's length, so a
    k-d tree of the midpoints gives the candidate pairs; each is decided by orientation tests
    with a tolerance scaled to the line's size.
    """
    from scipy.spatial import cKDTree

    a, b = c, np.roll(c, -1, 0)
    m = len(c)
    lengths = np.hypot(*(b - a).T)
    near = cKDTree(0.5 * (a + b)).query_ball_point(0.5 * (a + b), r=lengths * (1 + 1e-9) + 1e-12)
    i = np.repeat(np.arange(m), [len(n) for n in near])
    j = np.fromiter((k for n in near for k in n), dtype=np.int64, count=len(i))
    i, j = np.minimum(i, j), np.maximum(i, j)
    keep = (j - i > 1) & ~((i == 0) & (j == m - 1))
    pairs = np.unique(np.stack([i[keep], j[keep]], -1), axis=0).reshape(-1, 2)
    if not len(pairs):
        return None
    scale = float(np.abs(c - c.mean(0)).max()) or 1.0
    eps = 1e-12 * scale * scale
    p1, p2, p3, p4 = a[pairs[:, 0]], b[pairs[:, 0]], a[pairs[:, 1]], b[pairs[:, 1]]

    def orient(p, q, r):
        return (q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1]) - (q[:, 1] - p[:, 1]) * (r[:, 0] - p[:, 0])

    def on_segment(p, q, r):  # r within the box of p-q (on the segment when the three are collinear)
        slack = 1e-12 * scale
        return ((r >= np.minimum(p, q) - slack) & (r <= np.maximum(p, q) + slack)).all(-1)

    d1, d2, d3, d4 = orient(p1, p2, p3), orient(p1, p2, p4), orient(p3, p4, p1), orient(p3, p4, p2)
    proper = (((d1 > eps) & (d2 < -eps)) | ((d1 < -eps) & (d2 > eps))) & \
        (((d3 > eps) & (d4 < -eps)) | ((d3 < -eps) & (d4 > eps)))
    touch = ((np.abs(d1) <= eps) & on_segment(p1, p2, p3)) | ((np.abs(d2) <= eps) & on_segment(p1, p2, p4)) \
        | ((np.abs(d3) <= eps) & on_segment(p3, p4, p1)) | ((np.abs(d4) <= eps) & on_segment(p3, p4, p2))
    hit = np.flatnonzero(proper | touch)
    return None if not hit.size else (int(pairs[hit[0], 0]), int(pairs[hit[0], 1]))


def save_track(path: str | Path, track: Track) -> Path:
    return io.write_json(path, track.to_dict())


def _read_csv(path: Path) -> Track:
    _check_size(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TrackError(f"{path}: cannot read ({exc})") from exc
    rows = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise TrackError(f"{path}: empty track file")
    header = [h.strip().lower() for h in rows[0][1].split(",")]
    if "x" not in header or "y" not in header:
        raise TrackError(f"{path}: line {rows[0][0]}: header must name columns x, y (and optionally width)")
    ix, iy = header.index("x"), header.index("y")
    iw = header.index("width") if "width" in header else None
    if len(rows) - 1 > MAX_TRACK_POINTS:
        raise TrackError(f"{path}: {len(rows) - 1} points, at most {MAX_TRACK_POINTS} are allowed")
    pts, widths = [], []
    for line_no, ln in rows[1:]:
        fields = [f.strip() for f in ln.split(",")]
        if len(fields) != len(header):
            raise TrackError(f"{path}: line {line_no}: {len(fields)} fields, header has {len(header)}")
        try:
            pts.append((float(fields[ix]), float(fields[iy])))
            if iw is not None:
                widths.append(check_range(None, "width", float(fields[iw]), MIN_TRACK_WIDTH, MAX_TRACK_WIDTH,
                                          unit="m"))
        except InputError as exc:
            raise TrackError(f"{path}: line {line_no}: {exc}") from None
        except ValueError:
            raise TrackError(f"{path}: line {line_no}: not a number ({ln.strip()[:80]!r})") from None
    width = float(np.median(widths)) if widths else 1.0
    try:
        return Track(path.stem, np.asarray(pts, dtype=float).reshape(-1, 2), width)
    except TrackError as exc:
        raise TrackError(f"{path}: {exc}") from None


def load_track(path_or_name: str | Path) -> Track:
    """A track from a CSV or JSON file, or a shipped track by name (``default``, ``oval``)."""
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = resource("tracks", f"{path_or_name}.csv")
        if not path.exists():
            raise TrackError(f"unknown track {path_or_name!r}; shipped: {', '.join(track_names())}")
    if not path.exists():
        raise TrackError(f"{path}: file not found")
    if path.suffix.lower() == ".json":
        _check_size(path)
        data = io.read_json(path)
        if isinstance(data, dict) and "name" not in data:
            data = {**data, "name": path.stem}
        return Track.from_dict(data, source=str(path))
    return _read_csv(path)


def _check_size(path: Path) -> None:
    try:
        check_file_size(path, MAX_TRACK_FILE_BYTES, "a car track")
    except InputError as exc:
        raise TrackError(str(exc)) from None


def default_track() -> Track:
    return load_track("default")


def track_names() -> list[str]:
    try:
        folder = resource("tracks")
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in folder.glob("*.csv"))


BYTES_PER_GRID_CELL = 160    # the float64 work arrays of TrackField's construction, per grid cell


class TrackField:
    """Precomputed track coordinates on a grid (resolution ``cell`` m) for fast lookups."""

    def __init__(self, track: Track, cell: float = 0.04, margin: float = 1.5, dtype=torch.float32):
        self.track = track
        self.length = track.length
        self.half_width = track.width / 2
        from scipy.spatial import cKDTree

        pts, s = track.resampled(spacing=0.005)           # dense centre line
        tangent = np.roll(pts, -1, 0) - np.roll(pts, 1, 0)
        tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
        lo = pts.min(0) - margin - track.width
        hi = pts.max(0) + margin + track.width
        nx = int(math.ceil((hi[0] - lo[0]) / cell)) + 1
        ny = int(math.ceil((hi[1] - lo[1]) / cell)) + 1
        check_allocation(
            f"the coordinate grid of track {track.name[:40]!r} ({nx} x {ny} cells of {cell:g} m)",
            nx * ny,
            BYTES_PER_GRID_CELL,
            hint="a smaller track, or a coarser grid",
        )
        gx, gy = np.meshgrid(lo[0] + cell * np.arange(nx), lo[1] + cell * np.arange(ny))
        g = np.stack([gx.ravel(), gy.ravel()], -1)
        _, idx = cKDTree(pts).query(g)
        rel = g - pts[idx]
        t = tangent[idx]
        best_s = s[idx] + (rel * t).sum(1)                  # nearest point, refined along the tangent
        best_d = t[:, 0] * rel[:, 1] - t[:, 1] * rel[:, 0]  # positive to the left
        ang = 2 * math.pi * best_s / self.length
        field = np.stack([np.cos(ang), np.sin(ang), best_d], 0).reshape(3, ny, nx)
        self.field = torch.tensor(field, dtype=dtype).unsqueeze(0)       # (1, 3, H, W)
        self.lo = torch.tensor(lo, dtype=dtype)
        self.size = torch.tensor([(nx - 1) * cell, (ny - 1) * cell], dtype=dtype)

    def coordinates(self, xy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(cos_theta, sin_theta, d)`` for points ``xy`` (..., 2); ``theta = 2 pi s / length``."""
        shape = xy.shape[:-1]
        g = (xy.reshape(1, -1, 1, 2) - self.lo) / self.size * 2 - 1
        out = torch.nn.functional.grid_sample(self.field, g.to(self.field.dtype), mode="bilinear",
                                              padding_mode="border", align_corners=True)
        out = out.reshape(3, *shape)
        return out[0], out[1], out[2]

    def arc_length(self, xy: torch.Tensor) -> torch.Tensor:
        """``s`` in [0, length) (m) of points (..., 2)."""
        c, s, _ = self.coordinates(xy)
        return torch.remainder(torch.atan2(s, c), 2 * math.pi) * self.length / (2 * math.pi)

    def progress(self, xy: torch.Tensor, s0: float) -> torch.Tensor:
        """Signed arc length from ``s0`` (m), wrapped to (-length/2, length/2]."""
        return self.progress_and_lateral(xy, s0)[0]

    def progress_and_lateral(self, xy: torch.Tensor, s0: float) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`progress` and :meth:`lateral` of points (..., 2) from one grid lookup."""
        c, s, d = self.coordinates(xy)
        a0 = 2 * math.pi * s0 / self.length
        rel = torch.atan2(s * math.cos(a0) - c * math.sin(a0), c * math.cos(a0) + s * math.sin(a0))
        return rel * self.length / (2 * math.pi), d

    def lateral(self, xy: torch.Tensor) -> torch.Tensor:
        return self.coordinates(xy)[2]
