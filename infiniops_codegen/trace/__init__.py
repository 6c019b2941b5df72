"""`infiniops-codegen trace`: the ATen ops a script calls, against the specs.

Takes: a script, the op specs and schemas.
Gives: each op the script called marked as generated, in a spec, or not
(`marks`), recorded in a child process by `recorder` (a
`TorchDispatchMode`, standard library and torch only, run as a file).
"""
