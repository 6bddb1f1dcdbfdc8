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

__all__ = [
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


@dataclass
class Track:
    """A closed centre line ``centre`` (M, 2) in m and a constant ``width`` in m."""

    name: str
    centre: np.ndarray
    width: float

    def __post_init__(self):
        c = np.asarray(self.centre, dtype=float)
        if c.ndim != 2 or c.shape[1] != 2 or len(c) < 4:
            raise TrackError(f"track {self.name!r}: centre must be at least 4 points [x, y]")
        if not np.isfinite(c).all():
            raise TrackError(f"track {self.name!r}: centre has NaN or inf")
        if not (self.width > 0):
            raise TrackError(f"track {self.name!r}: width must be positive")
        if np.hypot(*(c[0] - c[-1])) < 1e-9:
            c = c[:-1]
        self.centre = c

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


def save_track(path: str | Path, track: Track) -> Path:
    return io.write_json(path, track.to_dict())


def _read_csv(path: Path) -> Track:
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
    pts, widths = [], []
    for line_no, ln in rows[1:]:
        fields = [f.strip() for f in ln.split(",")]
        if len(fields) != len(header):
            raise TrackError(f"{path}: line {line_no}: {len(fields)} fields, header has {len(header)}")
        try:
            pts.append((float(fields[ix]), float(fields[iy])))
            if iw is not None:
                widths.append(float(fields[iw]))
        except ValueError:
            raise TrackError(f"{path}: line {line_no}: not a number ({ln.strip()!r})") from None
    width = float(np.median(widths)) if widths else 1.0
    return Track(path.stem, np.asarray(pts), width)


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
        data = io.read_json(path)
        if not isinstance(data, dict) or "centre" not in data:
            raise TrackError(f"{path}: not a track (needs field 'centre')")
        try:
            return Track(str(data.get("name", path.stem)), np.asarray(data["centre"], dtype=float),
                         float(data.get("width", 1.0)))
        except (TypeError, ValueError) as exc:
            raise TrackError(f"{path}: {exc}") from None
    return _read_csv(path)


def default_track() -> Track:
    return load_track("default")


def track_names() -> list[str]:
    try:
        folder = resource("tracks")
    except FileNotFoundError:
        return []
    return sorted(p.stem for p in folder.glob("*.csv"))


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
