"""infiniops-codegen: PyTorch fallbacks for an operator library, generated
from YAML op specs."""

__version__ = "0.1.0"
