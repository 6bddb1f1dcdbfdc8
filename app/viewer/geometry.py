"""Qt-free loading of a URDF's visual and collision geometry into per-link triangle meshes.

This module runs inside a worker job (meshes can be large), so it imports neither Qt nor
OpenGL: it returns plain numpy arrays, and the UI thread turns them into GL items.

Every link's visuals (boxes, cylinders, spheres, STL/DAE/OBJ meshes) are merged into one
:class:`MeshPart` expressed in the link frame, so the scene can draw a link with one GL
item whose transform is set per frame. A mesh that cannot be found or read is replaced by
a placeholder box and reported in :attr:`RobotGeometry.warnings` (and the log).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

__all__ = [
    "GeometryOptions",
    "LinkGeometry",
    "MeshPart",
    "RobotGeometry",
    "load_robot_geometry",
    "resolve_mesh_uri",
]

DEFAULT_RGBA = (0.72, 0.74, 0.78, 1.0)
COLLISION_RGBA = (0.95, 0.55, 0.15, 0.45)
PLACEHOLDER_SIZE = 0.04   # metres, edge of the box drawn for a missing mesh


@dataclass(frozen=True)
class GeometryOptions:
    """How geometry is loaded.

    ``max_triangles``: a budget of visual triangles for the whole robot, shared among the
    links in proportion to their triangle counts (the software rasteriser's cost per frame
    grows with it: measure with app/viewer/benchmark.py); ``max_triangles_per_link``: a cap
    per link. Meshes above either
    are decimated (quadric decimation when fast_simplification is installed, else vertex
    clustering); None keeps every triangle.
    ``crease_deg``: edges sharper than this keep flat shading (vertices are welded elsewhere).
    ``cylinder_sections``: facets around a cylinder; ``sphere_subdivisions``: icosphere level.
    """

    load_collision: bool = True
    max_triangles: int | None = 40_000
    max_triangles_per_link: int | None = None
    cylinder_sections: int = 32
    sphere_subdivisions: int = 2
    crease_deg: float = 40.0


@dataclass
class MeshPart:
    """A triangle mesh in a link frame.

    vertices: (N, 3) float32, metres; faces: (M, 3) uint32; colors: (N, 4) float32 RGBA in [0, 1].
    """

    vertices: np.ndarray
    faces: np.ndarray
    colors: np.ndarray
    normals: np.ndarray | None = None

    def compute_normals(self) -> MeshPart:
        """Fill ``normals`` ((N, 3) float32 unit vertex normals, area-weighted), vectorised."""
        v = self.vertices.astype(np.float64)
        f = self.faces.astype(np.int64)
        fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        n = np.zeros_like(v)
        for k in range(3):
            np.add.at(n, f[:, k], fn)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.where(length > 1e-20, n / np.where(length > 1e-20, length, 1.0), np.array([0.0, 0.0, 1.0]))
        self.normals = n.astype(np.float32)
        return self

    @property
    def triangles(self) -> int:
        return int(self.faces.shape[0])

    def welded(self, crease_deg: float = 40.0, tolerance: float = 1e-6) -> MeshPart:
        """Share vertices between faces (same position within ``tolerance`` metres and same
        colour) with smooth normals, except across creases sharper than ``crease_deg``.

        Mesh files (DAE/STL) usually repeat every vertex per triangle; welding cuts the
        vertex count (and the GL vertex work) about five-fold and gives smooth shading.
        """
        if self.faces.size == 0:
            return self
        key = np.c_[np.round(self.vertices / tolerance).astype(np.int64),
                    np.round(self.colors * 255).astype(np.int64)]
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        faces = inverse[self.faces.astype(np.int64)]
        verts = self.vertices[first].astype(np.float64)
        fn = np.cross(verts[faces[:, 1]] - verts[faces[:, 0]], verts[faces[:, 2]] - verts[faces[:, 0]])
        vn = np.zeros_like(verts)
        for k in range(3):
            np.add.at(vn, faces[:, k], fn)
        vn /= np.maximum(np.linalg.norm(vn, axis=1, keepdims=True), 1e-20)
        fu = fn / np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-20)
        # face corners on a crease keep a vertex of their own with the face's normal
        cos = np.einsum("fkd,fd->fk", vn[faces], fu)
        sharp = cos < np.cos(np.radians(crease_deg))
        out_v = [verts]
        out_n = [vn]
        out_c = [self.colors[first]]
        if sharp.any():
            fi, ki = np.nonzero(sharp)
            new_ids = verts.shape[0] + np.arange(fi.size)
            out_v.append(verts[faces[fi, ki]])
            out_n.append(fu[fi])
            out_c.append(self.colors[first][faces[fi, ki]])
            faces = faces.copy()
            faces[fi, ki] = new_ids
        part = MeshPart(np.concatenate(out_v).astype(np.float32), faces.astype(np.uint32),
                        np.concatenate(out_c).astype(np.float32))
        part.normals = np.concatenate(out_n).astype(np.float32)
        return part

    @staticmethod
    def merge(parts: list[MeshPart]) -> MeshPart | None:
        parts = [p for p in parts if p is not None and p.faces.size]
        if not parts:
            return None
        offsets = np.cumsum([0] + [p.vertices.shape[0] for p in parts[:-1]])
        return MeshPart(
            vertices=np.concatenate([p.vertices for p in parts]).astype(np.float32),
            faces=np.concatenate([p.faces + o for p, o in zip(parts, offsets)]).astype(np.uint32),
            colors=np.concatenate([p.colors for p in parts]).astype(np.float32),
        )


@dataclass
class LinkGeometry:
    """One link's merged visual and collision meshes (either may be None)."""

    name: str
    visual: MeshPart | None = None
    collision: MeshPart | None = None


@dataclass
class RobotGeometry:
    """Everything the 3D scene needs to draw a robot, keyed by link name."""

    name: str
    path: str
    links: dict[str, LinkGeometry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source_triangles: int = 0   # visual triangles in the files, before any decimation

    @property
    def triangles(self) -> int:
        """Visual triangles over all links."""
        return sum(g.visual.triangles for g in self.links.values() if g.visual is not None)


# ----------------------------------------------------------------------------- URIs
def _package_roots() -> list[Path]:
    """Folders that may contain ``package://NAME/...`` (ROS_PACKAGE_PATH, installed share/)."""
    roots: list[Path] = []
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            roots.append(Path(entry))
    try:
        import site
        for sp in site.getsitepackages() + [site.getusersitepackages()]:
            share = Path(sp) / "cmeel.prefix" / "share"
            if share.is_dir():
                roots.append(share)
    except Exception as exc:  # noqa: BLE001 - site may be unavailable in frozen apps
        log.debug("no site-packages description folders: %s", exc)
    return roots


def resolve_mesh_uri(uri: str, base_dir: str | os.PathLike) -> Path:
    """Resolve a URDF ``filename`` (package://, file://, relative or absolute) to a path.

    Uses the engine's resolver (engine.robots.urdf.resolve_uri) when it is installed, and
    otherwise searches the URDF's folder and its parents, ROS_PACKAGE_PATH and installed
    description packages. Returns the best candidate even if it does not exist.
    """
    try:
        from engine.robots.urdf import resolve_uri  # the engine's single source of truth
        resolved = resolve_uri(uri, base_dir)
        if resolved is not None and Path(resolved).exists():
            return Path(resolved)
    except Exception as exc:  # noqa: BLE001 - engine missing or could not resolve: fall back below
        log.debug("engine resolve_uri(%r) failed (%s); using the viewer's search", uri, exc)
    base = Path(base_dir)
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        package, _, inner = rest.partition("/")
        candidates = []
        for root in _package_roots():
            candidates += [root / package / inner, root / rest]
        # the URDF's own folder and its parents may hold the package
        for parent in [base, *base.parents]:
            candidates += [parent / inner, parent / package / inner]
            if parent.name == package:
                candidates.append(parent / inner)
        for c in candidates:
            if c.exists():
                return c
        return candidates[0] if candidates else Path(inner)
    p = Path(uri)
    return p if p.is_absolute() else base / p


# ----------------------------------------------------------------------------- meshes
def _origin_matrix(origin) -> np.ndarray:
    if origin is None:
        return np.eye(4)
    return np.asarray(origin, dtype=float).reshape(4, 4)


def _part_from_trimesh(mesh, rgba) -> MeshPart:
    verts = np.asarray(mesh.vertices, dtype=np.float32)
    faces = np.asarray(mesh.faces, dtype=np.uint32)
    colors = np.empty((verts.shape[0], 4), dtype=np.float32)
    colors[:] = rgba
    return MeshPart(verts, faces, colors)


def _mesh_own_rgba(mesh) -> tuple | None:
    """The colour a mesh file carries itself (DAE/OBJ material), or None."""
    visual = getattr(mesh, "visual", None)
    if visual is None:
        return None
    try:
        kind = visual.kind
    except Exception:  # noqa: BLE001
        return None
    if kind == "texture":
        mat = getattr(visual, "material", None)
        if mat is None:
            return None
        try:
            c = np.asarray(mat.main_color, dtype=float) / 255.0
            return tuple(c)
        except Exception:  # noqa: BLE001
            return None
    return None


def _mesh_vertex_colors(mesh) -> np.ndarray | None:
    visual = getattr(mesh, "visual", None)
    try:
        if visual is not None and visual.kind in ("vertex", "face"):
            return np.asarray(visual.vertex_colors, dtype=np.float32) / 255.0
    except Exception:  # noqa: BLE001
        return None
    return None


MAX_MESH_MB_ENV = "LAGRANGE_MAX_MESH_MB"
MAX_MESH_FACES = 2_000_000


def _mesh_roots(base_dir: Path, uri: str) -> list[Path]:
    """Where a URDF's meshes may be read from: the robot's folder tree (the URDF's folder and
    up to two levels above it, never a top-level folder or the home folder), a package of
    that name among the URDF's ancestors, the shipped robots and the known package roots."""
    base = base_dir.resolve()
    home = Path.home().resolve()
    roots = []
    for anc in (base.parents[1] if len(base.parents) > 1 else base, base.parent, base):
        if len(anc.parts) > 2 and anc != home:
            roots.append(anc)
            break
    else:
        roots.append(base)
    if uri.startswith("package://"):
        package = uri[len("package://"):].partition("/")[0]
        roots += [a for a in (base, *base.parents) if a.name == package and len(a.parts) > 2]
    try:
        from engine.paths import urdf_dir
        from engine.robots.urdf import description_package_roots

        roots += [urdf_dir(), *description_package_roots()]
    except Exception as exc:  # noqa: BLE001 - the viewer also works without the engine
        log.debug("no engine package roots: %s", exc)
    return roots + _package_roots()


def _mesh_path_allowed(path: Path, base_dir: Path, uri: str) -> bool:
    try:
        real = path.resolve()
    except OSError:
        return False
    for root in _mesh_roots(base_dir, uri):
        try:
            real.relative_to(root.resolve())
            return True
        except (ValueError, OSError):
            continue
    return False


def _load_mesh_file(path: Path, scale, urdf_rgba, options: GeometryOptions, base_dir: Path | None = None,
                    uri: str = "") -> MeshPart:
    """Load STL/DAE/OBJ with trimesh; every sub-geometry keeps its own material colour.

    With ``base_dir`` (the URDF's folder), a path that climbs out of the robot's folder tree
    and the known package roots is not read. A file above ``LAGRANGE_MAX_MESH_MB`` (30 MB)
    is refused with its size before it is read; a mesh above 2 M triangles is decimated at
    once (to the robot's triangle budget or 2 M).
    """
    import stat

    import trimesh

    if base_dir is not None and not _mesh_path_allowed(path, Path(base_dir), uri):
        raise ValueError(f"{path} is outside the robot's folder and the known package folders; "
                         "not read (copy the mesh next to the robot or add its folder to ROS_PACKAGE_PATH)")
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is not a regular file")
    try:
        limit_mb = float(os.environ.get(MAX_MESH_MB_ENV, "30"))
    except ValueError:
        limit_mb = 30.0
    if limit_mb > 0 and st.st_size > limit_mb * 2**20:
        raise ValueError(
            f"{path} is {st.st_size / 2**20:.0f} MB, above the viewer's {limit_mb:g} MB limit for one "
            f"mesh; simplify it (e.g. with fast-simplification) or raise {MAX_MESH_MB_ENV}"
        )
    loaded = trimesh.load(str(path), force=None, process=False)
    if isinstance(loaded, trimesh.Scene):
        geoms = []
        for node in loaded.graph.nodes_geometry:
            transform, geom_name = loaded.graph[node]
            g = loaded.geometry[geom_name]
            if not isinstance(g, trimesh.Trimesh):
                continue
            g = g.copy()
            g.apply_transform(transform)
            geoms.append(g)
    elif isinstance(loaded, trimesh.Trimesh):
        geoms = [loaded]
    else:
        geoms = []
    if not geoms:
        raise ValueError(f"{path}: no triangles")
    parts = []
    for g in geoms:
        vc = _mesh_vertex_colors(g)
        own = _mesh_own_rgba(g)
        # RViz convention: a mesh's own materials win, a plain mesh takes the URDF colour
        rgba = own if own is not None else (urdf_rgba or DEFAULT_RGBA)
        part = _part_from_trimesh(g, rgba)
        if vc is not None and own is None and urdf_rgba is None and vc.shape[0] == part.vertices.shape[0]:
            part.colors = vc.astype(np.float32)
        parts.append(part)
    merged = MeshPart.merge(parts)
    if merged.triangles > MAX_MESH_FACES:
        target = min(MAX_MESH_FACES, options.max_triangles or MAX_MESH_FACES)
        log.warning("%s: %d triangles decimated to about %d on load", path, merged.triangles, target)
        merged = _decimate(merged, target).compute_normals()
    if scale is not None:
        merged.vertices = merged.vertices * np.asarray(scale, dtype=np.float32).reshape(-1)[:3]
    return merged


def _primitive(geometry, options: GeometryOptions, rgba) -> MeshPart | None:
    import trimesh

    if geometry.box is not None:
        mesh = trimesh.creation.box(extents=np.asarray(geometry.box.size, dtype=float))
    elif geometry.cylinder is not None:
        mesh = trimesh.creation.cylinder(radius=float(geometry.cylinder.radius),
                                         height=float(geometry.cylinder.length),
                                         sections=options.cylinder_sections)
    elif geometry.sphere is not None:
        mesh = trimesh.creation.icosphere(subdivisions=options.sphere_subdivisions,
                                          radius=float(geometry.sphere.radius))
    else:
        return None
    return _part_from_trimesh(mesh, rgba)


def _placeholder(rgba=(1.0, 0.2, 0.6, 1.0)) -> MeshPart:
    import trimesh
    return _part_from_trimesh(trimesh.creation.box(extents=[PLACEHOLDER_SIZE] * 3), rgba)


def _transform_part(part: MeshPart, T: np.ndarray) -> MeshPart:
    if np.allclose(T, np.eye(4)):
        return part
    v = part.vertices.astype(np.float64) @ T[:3, :3].T + T[:3, 3]
    return MeshPart(v.astype(np.float32), part.faces, part.colors)


def _cluster_vertices(welded: MeshPart, target: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering on a grid whose pitch grows until at most ``target`` triangles remain."""
    extent = float(np.ptp(welded.vertices, axis=0).max()) or 1.0
    pitch = extent / np.sqrt(target / 2.0)
    for _ in range(12):
        _, inverse = np.unique(np.floor(welded.vertices / pitch).astype(np.int64), axis=0,
                               return_inverse=True)
        inverse = inverse.reshape(-1)
        faces = inverse[welded.faces]
        keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
        faces = faces[keep]
        if faces.shape[0] <= target:
            break
        pitch *= 1.05 * np.sqrt(faces.shape[0] / target)
    n = int(inverse.max()) + 1
    sums = np.zeros((n, 3))
    np.add.at(sums, inverse, welded.vertices)
    return sums / np.bincount(inverse, minlength=n)[:, None], faces


def _decimate(part: MeshPart, target: int) -> MeshPart:
    """Reduce a mesh to about ``target`` triangles (quadric decimation with
    fast_simplification when installed, else vertex clustering); colours follow the
    nearest original vertex. Returns a welded mesh (normals are recomputed by the caller)."""
    welded = part.welded(crease_deg=180.0)
    if welded.triangles <= target:
        return welded
    try:
        import fast_simplification
        verts, faces = fast_simplification.simplify(
            welded.vertices.astype(np.float32), welded.faces.astype(np.int32),
            target_reduction=1.0 - target / welded.triangles)
    except ImportError:
        verts, faces = _cluster_vertices(welded, target)
    from scipy.spatial import cKDTree
    _, nearest = cKDTree(welded.vertices).query(np.asarray(verts))
    return MeshPart(np.asarray(verts, np.float32), np.asarray(faces, np.uint32),
                    welded.colors[nearest].astype(np.float32))


# ----------------------------------------------------------------------------- URDF
def _named_materials(robot) -> dict[str, tuple]:
    """URDF materials by name: the global ones and those defined inline in any visual."""
    named: dict[str, tuple] = {}
    for m in getattr(robot, "materials", []) or []:
        if m.name and m.color is not None:
            named[m.name] = tuple(float(x) for x in m.color.rgba)
    for link in robot.links:
        for v in link.visuals:
            m = v.material
            if m is not None and m.name and m.color is not None:
                named.setdefault(m.name, tuple(float(x) for x in m.color.rgba))
    return named


def _visual_rgba(material, named: Mapping[str, tuple]) -> tuple | None:
    if material is None:
        return None
    if material.color is not None:
        return tuple(float(x) for x in material.color.rgba)
    if material.name and material.name in named:
        return named[material.name]
    return None


def _element_part(element, base_dir: Path, rgba, options: GeometryOptions, where: str,
                  warnings: list[str]) -> MeshPart | None:
    geom = element.geometry
    if geom is None:
        return None
    if geom.mesh is not None:
        path = resolve_mesh_uri(geom.mesh.filename, base_dir)
        try:
            if not path.exists():
                raise FileNotFoundError(f"not found: {path}")
            part = _load_mesh_file(path, geom.mesh.scale, rgba, options, base_dir, geom.mesh.filename)
        except Exception as exc:  # noqa: BLE001 - a missing mesh is a warning, never an error
            msg = (
                f"{where}: mesh {geom.mesh.filename!r} could not be loaded ({exc}); drawing a placeholder box"
            )
            log.warning(msg)
            warnings.append(msg)
            part = _placeholder()
    else:
        part = _primitive(geom, options, rgba or DEFAULT_RGBA)
        if part is None:
            return None
    return _transform_part(part, _origin_matrix(element.origin))


def _link_budgets(geometry: RobotGeometry, options: GeometryOptions) -> dict[str, int]:
    """Triangles allowed per link: the robot budget split by share, then the per-link cap."""
    counts = {n: g.visual.triangles for n, g in geometry.links.items() if g.visual is not None}
    total = sum(counts.values())
    budget: dict[str, int] = {}
    for name, count in counts.items():
        limit = count
        if options.max_triangles and total > options.max_triangles:
            limit = max(200, int(options.max_triangles * count / total))
        if options.max_triangles_per_link:
            limit = min(limit, options.max_triangles_per_link)
        budget[name] = limit
    return budget


def load_robot_geometry(urdf_path: str | os.PathLike, options: GeometryOptions | None = None,
                        progress: Callable[[float, str], None] | None = None,
                        check_cancelled: Callable[[], None] | None = None) -> RobotGeometry:
    """Read a URDF's visual (and collision) geometry, one merged mesh per link.

    ``progress(fraction, message)`` and ``check_cancelled()`` let a job report and stop
    between links. Raises ValueError (the file named) when the URDF itself cannot be
    parsed; a missing or unreadable mesh only adds a warning and a placeholder.
    """
    import yourdfpy

    options = options or GeometryOptions()
    path = Path(urdf_path)
    try:
        urdf = yourdfpy.URDF.load(str(path), build_scene_graph=False, load_meshes=False,
                                  load_collision_meshes=False)
    except Exception as exc:
        raise ValueError(f"{path}: cannot read URDF geometry: {exc}") from exc
    robot = urdf.robot
    named = _named_materials(robot)
    base_dir = path.parent
    geometry = RobotGeometry(name=robot.name, path=str(path))
    n = max(len(robot.links), 1)
    for i, link in enumerate(robot.links):
        if check_cancelled is not None:
            check_cancelled()
        if progress is not None:
            progress(i / n, f"loading {link.name}")
        visual_parts = []
        for k, v in enumerate(link.visuals):
            rgba = _visual_rgba(v.material, named)
            visual_parts.append(_element_part(v, base_dir, rgba, options,
                                              f"{path.name}: link {link.name!r} visual {k}",
                                              geometry.warnings))
        collision_parts = []
        if options.load_collision:
            for k, c in enumerate(link.collisions):
                collision_parts.append(_element_part(c, base_dir, COLLISION_RGBA, options,
                                                     f"{path.name}: link {link.name!r} collision {k}",
                                                     geometry.warnings))
        visual = MeshPart.merge(visual_parts)
        collision = MeshPart.merge(collision_parts)
        if collision is not None:
            collision.colors[:] = COLLISION_RGBA
        geometry.links[link.name] = LinkGeometry(link.name, visual, collision)
    return _finish(geometry, options, progress, check_cancelled)


def _finish(geometry: RobotGeometry, options: GeometryOptions, progress, check_cancelled) -> RobotGeometry:
    """Decimate to the triangle budgets and weld each link's meshes (normals for shading)."""
    geometry.source_triangles = geometry.triangles
    budget = _link_budgets(geometry, options)
    for name, g in geometry.links.items():
        if check_cancelled is not None:
            check_cancelled()
        if g.visual is not None:
            if budget.get(name) and g.visual.triangles > budget[name]:
                g.visual = _decimate(g.visual, budget[name])
            g.visual = g.visual.welded(options.crease_deg)
        if g.collision is not None:
            if options.max_triangles_per_link and g.collision.triangles > options.max_triangles_per_link:
                g.collision = _decimate(g.collision, options.max_triangles_per_link)
            g.collision = g.collision.welded(options.crease_deg)
    if progress is not None:
        progress(1.0, f"loaded {len(geometry.links)} links, {geometry.triangles} triangles")
    return geometry


# ----------------------------------------------------------------------------- any robot file
def _description_part(
    element, rgba, options: GeometryOptions, where: str, warnings: list[str]
) -> MeshPart | None:
    """One visual or collision of an engine RobotDescription (xacro, MJCF...) as a mesh part."""
    import trimesh

    g = element.geometry
    color = rgba or DEFAULT_RGBA
    if g.kind == "mesh":
        try:
            if not g.path or not Path(g.path).exists():
                raise FileNotFoundError(f"not found: {g.path or g.filename}")
            part = _load_mesh_file(Path(g.path), g.scale, rgba, options)
        except Exception as exc:  # noqa: BLE001 - a missing mesh is a warning, never an error
            msg = f"{where}: mesh {g.filename!r} could not be loaded ({exc}); drawing a placeholder box"
            log.warning(msg)
            warnings.append(msg)
            part = _placeholder()
    elif g.kind == "box":
        part = _part_from_trimesh(trimesh.creation.box(extents=np.asarray(g.size, dtype=float)), color)
    elif g.kind == "cylinder":
        part = _part_from_trimesh(trimesh.creation.cylinder(radius=float(g.radius), height=float(g.length),
                                                            sections=options.cylinder_sections), color)
    elif g.kind == "capsule":
        part = _part_from_trimesh(
            trimesh.creation.capsule(
                height=float(g.length),
                radius=float(g.radius),
                count=[options.cylinder_sections, options.cylinder_sections],
            ),
            color,
        )
    elif g.kind == "sphere":
        part = _part_from_trimesh(trimesh.creation.icosphere(subdivisions=options.sphere_subdivisions,
                                                             radius=float(g.radius)), color)
    else:
        return None
    return _transform_part(part, element.origin.matrix())


def description_geometry(desc, options: GeometryOptions | None = None,
                         progress: Callable[[float, str], None] | None = None,
                         check_cancelled: Callable[[], None] | None = None) -> RobotGeometry:
    """The view's geometry of an engine :class:`~engine.robots.description.RobotDescription`
    (any file format: the description already holds resolved mesh paths and colours)."""
    options = options or GeometryOptions()
    name = Path(desc.source).name if desc.source else desc.name
    geometry = RobotGeometry(name=desc.name, path=str(desc.source or ""))
    n = max(len(desc.links), 1)
    for i, link in enumerate(desc.links):
        if check_cancelled is not None:
            check_cancelled()
        if progress is not None:
            progress(i / n, f"loading {link.name}")
        visual = MeshPart.merge([p for k, v in enumerate(link.visuals) if (p := _description_part(
            v, v.rgba, options, f"{name}: link {link.name!r} visual {k}", geometry.warnings)) is not None])
        collision = None
        if options.load_collision:
            collision = MeshPart.merge(
                [
                    p
                    for k, c in enumerate(link.collisions)
                    if (
                        p := _description_part(
                            c,
                            COLLISION_RGBA,
                            options,
                            f"{name}: link {link.name!r} collision {k}",
                            geometry.warnings,
                        )
                    )
                    is not None
                ]
            )
            if collision is not None:
                collision.colors[:] = COLLISION_RGBA
        geometry.links[link.name] = LinkGeometry(link.name, visual, collision)
    return _finish(geometry, options, progress, check_cancelled)


def inertia_box(mass: float, com, inertia) -> tuple[np.ndarray, np.ndarray] | None:
    """A link's inertia as its equivalent box (RViz's "mass properties"): the uniform box of the
    same mass and principal moments, on the principal axes, centred on the centre of mass.

    ``com``: (3,) in the link frame (m); ``inertia``: (3, 3) about the CoM, link-frame axes.
    Returns ``(T (4, 4) box pose in the link frame, extents (3,) m)``, or None for a massless
    link. Side ``a_i = sqrt(6 (I_j + I_k - I_i) / m)``; a moment set that breaks the triangle
    inequality gives a zero side there (the box then is flat).
    """
    if not mass > 0:
        return None
    I = 0.5 * (np.asarray(inertia, dtype=float) + np.asarray(inertia, dtype=float).T)
    moments, axes = np.linalg.eigh(I)
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    s = moments.sum()
    extents = np.sqrt(np.maximum(6.0 * (s - 2.0 * moments) / mass, 0.0))
    T = np.eye(4)
    T[:3, :3] = axes
    T[:3, 3] = np.asarray(com, dtype=float)
    return T, extents
