"""The child process that expands a xacro file, in a sandbox (run by :mod:`engine.robots.xacro_loader`).

A xacro file is a program: its ``${...}`` expressions are Python, and the ``xacro`` package
evaluates them with ``eval`` behind a filter of names that start with ``__``, which a payload of
builtins gets through. This module runs as its own process (``python -I xacro_worker.py``; it
imports nothing from the engine, so the child starts in a tenth of a second), reads a JSON
request on stdin and writes a JSON answer on stdout. Inside the child it changes what xacro may do:

- every ``${...}`` expression (and ``$(eval ...)``) is parsed with :mod:`ast` and evaluated by a
  small interpreter (:func:`restricted_eval`) that knows numbers, strings, lists, dicts and
  tuples, arithmetic, comparisons, boolean logic, conditionals, comprehensions, the file's own
  properties and arguments, the ``math`` functions and the few safe builtins xacro exposes
  (``len``, ``str``, ``float``, ``min``...). Attribute access is limited to xacro's namespaces
  (``math.pi``, ``xacro.load_yaml``, an included file's ``ns``), YAML data (``cfg.arm.length``)
  and a list of plain string, list and dict methods; a name or attribute that starts with ``_``,
  a call of anything else, a lambda or an assignment is refused, whatever its name;
- ``<xacro:include>`` and ``xacro.load_yaml`` read only files inside the robot's folders: the
  ROS package that holds the file (the nearest folder above it with a ``package.xml``; without
  one, the file's own folder) and the packages that ``$(find pkg)`` or ``package://`` resolved;
- ``$(env ...)`` and ``$(optenv ...)`` are refused (a robot file reads no environment);
- ``$(find pkg)`` looks for ``pkg`` as ROS does without ROS installed: a folder named ``pkg`` with a
  ``package.xml`` above the file or beside one of the folders above it, a folder named ``pkg`` in
  (or one level below) an entry of ``ROS_PACKAGE_PATH``, and installed description packages;
- the result is refused when it has more than ``max_links`` links or ``max_bytes`` of text, and
  the process's memory is capped at ``memory_bytes`` (where the system allows it).

The parent adds the time limit (it kills the child). Request: ``{"path", "args", "package_roots",
"max_links", "max_bytes", "memory_bytes"}``; answer: ``{"ok": true, "urdf", "warnings"}`` or
``{"ok": false, "message", "file", "element"}``.
"""

from __future__ import annotations

import ast
import builtins
import json
import math
import operator
import os
import re
import sys
from typing import TypeVar

__all__ = ["Refused", "expand", "install_sandbox", "main", "restricted_eval"]

EXPRESSION_RULE = ("a xacro expression may use numbers, strings, the file's own properties and "
                   "arguments, arithmetic, comparisons and math functions only")
MAX_WARNINGS_CHARS = 4000

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}

# methods of plain values an expression may call (none of them reaches another object)
_STR_METHODS = frozenset("""capitalize center count endswith find index isalnum isalpha isdigit islower
    isnumeric isspace isupper join ljust lower lstrip partition replace rfind rindex rjust rpartition rsplit
    rstrip split splitlines startswith strip swapcase title upper zfill""".split())
_LIST_METHODS = frozenset({"count", "index"})
_DICT_METHODS = frozenset({"get", "items", "keys", "values"})
_NUMBER_ATTRIBUTES = frozenset({"real", "imag", "conjugate", "is_integer"})
# xacro's python namespace holds these too: they hand out classes and object internals
_REMOVED_BUILTINS = ("type", "vars")


class _Withheld:
    """What a builtin that hands out classes or object internals (``type``, ``vars``) becomes in
    the sandbox's symbol table: a value that any use refuses, by name."""

    def __init__(self, name: str):
        self.name = name


_E = TypeVar("_E", bound=BaseException)


class Refused(Exception):
    """Something a xacro file asked for that the sandbox does not allow (or cannot find).

    ``message`` is the whole plain-language reason; ``element`` is the expression or element."""

    def __init__(self, message: str, element: str | None = None):
        super().__init__(message)
        self.message = message
        self.element = element
        self.file: str | None = None


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------ expressions

class _Evaluator:
    """Evaluates one parsed expression over ``lookup(name)`` (the xacro symbol table)."""

    def __init__(self, lookup, allowed_callables: set[int], namespace_types: tuple, yaml_dict_type, wrap):
        self.lookup = lookup
        self.allowed = allowed_callables
        self.namespace_types = namespace_types
        self.yaml_dict_type = yaml_dict_type
        self.wrap = wrap
        self.scopes: list[dict] = []

    # values --------------------------------------------------------------------------
    def _checked(self, value, what: str):
        if isinstance(value, _Withheld):
            raise Refused(f"the function {value.name!r}")
        if isinstance(value, self.namespace_types):
            raise Refused(f"using a namespace ({what}) as a value")
        if callable(value) and not self._is_allowed_callable(value):
            raise Refused(f"{what} is not a function an expression may use")
        return value

    def _is_allowed_callable(self, f) -> bool:
        if id(f) in self.allowed:
            return True
        owner = getattr(f, "__self__", None)
        name = getattr(f, "__name__", "")
        if type(f).__name__ != "builtin_function_or_method" or owner is None:
            return False
        return ((isinstance(owner, str) and name in _STR_METHODS)
                or (isinstance(owner, list) and name in _LIST_METHODS)
                or (isinstance(owner, dict) and not isinstance(owner, self.namespace_types)
                    and name in _DICT_METHODS)
                or (isinstance(owner, (int, float)) and name in _NUMBER_ATTRIBUTES))

    def _name(self, name: str, namespace_ok: bool = False):
        if name.startswith("_"):
            raise Refused(f"the name {name!r} (a name that starts with '_')")
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        try:
            value = self.lookup(name)
        except KeyError:
            raise NameError(f"name '{name}' is not defined") from None
        if namespace_ok and isinstance(value, self.namespace_types):
            return value
        return self._checked(value, f"the name {name!r}")

    def _attribute(self, obj, attr: str, namespace_ok: bool = False):
        if attr.startswith("_"):
            raise Refused(f"the attribute {attr!r} (a name that starts with '_')")
        if isinstance(obj, self.namespace_types):          # math.pi, xacro.load_yaml, an include's ns
            try:
                value = obj[attr]
            except KeyError:
                raise NameError(f"name '{attr}' is not defined") from None
            if namespace_ok and isinstance(value, self.namespace_types):
                return value
            return self._checked(value, f"the name {attr!r}")
        if isinstance(obj, self.yaml_dict_type) and attr not in _DICT_METHODS:   # cfg.arm.length
            try:
                return self.wrap(dict.__getitem__(obj, attr))
            except KeyError:
                raise AttributeError(f"The yaml dictionary has no key '{attr}'") from None
        allowed = (
            (isinstance(obj, str) and attr in _STR_METHODS)
            or (isinstance(obj, list) and attr in _LIST_METHODS)
            or (isinstance(obj, dict) and attr in _DICT_METHODS)
            or (isinstance(obj, (int, float)) and not isinstance(obj, bool) and attr in _NUMBER_ATTRIBUTES)
        )
        if not allowed:
            raise Refused(f"the attribute {attr!r} of a {type(obj).__name__}")
        return getattr(obj, attr)

    # nodes ---------------------------------------------------------------------------
    def eval(self, node):
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise Refused(f"Python syntax {type(node).__name__!r}")
        return method(node)

    def _Expression(self, node):
        return self.eval(node.body)

    def _Constant(self, node):
        if not isinstance(node.value, (int, float, complex, str, bool, type(None))):
            raise Refused(f"the constant {type(node.value).__name__}")
        return node.value

    def _Name(self, node):
        return self._name(node.id)

    def _namespace_or_value(self, node):
        if isinstance(node, ast.Name):
            return self._name(node.id, namespace_ok=True)
        if isinstance(node, ast.Attribute):
            return self._attribute(self._namespace_or_value(node.value), node.attr, namespace_ok=True)
        return self.eval(node)

    def _Attribute(self, node):
        return self._attribute(self._namespace_or_value(node.value), node.attr)

    def _BinOp(self, node):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Refused(f"the operator {type(node.op).__name__}")
        return op(self.eval(node.left), self.eval(node.right))

    def _UnaryOp(self, node):
        return _UNARY[type(node.op)](self.eval(node.operand))

    def _BoolOp(self, node):
        value = None
        for operand in node.values:
            value = self.eval(operand)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _Compare(self, node):
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node):
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def _items(self, nodes):
        out = []
        for n in nodes:
            if isinstance(n, ast.Starred):
                out.extend(self._checked_items(self.eval(n.value)))
            else:
                out.append(self.eval(n))
        return out

    def _checked_items(self, iterable):
        return [self._checked(v, "an unpacked value") for v in iterable]

    def _List(self, node):
        return self._items(node.elts)

    def _Tuple(self, node):
        return tuple(self._items(node.elts))

    def _Set(self, node):
        return set(self._items(node.elts))

    def _Dict(self, node):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def _Subscript(self, node):
        return self._checked(self.eval(node.value)[self.eval(node.slice)], "an item")

    def _Slice(self, node):
        return slice(*(None if n is None else self.eval(n) for n in (node.lower, node.upper, node.step)))

    def _JoinedStr(self, node):
        return "".join(str(self.eval(v)) for v in node.values)

    def _FormattedValue(self, node):
        value = self.eval(node.value)
        if node.conversion == ord("r"):
            value = repr(value)
        elif node.conversion == ord("a"):
            value = ascii(value)
        elif node.conversion == ord("s"):
            value = str(value)
        spec = self.eval(node.format_spec) if node.format_spec is not None else ""
        return format(value, spec)

    def _Call(self, node):
        func = self.eval(node.func)
        if not callable(func) or not self._is_allowed_callable(func):
            raise Refused("a call of something that is not an allowed function")
        args = self._items(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                extra = self.eval(kw.value)
                kwargs.update({str(k): self._checked(v, "an unpacked value") for k, v in dict(extra).items()})
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        return self._checked(func(*args, **kwargs), "a call's result")

    # comprehensions: [expr for target in iterable if cond ...]
    def _bind(self, target, value, scope):
        if isinstance(target, ast.Name):
            if target.id.startswith("_"):
                raise Refused(f"the name {target.id!r} (a name that starts with '_')")
            scope[target.id] = self._checked(value, f"the name {target.id!r}")
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = list(value)
            if len(values) != len(target.elts):
                raise ValueError(f"cannot unpack {len(values)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self._bind(t, v, scope)
        else:
            raise Refused(f"a comprehension target of type {type(target).__name__}")

    def _comprehension(self, generators, emit):
        def loop(index):
            if index == len(generators):
                emit()
                return
            gen = generators[index]
            if gen.is_async:
                raise Refused("an async comprehension")
            for value in self.eval(gen.iter):
                self._bind(gen.target, value, self.scopes[-1])
                if all(self.eval(cond) for cond in gen.ifs):
                    loop(index + 1)

        self.scopes.append({})
        try:
            loop(0)
        finally:
            self.scopes.pop()

    def _ListComp(self, node):
        out = []
        self._comprehension(node.generators, lambda: out.append(self.eval(node.elt)))
        return out

    _GeneratorExp = _ListComp

    def _SetComp(self, node):
        out = set()
        self._comprehension(node.generators, lambda: out.add(self.eval(node.elt)))
        return out

    def _DictComp(self, node):
        out = {}
        self._comprehension(
            node.generators, lambda: out.__setitem__(self.eval(node.key), self.eval(node.value))
        )
        return out


class _Sandbox:
    """The state of one expansion: the folders it may read and the xacro module it patched."""

    def __init__(self, xacro, top_file: str, package_roots: list[str]):
        self.xacro = xacro
        self.package_roots = [os.path.realpath(p) for p in package_roots if p]
        self.top_file = os.path.realpath(top_file)
        self.allowed_roots = [_own_package(self.top_file)]
        self.allowed_callables: set[int] = set()

    # files ---------------------------------------------------------------------------
    def current_file(self) -> str:
        stack = getattr(self.xacro, "filestack", None) or [None]
        return stack[-1] or self.top_file

    def inside(self, filename: str) -> bool:
        real = os.path.realpath(filename)
        return any(
            real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.allowed_roots
        )

    def check_readable(self, filename: str, what: str, reader: str | None = None) -> None:
        """Refuse ``filename`` outside the allowed folders (``reader``: the file that asks)."""
        if not self.inside(filename):
            folders = ", ".join(self.allowed_roots)
            shown = os.path.normpath(filename)
            real = os.path.realpath(filename)
            shown += f" (a link to {real})" if real != os.path.abspath(shown) else ""
            refusal = Refused(f"reads {shown}, outside the robot's folders ({folders}): not "
                              "allowed; a robot file reads only the files of its own package and of the "
                              "packages it finds with $(find pkg)", element=what)
            refusal.file = reader
            raise refusal

    def find_package(self, package: str) -> str:
        """The folder of ROS package ``package`` (see the module docstring); raises Refused."""
        if not package or "/" in package or package in (".", ".."):
            raise Refused("not a package name", element=f"$(find {package})")
        start = os.path.dirname(self.top_file)
        folders = []
        anc = start
        while True:
            for candidate in (anc, os.path.join(anc, package)):
                if os.path.basename(candidate) == package and os.path.isfile(
                    os.path.join(candidate, "package.xml")
                ):
                    folders.append(candidate)
            parent = os.path.dirname(anc)
            if parent == anc:
                break
            anc = parent
        for root in self.package_roots:
            candidates = [root, os.path.join(root, package)]
            try:
                candidates += [os.path.join(root, child, package) for child in sorted(os.listdir(root))]
            except OSError:
                pass
            folders += [c for c in candidates if os.path.basename(c) == package and os.path.isdir(c)]
        if not folders:
            raise Refused(
                f"no ROS package {package!r} was found. Make it findable: put the "
                f"robot in a folder named {package!r} holding a package.xml (the file, or a folder beside "
                f"one above it), or add the folder that holds {package!r} to ROS_PACKAGE_PATH",
                element=f"$(find {package})")
        folder = os.path.realpath(folders[0])
        if folder not in self.allowed_roots:
            self.allowed_roots.append(folder)
        return folder

    # expressions ---------------------------------------------------------------------
    def restricted_eval(self, expr, globals_, locals_=None):
        """xacro's ``safe_eval``, restricted (see :func:`restricted_eval`)."""
        text = expr.strip() if isinstance(expr, str) else str(expr)
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            raise
        table = locals_ if locals_ is not None else globals_

        def lookup(name):
            return table[name]

        evaluator = _Evaluator(
            lookup,
            self.allowed_callables,
            (self.xacro.Table,),
            self.xacro.YamlDictWrapper,
            self.xacro.YamlListWrapper.wrap,
        )
        try:
            return evaluator.eval(tree)
        except Refused as exc:
            if exc.element is None:
                exc.message = f"{exc.message} is not allowed: {EXPRESSION_RULE}"
                exc.element = "expression ${" + _one_line(text, 80) + "}"
            raise

    def eval_substitution(self, s, context):
        """``$(eval ...)``: the same restricted evaluation over the arguments and math."""
        from xacro.substitution_args import _eval_arg, convert_value

        args = context.setdefault("arg", {})
        functions = {"true": True, "false": False, "True": True, "False": False,
                     "arg": lambda name: convert_value(_eval_arg(name, args=args), "auto"),
                     "dirname": lambda: os.path.dirname(os.path.abspath(self.current_file())),
                     "find": self.find_package,
                     **{k: v for k, v in math.__dict__.items() if not k.startswith("_")},
                     **{k: getattr(builtins, k) for k in ("list", "dict", "map", "str", "float", "int")}}
        allowed = {id(v) for v in functions.values() if callable(v)}

        def lookup(name):
            if name in functions:
                return functions[name]
            return convert_value(args[name], "auto")

        evaluator = _Evaluator(lookup, allowed, (self.xacro.Table,), self.xacro.YamlDictWrapper,
                               self.xacro.YamlListWrapper.wrap)
        try:
            return str(evaluator.eval(ast.parse(s.strip(), mode="eval")))
        except Refused as exc:
            exc.message = f"{exc.message} is not allowed: {EXPRESSION_RULE}"
            exc.element = "$(eval " + _one_line(s, 80) + ")"
            raise


def _own_package(top_file: str) -> str:
    """The folder a xacro file may read: its ROS package (a package.xml above it), else its folder."""
    folder = os.path.dirname(top_file)
    anc = folder
    while True:
        if os.path.isfile(os.path.join(anc, "package.xml")):
            return anc
        parent = os.path.dirname(anc)
        if parent == anc:
            return folder
        anc = parent


def restricted_eval(expression: str, names: dict):
    """Evaluate ``expression`` as a xacro expression over ``names`` ({name: value}) with only the
    safe subset (see the module docstring); raises :class:`Refused` for anything else. A test hook:
    ``names``' callables are the allowed functions."""
    import xacro

    allowed = {id(v) for v in names.values() if callable(v)}
    evaluator = _Evaluator(names.__getitem__, allowed, (xacro.Table,), xacro.YamlDictWrapper,
                           xacro.YamlListWrapper.wrap)
    return evaluator.eval(ast.parse(expression.strip(), mode="eval"))


def install_sandbox(xacro, top_file: str, package_roots: list[str]) -> _Sandbox:
    """Patch the imported ``xacro`` module (in this process only) to evaluate safely."""
    from xacro import substitution_args

    box = _Sandbox(xacro, top_file, package_roots)
    original_load_yaml = xacro.load_yaml
    original_parse = xacro.parse

    def load_yaml(filename):
        path = xacro.abs_filename_spec(str(filename))
        box.check_readable(path, f"xacro.load_yaml({str(filename)!r})")
        return original_load_yaml(path)

    def parse(inp, filename=None):
        if inp is None and filename is not None:
            name = str(filename)
            if "package://" in name:       # xacro joined it to the including file's folder
                package, _, rest = name[name.index("package://") + len("package://"):].partition("/")
                name = os.path.join(box.find_package(package), rest)
                if xacro.filestack and xacro.filestack[-1] == filename:
                    xacro.filestack[-1] = name
            path = os.path.join(xacro.root_dir, name)
            if os.path.realpath(path) != box.top_file:
                stack = xacro.filestack or []
                reader = stack[-2] if len(stack) >= 2 and stack[-1] == name else box.current_file()
                box.check_readable(path, f"<xacro:include filename={str(filename)!r}>", reader)
            return original_parse(None, name)
        return original_parse(inp, filename)

    def refusing(command):
        def refuse_env(name, *default, **_kw):
            raise Refused(f"reads the environment variable {name}: not allowed; a robot file reads no "
                          "environment: pass the value as an argument (name:=value) instead",
                          element=f"$({command} {name})")
        return refuse_env

    xacro.load_yaml = load_yaml
    xacro.parse = parse
    xacro.safe_eval = box.restricted_eval
    substitution_args._eval_env = refusing("env")
    substitution_args._eval_optenv = refusing("optenv")
    substitution_args._eval_find = box.find_package
    substitution_args._eval = box.eval_substitution
    # the symbol table captured load_yaml when xacro was imported: build it again over the patched one
    symbols = xacro.create_global_symbols()
    for name in _REMOVED_BUILTINS:
        for table in (symbols, symbols.get("python")):
            if isinstance(table, dict) and name in table:
                dict.__setitem__(table, name, _Withheld(name))
    xacro._global_symbols = symbols
    for value in symbols.values():
        if isinstance(value, xacro.Table):
            box.allowed_callables.update(id(v) for v in dict.values(value) if callable(v))
        elif callable(value):
            box.allowed_callables.add(id(value))
    return box


# ------------------------------------------------------------------------------ the process

def _find_in_chain(exc: BaseException | None, kind: type[_E]) -> _E | None:
    """The first exception of ``kind`` in ``exc`` and what it wraps (xacro's ``exc``, causes)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, kind):
            return exc
        exc = getattr(exc, "exc", None) or exc.__cause__ or exc.__context__
    return None


def _xacro_message(exc) -> str:
    """A XacroException's text without its repetitions ("<class 'NameError'>: x x" -> "NameError: x")."""
    head = re.sub(
        r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", str(exc.args[0]) if exc.args and exc.args[0] else ""
    )
    inner = "" if exc.exc is None or isinstance(exc.exc, OSError) and head else str(exc.exc)
    parts = [head, "" if inner and inner in head else inner, exc.suffix or ""]
    return " ".join(p for p in parts if p and p != "None")


def expand(request: dict) -> dict:
    """One expansion (in this process, which it patches): the answer as a dict."""
    import xacro

    path = str(request["path"])
    box = install_sandbox(xacro, path, list(request.get("package_roots") or []))
    mappings = {str(k): str(v) for k, v in (request.get("args") or {}).items()}
    try:
        doc = xacro.process_file(path, mappings=mappings)
        root = doc.documentElement
        links = sum(1 for n in root.childNodes if getattr(n, "tagName", None) == "link")
        max_links = int(request.get("max_links") or 0)
        if max_links and links > max_links:
            return {
                "ok": False,
                "file": path,
                "element": None,
                "message": f"the expanded robot has {links} links, more than the {max_links} a robot file "
                "may have here: a xacro whose macros expand without end, or a robot too large "
                "to load",
            }
        text = doc.toxml()
        max_bytes = int(request.get("max_bytes") or 0)
        if max_bytes and len(text) > max_bytes:
            return {"ok": False, "file": path, "element": None,
                    "message": f"the expanded robot is {len(text) / 1e6:.0f} MB of URDF text, more than the "
                               f"{max_bytes / 1e6:.0f} MB a robot file may have here"}
        return {"ok": True, "urdf": text}
    except Exception as exc:  # noqa: BLE001 - xacro raises assorted types; each becomes one line
        if _find_in_chain(exc, MemoryError) is not None:
            return {"ok": False, "file": path, "element": None,
                    "message": "expanding the file ran out of the memory a xacro expansion may use: a xacro "
                               "whose macros or expressions grow without end, or a robot too large to load"}
        if _find_in_chain(exc, RecursionError) is not None:
            return {"ok": False, "file": path, "element": None,
                    "message": "xacro could not expand the file: its macros or properties nest too deeply "
                               "(a macro that calls itself without end?)"}
        refusal = _find_in_chain(exc, Refused)
        if refusal is not None:
            return {"ok": False, "file": box.current_file() if refusal.file is None else refusal.file,
                    "element": refusal.element, "message": refusal.message}
        detail = (
            _xacro_message(exc) if isinstance(exc, xacro.XacroException) else f"{type(exc).__name__}: {exc}"
        )
        return {"ok": False, "file": path, "element": None,
                "message": "xacro could not expand the file: " + _one_line(detail, 400)}


def _limit_memory(limit: int) -> None:
    if not limit:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):   # not on this system: the time limit still holds
        pass


class _CappedText:
    """A text stream that keeps the first ``limit`` characters written to it (xacro's warnings)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0

    def write(self, text) -> int:
        text = str(text)
        if self.size < self.limit:
            self.parts.append(text[: self.limit - self.size])
            self.size += len(self.parts[-1])
        return len(text)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)


def main() -> int:
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    warnings = _CappedText(MAX_WARNINGS_CHARS)
    real_stdout = sys.stdout
    sys.stderr = sys.stdout = warnings          # xacro prints its warnings; they travel in the answer
    _limit_memory(int(request.get("memory_bytes") or 0))
    try:
        answer = expand(request)
    except MemoryError:
        answer = {"ok": False, "file": request.get("path"), "element": None,
                  "message": "expanding the file ran out of the memory a xacro expansion may use"}
    answer["warnings"] = warnings.text()
    real_stdout.buffer.write(json.dumps(answer).encode("utf-8"))
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
