"""python -m infiniops_codegen.cli: the same as the `infiniops-codegen` command."""

from . import main

main()
