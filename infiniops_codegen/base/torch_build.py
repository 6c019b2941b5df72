"""Which torch build: the one installed, and the one a build's module is
linked against (its record). A module built against one torch build loads
into no other, so runtime.load compares the two before it loads a module
(docs/torch-releases.md).

A torch build is named as torch names itself: `torch.__version__` (with its
local part, `2.14.1+cu130`) and the CUDA or ROCm version it was built with.
It is read without importing torch (~1 s): from `torch/version.py`, or from
the torch module when it is already imported.

Standard library only, and light: `import infiniops` from a build directory
runs it before loading the module (support/python/module_init.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


class TorchBuild:
    """One build of torch: what a module built against it loads into."""

    __slots__ = ("version", "cuda", "hip")

    def __init__(self, version: str, cuda: str | None = None, hip: str | None = None):
        self.version = version  # torch.__version__, e.g. "2.14.1+cu130"
        self.cuda = cuda  # torch.version.cuda: "13.0" on a CUDA build
        self.hip = hip  # torch.version.hip: on a ROCm build

    def _key(self) -> tuple:
        return (self.version, self.cuda, self.hip)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TorchBuild) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"TorchBuild{self._key()!r}"

    @property
    def release(self) -> tuple[int, ...]:
        return release(self.version)

    @property
    def variant(self) -> str:
        if self.cuda:
            return f"CUDA {self.cuda}"
        if self.hip:
            return f"ROCm {self.hip}"
        return "CPU"

    def __str__(self) -> str:
        return f"{self.version} ({self.variant})"

    def as_json(self) -> dict:
        return {"version": self.version, "cuda": self.cuda, "hip": self.hip}

    @classmethod
    def from_json(cls, data: object) -> "TorchBuild":
        """ValueError when data is not a record of a torch build."""
        if not isinstance(data, dict) or not isinstance(data.get("version"), str):
            raise ValueError("no torch 'version'")
        for key in ("cuda", "hip"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ValueError(f"'{key}' is not a string")
        # "" and None both say: no CUDA (or ROCm)
        return cls(data["version"], data.get("cuda") or None, data.get("hip") or None)


def release(version: str) -> tuple[int, ...]:
    """(major, minor, patch, ...) of a version string: `2.14.1+cu130` ->
    (2, 14, 1); a pre-release or local part is ignored."""
    numbers = []
    for part in version.split("+", 1)[0].split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
        if digits.end() != len(part):  # "0a0", "0rc1": the release ends here
            break
    return tuple(numbers)


def read_version_py(path: Path) -> TorchBuild | None:
    """The build torch's version.py describes (the file torch.version is);
    None when the file is missing or names no version."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    values: dict[str, str | None] = {}
    for line in text.splitlines():
        m = re.match(
            r"^(__version__|cuda|hip)\s*(?::[^=]*)?=\s*(None|'[^']*'|\"[^\"]*\")\s*$",
            line.strip(),
        )
        if m:
            value = m.group(2)
            values[m.group(1)] = None if value == "None" else value[1:-1]
    if not values.get("__version__"):
        return None
    return TorchBuild(values["__version__"], values.get("cuda"), values.get("hip"))


def installed() -> TorchBuild | None:
    """The torch this interpreter imports (or has imported), without
    importing it; None when there is none."""
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None) if torch is not None else None
    if version is not None and getattr(torch, "__version__", None):
        return TorchBuild(
            str(torch.__version__),
            getattr(version, "cuda", None) or None,
            getattr(version, "hip", None) or None,
        )
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    for directory in (spec.submodule_search_locations or []) if spec else []:
        found = read_version_py(Path(directory) / "version.py")
        if found is not None:
            return found
    return None


def read_record(path: Path) -> TorchBuild | None:
    """A build's record of its torch (written when the module is linked);
    None when there is none (a build older than the record). ValueError
    naming the file when it cannot be read as one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"{path}: cannot read it: {e}") from None
    try:
        return TorchBuild.from_json(json.loads(text))
    except ValueError as e:  # json.JSONDecodeError is one
        raise ValueError(f"{path}: not a record of a torch build: {e}") from None
