"""Stage 1, generate time: the op specs read and checked.

Takes: the project's `op_specs/*.yaml` and `--extension` directories.
Gives: located spec entries (`entries.read_specs`), every mistake a
`SpecError(path, line, col, message)`; the extension manifests
(`extensions`); the checks of a composite's `reference` and of the calls of
its body against `uses:` (`references`, `composite_calls`).
"""
