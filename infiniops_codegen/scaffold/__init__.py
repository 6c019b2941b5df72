"""`infiniops-codegen init`: a new project, ready to build.

Takes: a directory and a library name.
Gives: the project's files (`init`), from the templates of `templates/`.
"""

from .._moved import forward

# `from infiniops_codegen.scaffold import X`, X of the old scaffold.py, for a release.
__getattr__ = forward(__name__, "init")
