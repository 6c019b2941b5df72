"""The run-time side: what runs inside a user's process.

Takes: a build directory or an installed package.
Gives: `load()` (`loader`), which checks the torch the module was built
against and imports it, and what it adds to the module: the `torch.ops`
registration (`torch_ops`) and the observation functions (`observe`).

It imports only itself and `base.locations`/`base.torch_build` (lazily the
project lookup and the sanitize record, which an installed package never
reaches), so a project's wheel ships a copy and imports without the tool
(tests/test_wheel_runtime.py, tests/test_import_contract.py).
"""

from .loader import load

__all__ = ["load"]
