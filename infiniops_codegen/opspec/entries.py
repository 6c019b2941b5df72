"""Reading op spec files into validated, located entries (no torchgen here).

Structure and value types are checked here; whether an ATen overload exists
and how its arguments map is decided in `resolve`.
"""

from __future__ import annotations

import difflib
import keyword
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.errors import SpecError
from ..base.dtypes import spec_dtypes
from ..base.platforms import platform_names
from ..base.torch_release import Range, parse_range
from ..base.yaml_nodes import Node, load_yaml

TOP_KEYS = ("ops", "settings")
OP_KEYS = (
    "aten",
    "name",
    "rename",
    "native",
    "hints",
    "signature",
    "fallback",
    "uses",
    "reference",
    "like",
)
# Setting name -> (Python type, default, check, what a valid value is).
SETTINGS = {
    "shard_size": (int, 64, lambda v: v >= 1, "an integer of at least 1"),
    # Call at::cpu::<op>_out directly (no dispatcher) for plain CPU tensors.
    "direct_cpu": (bool, True, lambda v: True, "true or false"),
}
SETTING_KEYS = tuple(SETTINGS)


@dataclass(frozen=True)
class Where:
    path: str
    line: int
    col: int

    def error(self, message: str) -> SpecError:
        return SpecError(self.path, self.line, self.col, message)


@dataclass(frozen=True)
class NativeSpec:
    platform: str
    dtypes: tuple[str, ...]
    # Per dtype: the kernel is the default only up to this many elements
    # (None: any size); an explicit implementation="native" ignores it.
    up_to: tuple[int | None, ...] = ()


@dataclass(frozen=True)
class HintSet:
    """One mapping of harness hints, for the torch releases in `torch`."""

    torch: Range | None  # None: every release
    values: tuple[tuple[str, object], ...]  # (key, value), sorted by key
    places: dict[str, Where] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class OpSpec:
    source: str  # "op_specs/llm.yaml", recorded in generated files
    where: Where  # the entry itself
    aten: str | None = None
    name: str | None = None
    signature: str | None = None
    fallback: str | None = None
    fallback_line: int = 0  # composites: the spec line of the body's first line
    reference: str | None = None  # composites: Python expression for the harness
    extension: str = ""  # the extension the spec comes from ("": the project)
    uses: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()
    native: tuple[NativeSpec, ...] = ()
    # The harness hints as written: one mapping, or several each for a range
    # of torch releases (`torch: ">=2.14"`); `hints` is the one that applies
    # to the installed torch, chosen when the schemas are resolved
    # (resolve.with_hints_for).
    hint_sets: tuple[HintSet, ...] = ()
    hints: tuple[tuple[str, object], ...] = ()
    # composites: output -> the input it is allocated like (same shape, dtype,
    # device) in a call without out=
    like: tuple[tuple[str, str], ...] = ()
    # Positions of sub-values, for errors found later (key -> Where).
    places: dict[str, Where] = field(default_factory=dict, compare=False)

    def at(self, key: str) -> Where:
        return self.places.get(key, self.where)


@dataclass(frozen=True)
class SpecSet:
    ops: tuple[OpSpec, ...]
    shard_size: int
    sources: tuple[str, ...]
    direct_cpu: bool = True
    # Harness hints for ops only `--ops all` builds (ALL_HINTS_FILE), by ATen
    # overload; each an OpSpec with `aten` and `hints`, located.
    all_hints: tuple[OpSpec, ...] = ()


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def _unknown_dtype(word: str, known) -> str:
    """The message for a dtype name the specs do not know: the close ones,
    then every valid name (`fp32` is close to none of them)."""
    return f"unknown dtype '{word}'{_suggest(word, known)}; the dtypes: " + ", ".join(
        sorted(known)
    )


class _Reader:
    """Validates one file's node tree, collecting every problem it finds."""

    def __init__(
        self, display: str, source: str, errors: list[SpecError], text: str = ""
    ):
        self.display = display
        self.source = source
        self.errors = errors
        # The file's lines as YAML counts them (for body_line).
        self.lines = re.split(r"\r\n|[\r\n\x85\u2028\u2029]", text)

    def where(self, node: Node) -> Where:
        return Where(self.display, node.line, node.col)

    def fail(self, node: Node, message: str) -> None:
        self.errors.append(self.where(node).error(message))

    def expect(self, node: Node, kind: str, what: str) -> bool:
        if node.kind == kind and not (kind == "scalar" and node.value is None):
            return True
        got = {"mapping": "a mapping", "list": "a list"}.get(node.kind)
        if got is None:
            got = "empty" if node.value is None else type(node.value).__name__
        self.fail(node, f"{what} must be {_ARTICLE[kind]}, got {got}")
        return False

    def string(self, node: Node, what: str, one_line: bool = True) -> str | None:
        """A non-empty string; `one_line` (names, overloads, platforms,
        dtypes) also rejects a plain scalar YAML joined from several lines."""
        if node.kind == "scalar" and isinstance(node.value, str) and node.value.strip():
            if one_line and node.fold is not None:
                self.folded(node)
                return None
            return node.value
        got = "empty" if node.value in (None, "") else type(node.value).__name__
        if node.kind != "scalar":
            got = f"a {node.kind}"
        self.fail(node, f"{what} must be a non-empty string, got {got}")
        return None

    def folded(self, node: Node) -> None:
        """Report a name YAML read from several lines, at the line that
        continues it: almost surely an indentation mistake."""
        fold = node.fold
        joined = " ".join(node.value.split())  # one line, as YAML folds it
        if fold.item:
            both = "both" if fold.lines == 2 else f"these {fold.lines} lines"
            message = (
                "this list item is indented more than the item above it, so "
                f"YAML read {both} as one name '{joined}'; indent it like "
                "the item above"
            )
        else:
            message = (
                f"this line continues the name on line {node.line}, so YAML "
                f"read them as one name '{joined}'; a name must fit on "
                "one line (fix the indentation, or start a new item with '- ')"
            )
        self.errors.append(SpecError(self.display, fold.line, fold.col, message))

    def check_keys(self, node: Node, allowed, what: str) -> None:
        for key, key_node in node.keys.items():
            if key not in allowed:
                self.fail(
                    key_node, f"unknown key '{key}' in {what}{_suggest(key, allowed)}"
                )

    def identifier(self, node: Node, what: str) -> str | None:
        text = self.string(node, what)
        if text is None:
            return None
        if not text.isidentifier() or keyword.iskeyword(text):
            self.fail(node, f"{what} '{text}' is not a valid Python identifier")
            return None
        return text

    # -- entries --------------------------------------------------------

    def op(self, node: Node) -> OpSpec | None:
        if node.kind == "scalar":  # bulk form: just the ATen overload name
            aten = self.string(node, "an op entry")
            return OpSpec(self.source, self.where(node), aten=aten) if aten else None
        if not self.expect(node, "mapping", "an op entry"):
            return None
        self.check_keys(node, OP_KEYS, "an op entry")
        v = node.value
        places = {k: self.where(n) for k, n in v.items()}
        fields: dict = {}
        for key in ("aten", "signature", "fallback", "reference"):
            if key in v:
                # Signatures, bodies and expressions may span lines.
                fields[key] = self.string(v[key], f"'{key}'", one_line=key == "aten")
        if "name" in v:
            fields["name"] = self.identifier(v["name"], "'name'")
        if "uses" in v:
            fields["uses"] = self.string_list(v["uses"], "'uses'")
        if "rename" in v:
            fields["rename"] = self.rename(v["rename"])
        if "like" in v:
            fields["like"] = self.rename(v["like"], "'like'", "the input to allocate")
        if "native" in v:
            fields["native"] = self.native(v["native"])
        if "hints" in v:
            fields["hint_sets"] = self.hint_sets(v["hints"], "'hints'")
        if "fallback" in v:
            fields["fallback_line"] = self.body_line(v["fallback"])
        ok = self.shape(node, fields)
        # A bad string value was reported above; the entry must not reach the
        # resolver without it (no 'aten' nor 'signature', a None body).
        strings = ("aten", "signature", "fallback", "reference")
        if any(k in v and fields.get(k) is None for k in strings):
            ok = False
        fields = {k: x for k, x in fields.items() if x is not None}
        spec = OpSpec(self.source, self.where(node), places=places, **fields)
        return spec if ok else None

    def body_line(self, node: Node) -> int:
        """The line of a body's first text line: a block scalar (`|`, `>`)
        starts on the line after its indicator, any other on its own."""
        line = self.lines[node.line - 1] if node.line <= len(self.lines) else ""
        block = line[node.col - 1 : node.col] in ("|", ">")
        return node.line + 1 if block else node.line

    def shape(self, node: Node, fields: dict) -> bool:
        """Either an ATen overload or a composite (signature + fallback)."""
        keys = node.value
        if "aten" in keys and "signature" in keys:
            self.fail(keys["signature"], "'aten' and 'signature' exclude each other")
            return False
        if "aten" in keys:
            for key in ("fallback", "uses", "reference", "like"):
                if key in keys:
                    self.fail(
                        keys[key],
                        f"'{key}' is only for composite ops (with 'signature')",
                    )
                    return False
            return True
        if "signature" in keys:
            if "fallback" not in keys:
                self.fail(node, "a composite op needs 'fallback' (the C++ body)")
                return False
            return True
        self.fail(
            node, "an op entry needs 'aten' (an ATen out= overload) or 'signature'"
        )
        return False

    def hint_sets(self, node: Node, what: str) -> tuple[HintSet, ...]:
        """Hints: a mapping (`{dim: [0, 1]}`), or a list of mappings each
        limited to a range of torch releases by its `torch` key (which a
        single mapping may have too): `[{torch: "<2.14", ...}, {torch:
        ">=2.14", ...}]`. The first whose range holds the installed torch
        applies."""
        if node.kind == "list":
            items = node.value
            if not items:
                self.fail(node, f"{what} must not be an empty list")
        elif self.expect(node, "mapping", what):
            items = [node]
        else:
            return ()
        result = []
        for item in items:
            if item is not node and not self.expect(
                item, "mapping", f"an item of {what}"
            ):
                continue
            torch = None
            if "torch" in item.value:
                try:
                    torch = parse_range(item.value["torch"].value)
                except ValueError as e:
                    self.fail(item.value["torch"], str(e))
                    continue
            elif item is not node:
                self.fail(
                    item,
                    f"each item of a list of {what} needs 'torch', the range of "
                    'torch releases it is for (e.g. torch: ">=2.14")',
                )
                continue
            places = {"hints": self.where(item)}
            places.update({f"hints.{k}": self.where(n) for k, n in item.keys.items()})
            values = item.plain()
            values.pop("torch", None)
            result.append(HintSet(torch, tuple(sorted(values.items())), places))
        return tuple(result)

    def string_list(self, node: Node, what: str) -> tuple[str, ...]:
        if not self.expect(node, "list", what):
            return ()
        items = [self.string(n, f"an item of {what}") for n in node.value]
        return tuple(i for i in items if i)

    def rename(
        self, node: Node, what: str = "'rename'", value_is: str = "the new name of"
    ) -> tuple[tuple[str, str], ...]:
        """A mapping of names to names ('rename', 'like')."""
        if not self.expect(node, "mapping", what):
            return ()
        pairs = []
        for key, value in node.value.items():
            new = self.identifier(value, f"{value_is} '{key}'")
            if new:
                pairs.append((key, new))
        return tuple(pairs)

    def native(self, node: Node) -> tuple[NativeSpec, ...]:
        """`[cpu, nvidia]`, `{cpu: [float32, ...], nvidia: null}` or, with
        size limits, `{cpu: {float32: 16384, bfloat16: null}}`."""
        known = platform_names()
        entries: list[tuple[Node, Node | None]] = []
        if node.kind == "list":
            entries = [(n, None) for n in node.value]
        elif node.kind == "mapping":
            entries = [(node.keys[k], v) for k, v in node.value.items()]
        else:
            self.expect(node, "list", "'native'")
            return ()
        result = []
        for name_node, dtypes_node in entries:
            name = self.string(name_node, "a platform name")
            if name is None:
                continue
            if name not in known:
                self.fail(
                    name_node,
                    f"unknown platform '{name}'{_suggest(name, known)}; "
                    f"known platforms: {', '.join(known)}",
                )
                continue
            dtypes: tuple[str, ...] = ()
            up_to: tuple[int | None, ...] = ()
            if dtypes_node is not None and dtypes_node.kind == "mapping":
                dtypes, up_to = self.dtype_limits(dtypes_node, name)
            elif dtypes_node is not None and dtypes_node.value is not None:
                dtypes = self.dtypes(dtypes_node, name)
            result.append(NativeSpec(name, dtypes, up_to))
        return tuple(result)

    def dtype_limits(
        self, node: Node, platform: str
    ) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
        """`{float32: 16384, bfloat16: null}`: dtype -> max elements."""
        dtypes, limits = [], []
        known = spec_dtypes()
        for key, value in node.value.items():
            key_node = node.keys[key]
            if key not in known:
                self.fail(key_node, _unknown_dtype(key, known))
                continue
            limit = value.value
            if limit is not None and (
                not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
            ):
                self.fail(
                    value,
                    f"the size limit of '{key}' on '{platform}' must be a "
                    f"positive number of elements or null, got {limit!r}",
                )
                continue
            dtypes.append(key)
            limits.append(limit)
        return tuple(dtypes), tuple(limits)

    def dtypes(self, node: Node, platform: str) -> tuple[str, ...]:
        names = self.string_list(node, f"the dtypes of '{platform}'")
        good = []
        known = spec_dtypes()
        for n, item in zip(node.value, names):
            if item not in known:
                self.fail(n, _unknown_dtype(item, known))
            else:
                good.append(item)
        return tuple(good)

    def settings(self, node: Node) -> dict:
        """Setting name -> (value, where)."""
        if not self.expect(node, "mapping", "'settings'"):
            return {}
        self.check_keys(node, SETTING_KEYS, "'settings'")
        result = {}
        for key, (kind, _, valid, what) in SETTINGS.items():
            value = node.value.get(key)
            if value is None:
                continue
            ok_type = isinstance(value.value, kind) and (
                kind is bool or not isinstance(value.value, bool)
            )
            if ok_type and valid(value.value):
                result[key] = (value.value, self.where(value))
            else:
                self.fail(value, f"'{key}' must be {what}, got {value.value!r}")
        return result


_ARTICLE = {"mapping": "a mapping", "list": "a list", "scalar": "a value"}


def display_path(path: Path) -> str:
    """Path as shown in errors: relative to the working directory if inside."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def spec_files(spec_dir: Path) -> list[Path]:
    return sorted(p for p in spec_dir.iterdir() if p.suffix in (".yaml", ".yml"))


# Hints for the ops only `--ops all` adds, relative to the spec directory. A
# subdirectory, so the default set (every *.yaml directly in it) never reads it.
ALL_HINTS_FILE = Path("all") / "hints.yaml"


def read_all_hints(spec_dir: Path, errors: list[SpecError]) -> tuple[OpSpec, ...]:
    """`hints: {ATEN_OVERLOAD: {arg: [values], shapes: {...}, tensors: {...}}}`.

    Structure only; which overloads and argument names exist is checked
    against the schemas in `resolve`."""
    path = spec_dir / ALL_HINTS_FILE
    if not path.is_file():
        return ()
    display = display_path(path)
    source = f"{spec_dir.name}/{ALL_HINTS_FILE.as_posix()}"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        errors.append(SpecError(display, 1, 1, f"cannot read: {e}"))
        return ()
    root = load_yaml(text, display, errors)
    if root is None or root.value is None:
        return ()
    reader = _Reader(display, source, errors)
    if not reader.expect(root, "mapping", "a hints file"):
        return ()
    reader.check_keys(root, ("hints",), "a hints file")
    node = root.value.get("hints")
    if node is None or not reader.expect(node, "mapping", "'hints'"):
        return ()
    result = []
    for aten, value in node.value.items():
        key = node.keys[aten]
        sets = reader.hint_sets(value, f"the hints of '{aten}'")
        if sets:
            result.append(
                OpSpec(
                    source,
                    reader.where(key),
                    aten=aten,
                    hint_sets=sets,
                    places={"aten": reader.where(key), "hints": reader.where(value)},
                )
            )
    return tuple(result)


def read_specs(spec_dir: Path, errors: list[SpecError], extension: str = "") -> SpecSet:
    """Read every *.yaml in spec_dir (sorted by name, so order is stable).
    extension: the name of the extension spec_dir belongs to (its files are
    recorded as `<extension>/<dir>/<file>`; settings are the project's)."""
    ops: list[OpSpec] = []
    settings: dict = {}  # name -> (value, where)
    sources = []
    for path in spec_files(spec_dir):
        source = f"{spec_dir.name}/{path.name}"
        if extension:
            source = f"{extension}/{source}"
        sources.append(source)
        display = display_path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            errors.append(SpecError(display, 1, 1, f"cannot read: {e}"))
            continue
        root = load_yaml(text, display, errors)
        if root is None or root.value is None:
            continue
        reader = _Reader(display, source, errors, text)
        if not reader.expect(root, "mapping", "a spec file"):
            continue
        reader.check_keys(root, TOP_KEYS, "a spec file")
        if "ops" in root.value and reader.expect(root.value["ops"], "list", "'ops'"):
            for node in root.value["ops"].value:
                spec = reader.op(node)
                if spec is not None:
                    ops.append(
                        replace(spec, extension=extension) if extension else spec
                    )
        if "settings" in root.value and extension:
            node = root.keys["settings"]
            reader.fail(
                node, "settings belong to the project's specs, not to an extension"
            )
        elif "settings" in root.value:
            for key, (value, where) in reader.settings(root.value["settings"]).items():
                if key in settings:
                    first = settings[key][1]
                    errors.append(
                        where.error(
                            f"'{key}' is already set at {first.path}:{first.line}:{first.col}"
                        )
                    )
                else:
                    settings[key] = (value, where)
    value = {k: settings[k][0] if k in settings else d[1] for k, d in SETTINGS.items()}
    return SpecSet(
        tuple(ops), value["shard_size"], tuple(sources), direct_cpu=value["direct_cpu"]
    )
