# Installed as <name>/__init__.py of a library's wheel (infiniops-codegen's
# CMake project, INFINI_OPS_WHEEL; docs/packaging.md), beside the extension
# module <name>.<abi>.so, the records the loader reads and _runtime/, the
# loader itself (the tool's runtime/ and what it imports). `import <name>`
# runs this: the loader refuses a module built against another torch with an
# ImportError before the module is loaded, then the module stands in
# sys.modules for this package: `import <name>` gives the module itself.
import sys
from pathlib import Path

# Imported before the package leaves sys.modules: the loader's modules stay
# there as <name>._runtime.*.
from ._runtime.runtime import loader, observe, torch_ops  # noqa: F401

del sys.modules[__name__]  # load() puts the module there, and refuses another
loader.load(Path(__file__).resolve().parent)
