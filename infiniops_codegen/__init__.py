"""infiniops-codegen: PyTorch fallbacks for an operator library, generated
from YAML op specs."""

__version__ = "0.1.0"

from . import _moved

_moved.install()  # old module paths, for one release (_moved.MOVED)
