"""The house rules of ARCHITECTURE.md, read from the code (every import, function-local ones included).

- engine never imports Qt (PySide6, pyqtgraph, OpenGL) or app;
- engine's packages are layered: a module imports only its own package and packages of a lower rank;
- a workspace never imports another workspace; the widget kit and the viewer never import a workspace;
- no circle of imports between modules;
- no file in app/ or engine/ over 700 lines; results/ holds data and reports, no code.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# engine's layers, bottom first (ARCHITECTURE.md). Top-level modules (engine/*.py) are the
# ground floor unless named here.
ENGINE_RANKS = {
    "<ground>": 0,
    "systems": 1, "robots": 1,
    "logs": 2,
    "data": 3,
    "models": 4,
    "training": 5, "identification": 5, "eigenmodes": 5,
    "car": 6,
    "selftest": 7,
    "cli": 8,
    "__main__": 9,
}
QT_MODULES = ("PySide6", "pyqtgraph", "OpenGL", "shiboken6")
MAX_LINES = 700


def _python_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join(parts)
    return name.removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            out.add(root)
            out.update(f"{root}.{alias.name}" for alias in node.names)
    return out


def _project_modules() -> dict[str, Path]:
    return {_module_name(p): p for folder in ("engine", "app") for p in _python_files(folder)}


def _project_edges() -> dict[str, set[str]]:
    modules = _project_modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for target in _imports(path):
            # the longest known module the name is in (``engine.robots.model.RobotModel`` -> the module)
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges[name].add(target)
    return edges


def _engine_room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "<ground>"
    if len(parts) == 2 and parts[1] not in ENGINE_RANKS:
        path = ROOT / "engine" / parts[1]
        return "<ground>" if not path.is_dir() else parts[1]
    return parts[1]


def test_engine_never_imports_qt_or_app():
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _python_files("engine")
        for name in _imports(path)
        if name.split(".")[0] in QT_MODULES + ("app",)
    ]
    assert not offenders, "engine must stay Qt-free (house rule 1):\n" + "\n".join(offenders)


def test_engine_packages_import_only_lower_layers():
    rooms = {_engine_room(m) for m in _project_modules() if m.startswith("engine")}
    unranked = sorted(r for r in rooms if r not in ENGINE_RANKS)
    assert not unranked, (
        f"give these engine packages a layer in ENGINE_RANKS (and ARCHITECTURE.md): {unranked}"
    )
    offenders = []
    for source, targets in _project_edges().items():
        if not source.startswith("engine"):
            continue
        src_room = _engine_room(source)
        for target in targets:
            if not target.startswith("engine"):
                continue
            dst_room = _engine_room(target)
            if dst_room == src_room or target == "engine":
                continue
            if ENGINE_RANKS[dst_room] >= ENGINE_RANKS[src_room]:
                offenders.append(f"{source} ({src_room}, layer {ENGINE_RANKS[src_room]}) imports "
                                 f"{target} ({dst_room}, layer {ENGINE_RANKS[dst_room]})")
    assert not offenders, "imports that run up or across engine's layers:\n" + "\n".join(sorted(offenders))


def test_workspaces_do_not_import_each_other_and_the_kit_imports_none():
    offenders = []
    for source, targets in _project_edges().items():
        parts = source.split(".")
        if parts[:2] == ["app", "workspaces"] and len(parts) > 2:
            mine = parts[2]
            offenders += [f"{source} imports {t}" for t in targets
                          if t.startswith("app.workspaces.") and t.split(".")[2] != mine]
        elif parts[:2] in (["app", "widgets"], ["app", "viewer"]):
            offenders += [f"{source} imports {t}" for t in targets if t.startswith("app.workspaces")]
    assert not offenders, "a workspace imports another (or the kit imports a workspace):\n" + "\n".join(
        offenders
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_circles_between_modules():
    edges = _project_edges()
    # a package's __init__ re-exporting its modules is not a circle of logic
    graph = {a: {b for b in bs if not (b == a.rpartition(".")[0] or a == b.rpartition(".")[0])}
             for a, bs in edges.items()}
    cycles = [c for c in _cycles(graph) if not all(m.count(".") <= 1 for m in c)]
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("folder", ["engine", "app"])
def test_no_file_over_700_lines(folder):
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _python_files(folder)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, f"split these modules (at most {MAX_LINES} lines each):\n" + "\n".join(long)


def test_results_hold_no_code():
    code = [str(p.relative_to(ROOT)) for p in (ROOT / "results").rglob("*")
            if p.suffix in (".py", ".sh", ".ipynb")]
    assert not code, "results/ keeps data, figures and READMEs; scripts go to experiments/:\n" + "\n".join(
        code
    )


def test_the_rules_catch_a_violation(tmp_path, monkeypatch):
    """The checks above can fail: an engine module importing Qt and one running up a layer are seen."""
    fake = tmp_path / "engine" / "robots"
    fake.mkdir(parents=True)
    (tmp_path / "engine" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "bad.py").write_text("import PySide6\nfrom engine.training import trainer\n")
    (tmp_path / "engine" / "training").mkdir()
    (tmp_path / "engine" / "training" / "__init__.py").write_text("")
    (tmp_path / "engine" / "training" / "trainer.py").write_text("from engine.robots import bad\n")
    (tmp_path / "app").mkdir()
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    with pytest.raises(AssertionError, match="PySide6"):
        test_engine_never_imports_qt_or_app()
    with pytest.raises(AssertionError, match="layer 1"):
        test_engine_packages_import_only_lower_layers()
    with pytest.raises(AssertionError, match="engine.robots.bad"):
        test_no_import_circles_between_modules()
