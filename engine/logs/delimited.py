"""CSV / TSV / any-delimiter text logs: sniffed delimiter, one header row, ``#`` comments.

The file is read in blocks of ``chunk_bytes`` (progress and cancellation between blocks);
each block is parsed by pandas' C parser (or, without pandas, line by line in Python), and a
block that does not parse cleanly is re-read line by line to name the exact line and column
at fault. Rules:

- lines whose first non-blank character is ``#`` and blank lines are skipped;
- the first other line is the header (if every field of it is a number, the file has no
  header and the columns are called ``col1``, ``col2``...);
- the delimiter is sniffed from the first lines (tab, ``;``, ``,``, ``|``, else runs of
  whitespace) unless given; with ``;`` and decimal commas (``1,5``) the decimal is ``,``;
- a cell must be a number; empty cells and ``nan``/``NA``/``null`` are missing values (NaN);
- every data line has as many fields as the header.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from pathlib import Path

import numpy as np

from engine.logs.errors import LogError
from engine.logs.table import LogTable

__all__ = ["DELIMITER_CANDIDATES", "MISSING_STRINGS", "check_delimiter", "parse_cell", "read_delimited",
           "require_regular_file"]

DELIMITER_CANDIDATES = ("\t", ";", ",", "|")
MISSING_STRINGS = ("", "nan", "NaN", "NAN", "NA", "na", "N/A", "null", "NULL", "None")
_MISSING = frozenset(MISSING_STRINGS)
_SNIFF_LINES = 50
_DELIMITER_NAMES = {"\t": "tab", ";": "semicolon", ",": "comma", "|": "pipe", None: "whitespace"}


_DELIMITER_ALIASES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|",
                      "space": "ws", "whitespace": "ws"}


def check_delimiter(delimiter: str | None) -> str | None:
    """The delimiter as the reader uses it (``"tab"`` and ``\\t`` mean a tab; ``"ws"`` runs of
    whitespace), or a LogError naming ``--delimiter`` for anything else than one character."""
    if delimiter is None:
        return None
    d = _DELIMITER_ALIASES.get(delimiter, delimiter)
    if d in ("ws", " "):
        return d
    if len(d) != 1 or d in "\"\r\n#" or d.isalnum() or d in ".-+":
        raise LogError(f"--delimiter: {delimiter!r} cannot separate fields; give one character such as "
                       ", ; | or tab, or 'ws' for runs of whitespace (or leave it out to detect it)")
    return d


def require_regular_file(path: Path) -> os.stat_result:
    """``os.stat`` of ``path``, refusing pipes, devices and sockets (opening a FIFO would hang)
    before anything opens it; LogError if it is missing or not a regular file."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LogError("file not found", path=path) from None
    except OSError as exc:
        raise LogError(f"cannot read the file ({exc.strerror or exc})", path=path) from None
    if not stat.S_ISREG(st.st_mode):
        what = ("a folder" if stat.S_ISDIR(st.st_mode) else "a named pipe" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise LogError(f"{what}, not a log file; save the log to a regular file and open that", path=path)
    return st


def parse_cell(cell: str, decimal: str = ".") -> float:
    """One cell as a float (missing -> NaN); raises ValueError for anything else."""
    s = cell.strip()
    if s in _MISSING:
        return float("nan")
    if decimal != ".":
        if "." in s:
            raise ValueError(s)
        s = s.replace(decimal, ".")
    if "_" in s:  # Python's float() accepts 1_000, pandas does not
        raise ValueError(s)
    return float(s)


def _split(line: str, sep: str | None) -> list[str]:
    if sep is None:
        return line.split()
    return next(csv.reader([line], delimiter=sep, skipinitialspace=True), [])


def _sniff(sample: list[str]) -> str | None:
    """Pick the delimiter that splits every sampled line into the same number (>1) of fields."""
    for d in DELIMITER_CANDIDATES:
        counts = {line.count(d) for line in sample}
        if len(counts) == 1 and next(iter(counts)) > 0:
            return d
    counts = {len(line.split()) for line in sample}
    if len(counts) == 1 and next(iter(counts)) > 1:
        return None
    totals = {d: sum(line.count(d) > 0 for line in sample) for d in DELIMITER_CANDIDATES}
    best = max(DELIMITER_CANDIDATES, key=lambda d: totals[d])
    if totals[best] > 0:
        return best
    return None if any(len(line.split()) > 1 for line in sample) else ","


def _decimal_commas(lines: list[str]) -> bool:
    """True when ``;``-separated data cells use decimal commas (``1,5``) and no points."""
    try:
        return any("," in c and "." not in c for line in lines for c in _split(line, ";"))
    except csv.Error:  # the line is diagnosed later
        return False


def _utf16_encoding(head: bytes) -> str | None:
    """``"utf-16"`` (with a byte-order mark), ``"utf-16-le"``/``"utf-16-be"`` (without one, when
    every other byte of mostly-ASCII text is zero), or None: not UTF-16 text."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and not head.startswith(b"\xff\xfe\x00\x00"):
        return "utf-16"
    n = len(head) - len(head) % 2
    if n < 4:
        return None
    even, odd = head[0:n:2], head[1:n:2]

    def text(b: bytes) -> bool:
        return all(c in (9, 10, 13) or 32 <= c < 127 for c in b)

    if odd.count(0) == len(odd) and text(even):
        return "utf-16-le"
    if even.count(0) == len(even) and text(odd):
        return "utf-16-be"
    return None


def _blocks(fh, size: int, chunk_bytes: int, path: Path):
    """Yield ``(first_line_number, lines, bytes_done)`` with lines split on any newline."""
    leftover = b""
    line_no = 1
    done = 0
    first = True
    decoder = None  # UTF-16 text is decoded block by block and parsed as UTF-8
    while True:
        data = fh.read(chunk_bytes)
        done += len(data)
        eof = not data
        if first:
            encoding = _utf16_encoding(data[:8192])
            if encoding is not None:
                decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
            elif b"\x00" in data[:8192]:
                raise LogError("binary file, not delimited text (is it .npz, .parquet or a bag?)",
                               path=path)
            elif data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            first = False
        if decoder is not None:
            try:
                decoded = decoder.decode(data, final=eof)
            except UnicodeDecodeError as exc:
                raise LogError(
                    f"not valid UTF-16 text ({exc.reason} near byte {done - len(data) + exc.start}); "
                    "save the file as UTF-8",
                    path=path,
                ) from None
            if "\x00" in decoded:
                raise LogError("binary file, not delimited text (is it .npz, .parquet or a bag?)", path=path)
            data = decoded.encode("utf-8")
        buf = leftover + data
        if eof:
            block, leftover = buf, b""
        else:
            cut = buf.rfind(b"\n")
            if cut < 0:
                leftover = buf
                continue
            block, leftover = buf[:cut + 1], buf[cut + 1:]
        if block:
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad_line = line_no + block.count(b"\n", 0, exc.start)
                col = exc.start - (block.rfind(b"\n", 0, exc.start) + 1) + 1
                raise LogError(f"not UTF-8 text (byte 0x{block[exc.start]:02x} at character {col}); "
                               "save the file as UTF-8", path=path, line=bad_line) from None
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            yield line_no, lines, done
            line_no += len(lines)
        if eof:
            return


def _diagnose(lines, numbers, sep, names, decimal, path) -> LogError | None:
    """Find the first line in ``lines`` that has a wrong field count or a non-numeric cell."""
    ncols = len(names)
    for line, no in zip(lines, numbers):
        if sep is not None and line.count('"') % 2:
            return LogError("unbalanced double quote", path=path, line=int(no))
        try:
            fields = _split(line, sep)
        except csv.Error as exc:
            return LogError(f"cannot split the line into fields ({exc})", path=path, line=int(no))
        if len(fields) != ncols:
            if len(fields) < ncols:
                return LogError(f"the line has {len(fields)} fields but the header has {ncols}; "
                                "the first missing field is this column",
                                path=path, line=int(no), column=names[len(fields)])
            return LogError(f"the line has {len(fields)} fields but the header has {ncols} "
                            f"(extra field {ncols + 1}: {fields[ncols][:40]!r})", path=path, line=int(no),
                            column=ncols + 1)
        for name, cell in zip(names, fields):
            try:
                parse_cell(cell, decimal)
            except ValueError:
                return LogError(f"non-numeric cell {cell.strip()[:40]!r}", path=path, line=int(no),
                                column=name)
    return None


def _header_names(fields: list[str], notes: list[str], repeated: dict[str, list[str]]) -> list[str]:
    """Column names from the header fields: an empty field is named ``col<i>``; a name the
    header repeats is read as ``name_1``, ``name_2``... (every copy renamed, the first too, so
    that a mapping asking for ``name`` is refused rather than given one copy silently)."""
    raw = []
    for i, field_ in enumerate(fields):
        name = field_.strip()
        if not name:
            name = f"col{i + 1}"
            notes.append(f"header field {i + 1} is empty: named {name!r}")
        raw.append(name)
    counts: dict[str, int] = {}
    for name in raw:
        counts[name] = counts.get(name, 0) + 1
    taken = set(raw)                  # a new name never equals any header name, repeated or not
    names: list[str] = []
    copies: dict[str, int] = {}
    fields_of: dict[str, list[tuple[int, str]]] = {}
    for i, name in enumerate(raw):
        if counts[name] > 1:
            k = copies.get(name, 0) + 1
            while f"{name}_{k}" in taken:
                k += 1
            copies[name] = k
            new = f"{name}_{k}"
            taken.add(new)
            fields_of.setdefault(name, []).append((i + 1, new))
            name = new
        names.append(name)
    for name, read_as in fields_of.items():
        repeated[name] = [n for _, n in read_as]
        notes.append(f"the header repeats column {name!r} (fields {', '.join(str(f) for f, _ in read_as)}): "
                     f"read as {', '.join(repr(n) for _, n in read_as)}; map the one you mean")
    return names


def _parse_block_python(lines, numbers, sep, names, decimal, path) -> np.ndarray:
    """The same parse without pandas (slower): used when pandas is not installed."""
    err = _diagnose(lines, numbers, sep, names, decimal, path)
    if err is not None:
        raise err
    return np.array([[parse_cell(c, decimal) for c in _split(line, sep)] for line in lines],
                    dtype=np.float64).reshape(len(lines), len(names))


def _parse_block(lines, numbers, sep, names, decimal, path) -> np.ndarray:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        return _parse_block_python(lines, numbers, sep, names, decimal, path)

    ncols = len(names)
    if sep is None:
        counts_ok = all(len(line.split()) == ncols for line in lines)
    else:
        counts_ok = all(line.count(sep) == ncols - 1 for line in lines)
    if not counts_ok:  # may still be fine when a quoted field holds the delimiter
        err = _diagnose(lines, numbers, sep, names, decimal, path)
        if err is not None:
            raise err
    try:
        frame = pd.read_csv(
            io.StringIO("\n".join(lines)), sep=r"\s+" if sep is None else sep, header=None,
            names=list(range(ncols)), index_col=False, dtype=np.float64, engine="c",
            keep_default_na=False, na_values=list(MISSING_STRINGS), skipinitialspace=True,
            skip_blank_lines=False, decimal=decimal)
        values = frame.to_numpy(dtype=np.float64)
    except Exception as exc:  # noqa: BLE001 - pandas raises several types; find the line ourselves
        err = _diagnose(lines, numbers, sep, names, decimal, path)
        raise (err or LogError(f"cannot parse lines {numbers[0]} to {numbers[-1]} ({exc})",
                               path=path)) from None
    if values.shape != (len(lines), ncols):
        err = _diagnose(lines, numbers, sep, names, decimal, path)
        raise err or LogError(f"cannot parse lines {numbers[0]} to {numbers[-1]} (expected "
                              f"{len(lines)} rows of {ncols} fields)", path=path)
    return values


def read_delimited(path: str | os.PathLike, ctx=None, *, delimiter: str | None = None,
                   chunk_bytes: int = 1 << 20) -> LogTable:
    """Read a delimited text log into a :class:`LogTable` (or raise :class:`LogError`).

    ``ctx`` is an optional job context (``progress``/``check_cancelled``), called after
    every block of ``chunk_bytes`` bytes. ``delimiter`` overrides sniffing (``"ws"`` or
    ``" "`` means runs of whitespace).
    """
    path = Path(path)
    delimiter = check_delimiter(delimiter)
    try:
        size = require_regular_file(path).st_size
        fh = open(path, "rb")  # noqa: SIM115 - closed by the ``with fh`` below
    except OSError as exc:
        raise LogError(f"cannot open the file ({exc.strerror or exc})", path=path) from None
    if size == 0:
        fh.close()
        raise LogError("the file is empty", path=path)
    sep = None if delimiter in ("ws", " ") else delimiter
    fixed = delimiter is not None
    notes: list[str] = []
    repeated: dict[str, list[str]] = {}
    names: list[str] | None = None
    decimal = "."
    chunks: list[np.ndarray] = []
    line_chunks: list[np.ndarray] = []
    rows = 0
    with fh:
        for first_no, lines, done in _blocks(fh, size, chunk_bytes, path):
            if ctx is not None:
                ctx.check_cancelled()
            keep = [i for i, line in enumerate(lines)
                    if line.strip() and not line.lstrip().startswith("#")]
            if not keep:
                continue
            kept = [lines[i] for i in keep]
            numbers = np.asarray(keep, dtype=np.int64) + first_no
            if names is None:
                header, kept, numbers = kept[0], kept[1:], numbers[1:]
                header_no = int(first_no + keep[0])
                sample = kept[:_SNIFF_LINES] or [header]
                if not fixed:
                    sep = _sniff(sample)
                notes.append(f"delimiter: {_DELIMITER_NAMES.get(sep, repr(sep))}")
                try:
                    fields = _split(header, sep)
                except csv.Error as exc:
                    raise LogError(f"cannot split the header ({exc})", path=path, line=header_no) from None
                if sep == ";" and _decimal_commas(kept[:5]):
                    decimal = ","
                    notes.append("decimal separator: comma")
                numeric = True
                for cell in fields:
                    try:
                        parse_cell(cell, decimal)
                    except ValueError:
                        numeric = False
                        break
                if numeric and fields and all(c.strip() for c in fields):
                    names = [f"col{i + 1}" for i in range(len(fields))]
                    notes.append(f"no header row (line {header_no} is numeric): columns named col1...")
                    kept = [header] + kept
                    numbers = np.concatenate([[header_no], numbers])
                else:
                    names = _header_names(fields, notes, repeated)
                if not names:
                    raise LogError("the header row has no fields", path=path, line=header_no)
            if kept:
                chunks.append(_parse_block(kept, numbers, sep, names, decimal, path))
                line_chunks.append(numbers)
                rows += len(kept)
            if ctx is not None:
                ctx.progress(min(done / size, 1.0) * 0.99, f"reading {path.name}: {rows} rows")
    if names is None:
        raise LogError("the file has no header and no data (only comments or blank lines)", path=path)
    if rows == 0:
        raise LogError("the file has a header but no data rows", path=path)
    values = np.concatenate(chunks, axis=0) if len(chunks) > 1 else chunks[0]
    row_lines = np.concatenate(line_chunks) if len(line_chunks) > 1 else line_chunks[0]
    table = LogTable(columns=names, data={n: values[:, i] for i, n in enumerate(names)},
                     source=str(path), format="tsv" if sep == "\t" else "csv", notes=notes,
                     row_lines=row_lines, repeated=repeated)
    if ctx is not None:
        ctx.progress(1.0, f"read {path.name}: {rows} rows x {len(names)} columns")
    return table
