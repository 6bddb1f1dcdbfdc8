"""One place for the checks of user-facing numbers and paths (ground module: no engine imports).

Config dataclasses (the source of the CLI flags and the GUI forms) call these helpers in
``__post_init__`` or ``validate()``, and raise :class:`InputError` themselves for checks of their
own. Each failure is an :class:`InputError` (a ``ValueError``) raised where the bad value is
found, carrying ``owner`` (the config class, e.g. ``"TrainConfig"``, or plain words such as
``"training setting"``), ``field`` and ``reason``: its text is the plain message naming the field
(what the app shows), and :meth:`InputError.message` names the flag that sets the field instead
(what the command line shows: ``--lr: must be greater than zero, got -1``).

Memory: :func:`check_allocation` estimates the bytes of an array before it is made and
refuses anything above a budget: by default 25 % of the machine's physical memory, or
``LAGRANGE_MEMORY_BUDGET`` (bytes, or with a unit: ``8G``, ``500M``; ``0`` or ``none``
turns the check off). A legitimate big job passes ``allow=True`` (its flag, e.g.
``--allow-large``) or raises the budget through that variable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path

__all__ = [
    "DEFAULT_BUDGET_FRACTION",
    "BUDGET_ENV",
    "InputError",
    "check_allocation",
    "check_choice",
    "check_file_size",
    "check_finite",
    "check_int",
    "check_output_path",
    "check_positive",
    "check_range",
    "format_bytes",
    "memory_budget",
    "physical_memory",
]

DEFAULT_BUDGET_FRACTION = 0.25
BUDGET_ENV = "LAGRANGE_MEMORY_BUDGET"


class InputError(ValueError):
    """A value the user gave (a field of a config, a flag, a path) that cannot be used.

    ``owner``: the config class (``"TrainConfig"``) or plain words (``"training setting"``,
    ``"learn train"``); ``field``: the field, a flag (``--hidden``) or both (``"hidden
    (--hidden)"``); ``reason``: the message without the field; ``flag``: the flag that sets the
    field, when the raiser knows it. ``str()`` is the plain message naming the field (a class
    name is never shown: ``lr: must be greater than zero, got -1``); :meth:`message` names the flag.
    """

    def __init__(self, message: str, *, owner: str | None = None, field: str | None = None,
                 flag: str | None = None):
        self.owner = owner
        self.field = field
        self.reason = message
        self.flag = flag
        label = _label(owner, field)
        super().__init__(f"{label}: {message}" if label else message)

    def message(self, flags: Mapping[str, str] | None = None) -> str:
        """The message naming the flag that sets the field (``flags``: field or option name ->
        flag, e.g. a command's parser's), or the field where no flag sets it."""
        flag = self.flag or (flags or {}).get(self.field or "")
        return (
            f"{flag}: {self.reason}" if flag and self.field and not self.field.startswith("-") else str(self)
        )


def _is_class_name(owner: str) -> bool:
    return owner.isidentifier() and owner[:1].isupper()


def _label(owner: str | None, field: str | None) -> str:
    """``owner`` is a class name (not shown) or plain words (``"training setting"``); ``field`` a
    field name, a flag (``--hidden``) or both (``"hidden (--hidden)"``)."""
    if not field:
        return "" if owner is None or _is_class_name(owner) else owner
    if field.startswith("-") or (owner is not None and _is_class_name(owner)):  # a flag, or a config's field
        return field
    name = field if "(" in field else repr(field)
    return f"{owner} {name}" if owner else name


def _tail(unit: str | None, hint: str | None) -> str:
    return f"; {hint}" if hint else ""


def _fmt(value, unit: str | None = None) -> str:
    s = f"{value:.6g}" if isinstance(value, float) else str(value)
    return f"{s} {unit}" if unit else s


def check_finite(owner: str | None, field: str, value, *, hint: str | None = None) -> float:
    """``value`` as a float; refuses NaN, infinity and anything that is not a number."""
    if isinstance(value, bool) or not isinstance(value, Real):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise InputError(f"expected a number, got {value!r}{_tail(None, hint)}",
                             owner=owner, field=field) from None
    if not math.isfinite(value):
        raise InputError(f"must be a finite number, got {value}{_tail(None, hint)}", owner=owner, field=field)
    return float(value)


def check_positive(owner: str | None, field: str, value, *, unit: str | None = None,
                   hint: str | None = None, allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``allow_zero``)."""
    v = check_finite(owner, field, value, hint=hint)
    if v < 0 or (v == 0 and not allow_zero):
        need = "zero or more" if allow_zero else "greater than zero"
        raise InputError(
            f"must be {need}, got {_fmt(value, unit)}{_tail(unit, hint)}", owner=owner, field=field
        )
    return v


def check_range(owner: str | None, field: str, value, lo=None, hi=None, *, unit: str | None = None,
                hint: str | None = None, lo_open: bool = False, hi_open: bool = False) -> float:
    """A finite number in ``[lo, hi]`` (either bound may be None; ``*_open`` excludes it)."""
    v = check_finite(owner, field, value, hint=hint)
    below = lo is not None and (v < lo or (lo_open and v == lo))
    above = hi is not None and (v > hi or (hi_open and v == hi))
    if below or above:
        if hi is None:
            need = f"{'greater than' if lo_open else 'at least'} {_fmt(lo, unit)}"
        elif lo is None:
            need = f"{'less than' if hi_open else 'at most'} {_fmt(hi, unit)}"
        else:
            left = "(" if lo_open else "["
            right = ")" if hi_open else "]"
            need = f"in {left}{_fmt(lo)}, {_fmt(hi)}{right}{' ' + unit if unit else ''}"
        raise InputError(
            f"must be {need}, got {_fmt(value, unit)}{_tail(unit, hint)}", owner=owner, field=field
        )
    return v


def check_int(owner: str | None, field: str, value, lo: int | None = None, hi: int | None = None, *,
              hint: str | None = None) -> int:
    """A whole number in ``[lo, hi]`` (either bound may be None)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        else:
            raise InputError(
                f"expected a whole number, got {value!r}{_tail(None, hint)}", owner=owner, field=field
            )
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        if hi is None:
            need = f"at least {lo}"
        elif lo is None:
            need = f"at most {hi}"
        else:
            need = f"between {lo} and {hi}"
        raise InputError(f"must be {need}, got {value}{_tail(None, hint)}", owner=owner, field=field)
    return value


def check_choice(owner: str | None, field: str, value, choices, *, hint: str | None = None):
    """``value`` must be one of ``choices``."""
    if value not in tuple(choices):
        raise InputError(f"must be one of {', '.join(map(str, choices))}, got {value!r}{_tail(None, hint)}",
                         owner=owner, field=field)
    return value


def check_file_size(path, max_bytes: int, what: str = "this kind of file") -> int:
    """Refuse a file bigger than ``max_bytes`` before it is read (a plan, a track, a session is
    small; a huge one would take the memory of its parse). Returns the size in bytes. A missing
    file or one that is not a regular file is left to the reader, which names it."""
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return 0
    if size > max_bytes:
        raise InputError(
            f"{path}: {format_bytes(size)} is too big for {what} (at most {format_bytes(max_bytes)}); "
            "is it the right file?"
        )
    return size


# ----- memory -------------------------------------------------------------------------------

def physical_memory() -> int | None:
    """Bytes of physical memory, or None when the platform does not say."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return int(pages) * int(size)
    except (ValueError, OSError, AttributeError):
        pass
    try:  # pragma: no cover - Windows / macOS without sysconf
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001
        return None


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
          "TIB": 1 << 40}


def _parse_bytes(text: str) -> float | None:
    s = text.strip().upper().replace(" ", "")
    if s in ("", "0", "NONE", "OFF", "INF"):
        return None
    num = s.rstrip("KMGTIB")
    unit = s[len(num):]
    try:
        value = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        raise InputError(f"expected a size such as 8G or 500M (or 0 for no limit), got {text!r}",
                         field=BUDGET_ENV) from None
    if not value > 0:
        return None
    return value


def memory_budget(budget_bytes: float | None = None) -> float | None:
    """The allocation budget in bytes (None: no limit): ``budget_bytes`` if given, else
    ``LAGRANGE_MEMORY_BUDGET``, else 25 % of physical memory."""
    if budget_bytes is not None:
        return float(budget_bytes) if budget_bytes > 0 else None
    env = os.environ.get(BUDGET_ENV)
    if env is not None:
        return _parse_bytes(env)
    total = physical_memory()
    return None if total is None else DEFAULT_BUDGET_FRACTION * total


def format_bytes(n: float) -> str:
    """``1.5 GiB``-style text."""
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_allocation(what: str, n_elements, bytes_per: int = 8, *, budget_bytes: float | None = None,
                     override_flag: str | None = None, allow: bool = False, hint: str | None = None,
                     field: str | None = None) -> float:
    """Refuse an allocation of ``n_elements`` x ``bytes_per`` above the memory budget.

    ``what`` names the thing to be made in plain words (``"the resampled log (2e12 samples
    x 3 channels)"``); ``override_flag`` is the flag (or form control) that lets a big job
    through, named in the message with the budget variable; ``allow=True`` skips the check;
    ``field`` optionally names the field or flag that set the size. Returns the estimate in bytes.
    """
    try:
        estimate = float(n_elements) * float(bytes_per)
    except (TypeError, ValueError, OverflowError):
        estimate = math.inf
    if not estimate >= 0:  # NaN
        estimate = math.inf
    if allow:
        return estimate
    budget = memory_budget(budget_bytes)
    if budget is None or estimate <= budget:
        return estimate
    how = [f"pass {override_flag} if the machine really has the memory"] if override_flag else []
    how.append(
        f"or set {BUDGET_ENV} (e.g. 64G)" if how else f"set {BUDGET_ENV} (e.g. 64G) to raise the budget"
    )
    advice = f"; {hint}" if hint else ""
    raise InputError(f"{what} would need about {format_bytes(estimate)} of memory, more than the budget of "
                     f"{format_bytes(budget)}{advice}; {' '.join(how)}", field=field)


# ----- output paths ---------------------------------------------------------------------------

def check_output_path(path, kind: str = "file", flag: str = "--out", *, allow_existing: bool = True,
                      allow_nonempty_folder: bool = False) -> Path:
    """Check before the work starts that ``path`` can be written; returns it as a Path.

    ``kind="file"``: not an existing folder; an existing file is replaced only with
    ``allow_existing``. ``kind="folder"``: not an existing file; an existing folder that is
    not empty is refused unless ``allow_nonempty_folder``. In both cases the nearest existing
    parent must be a folder we can write into (missing parents are made by the save).
    Messages name ``path`` as the user gave it, and the flag.
    """
    if kind not in ("file", "folder"):
        raise ValueError(f"kind must be 'file' or 'folder', got {kind!r}")
    given = str(path)
    if not given.strip():
        raise InputError("is empty; give a path to write to", field=flag)
    p = Path(path).expanduser()
    if kind == "file":
        if p.is_dir():
            raise InputError(
                f"{given} is a folder; give a file name (e.g. {Path(given) / 'out'})", field=flag
            )
        if p.exists() or p.is_symlink():
            if not allow_existing:
                raise InputError(f"{given} already exists; remove it or choose another name", field=flag)
            if not p.is_file():
                raise InputError(f"{given} exists and is not a regular file; choose another name", field=flag)
            if not os.access(p, os.W_OK):
                raise InputError(f"{given} exists and is read-only; choose another name", field=flag)
        where = p.parent
    else:
        if p.exists() and not p.is_dir():
            raise InputError(f"{given} is a file, not a folder; give a folder name", field=flag)
        if p.is_dir():
            if not allow_nonempty_folder and any(p.iterdir()):
                raise InputError(f"{given} is a folder that is not empty; choose a new or empty folder",
                                 field=flag)
            if not _writable(p):
                raise InputError(f"cannot write into {given} (permission denied); choose another folder",
                                 field=flag)
            return p
        where = p.parent
    # the nearest existing ancestor must be a folder we may write into
    anc = where if str(where) else Path(".")
    while not anc.exists():
        if anc.is_symlink():
            raise InputError(f"cannot create {given}: {anc} is a broken link", field=flag)
        parent = anc.parent
        if parent == anc:
            break
        anc = parent
    if not anc.is_dir():
        raise InputError(f"cannot create {given}: {anc} is a file, not a folder", field=flag)
    if not _writable(anc):
        raise InputError(f"cannot write to {given}: the folder {anc} is not writable; choose another place",
                         field=flag)
    return p


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder`` (tried: ``os.access`` says yes to root on
    read-only mounts and in /proc)."""
    import tempfile

    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError:
        return False
    return True
