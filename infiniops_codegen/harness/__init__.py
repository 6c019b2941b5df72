"""`infiniops-codegen check`: every op of a built module against PyTorch.

Takes: a build directory (its manifest and module) and a skip file.
Gives: for each op, dtype and implementation, the module's result compared
with PyTorch's (`run`, over the samples of `samples` and the values of
`values`; each op in a worker process, `worker`, launched by `__main__`),
torch's OpInfo samples (`opinfo`), `torch.library.opcheck` on the dispatcher
ops (`opcheck`), the native-kernel fuzzer (`fuzz`, hypothesis), the skips
with their reasons (`skips`) and the report (`report`).
"""
