# Written into the build directory as <name>/__init__.py by infiniops-codegen's
# CMake project (<name>: the library's). With the build directory on sys.path,
# `import <name>` finds this package before the extension module beside it (a
# package wins over a module of the same name in one directory), and loads the module through
# infiniops_codegen.runtime.load: so a module built against another torch is
# refused with an ImportError before it is loaded (docs/torch-releases.md). The
# module then stands in sys.modules for this package: `import <name>` gives
# the module itself.
import sys
from pathlib import Path

del sys.modules[__name__]  # load() puts the module there, and refuses another
try:
    from infiniops_codegen.runtime import load
except ImportError as e:
    raise ImportError(
        f"{Path(__file__).parent.parent} holds a {__name__} module built by "
        f"infiniops-codegen, which loads it; it is not importable here ({e}): "
        "pip install infiniops-codegen",
        name=__name__,
    ) from None
load(Path(__file__).resolve().parent.parent)
