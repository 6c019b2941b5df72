"""Stage 3, generate time: the model as text, written.

Takes: an `OpSet` (`model`).
Gives: `{relative path: text}` from the Jinja2 templates of `templates/`
(`sources`; the Python signature and the torch library registrations are
renderings of their own: `python_signature`, `torch_library`), written
atomically, stale files removed, `--check` (`writer`); what a torch release
changes against a generation (`drift`); the stages in order (`pipeline`).
"""

from .._moved import forward

# `from infiniops_codegen.render import X`, X of the old render.py, for a release.
__getattr__ = forward(__name__, "sources")
