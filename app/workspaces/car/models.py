"""The car models the planner offers, Qt-free: model folders found under the models folder
and those the user added, what each one is (``car_model.json``), and which to compare."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ACTIVATION_NAMES", "SIM", "ModelCatalogue", "describe_model", "example_folder", "read_model_info"]

SIM = "sim"
ACTIVATION_NAMES = {"gelu": "GELU", "relu": "ReLU"}


EXAMPLE_FOLDERS = {"track": ("tracks",), "model": ("car_models",), "log": ("logs",)}


def example_folder(kind: str) -> str:
    """Where an open dialog for ``kind`` (track, model, log, plan) starts the first time: the
    shipped examples' folder under resources/ ("" when there is none, e.g. for plans)."""
    from engine.paths import resources_dir

    if kind not in EXAMPLE_FOLDERS:
        return ""
    try:
        folder = resources_dir().joinpath(*EXAMPLE_FOLDERS[kind])
    except FileNotFoundError:
        return ""
    return str(folder) if folder.is_dir() else ""


def read_model_info(folder: str) -> dict:
    """``car_model.json`` of a model folder (config, tve...), or {} when unreadable."""
    from engine.io import read_json

    try:
        meta = read_json(Path(folder) / "car_model.json")
    except (ValueError, OSError):
        return {}
    return meta if isinstance(meta, dict) else {}


def describe_model(folder: str, meta: dict) -> str:
    """``name (GELU 8×64, relative)``: the folder's name and its architecture."""
    cfg = meta.get("config") or {}
    if not cfg:
        return Path(folder).name
    act = str(cfg.get("activation", "?"))
    return (f"{Path(folder).name} ({ACTIVATION_NAMES.get(act, act)} "
            f"{cfg.get('layers', '?')}×{cfg.get('hidden', '?')}, {cfg.get('loss', '?')})")


class ModelCatalogue:
    """Model folders (each with ``car_model.json``) and their metadata, in the order offered."""

    def __init__(self, root: Path | None = None, extra: list[str] | None = None,
                 builtin: list[str] | None = None):
        found = []
        if root is not None and Path(root).is_dir():
            found = sorted(str(p.parent) for p in Path(root).glob("*/car_model.json"))
        self.builtin = [str(p) for p in (builtin or [])]
        paths = self.builtin + found + [str(p) for p in (extra or []) if p]
        self.paths = [p for p in dict.fromkeys(paths) if (Path(p) / "car_model.json").exists()]
        self.info = {p: read_model_info(p) for p in self.paths}

    def describe(self, path: str) -> str:
        if path in self.builtin:
            cfg = self.info.get(path, {}).get("config") or {}
            act = str(cfg.get("activation", "?"))
            return f"Shipped model ({ACTIVATION_NAMES.get(act, act)} {cfg.get('layers', '?')}×{cfg.get('hidden', '?')})"
        return describe_model(path, self.info.get(path, {}))

    @property
    def default(self) -> str | None:
        """The shipped learned model, the first choice on a first open (None if missing)."""
        return next((p for p in self.builtin if p in self.paths), None)

    def activation(self, path: str | None) -> str:
        return (
            str((self.info.get(path, {}).get("config") or {}).get("activation", "")).lower() if path else ""
        )

    def by_activation(self, activation: str) -> list[str]:
        """Model folders with this activation, newest first."""
        out = [p for p in self.paths if self.activation(p) == activation]
        return sorted(out, key=lambda p: (Path(p) / "car_model.json").stat().st_mtime, reverse=True)

    def can_compare_activations(self) -> bool:
        return all(self.by_activation(a) for a in ("gelu", "relu"))

    def compared_variants(self, chosen: str | None) -> list[tuple[str, str]]:
        """``[(label, folder)]`` for "Compare ReLU and GELU": the chosen model for its own
        activation, the newest model of the other one; GELU first."""
        act = self.activation(chosen)
        out = []
        for a in ("gelu", "relu"):
            models = self.by_activation(a)
            if models:
                out.append((ACTIVATION_NAMES[a], chosen if act == a else models[0]))
        return out
