"""Stage 1, generate time: what the installed torch says an op is.

Takes: torchgen's `native_functions.yaml` of the installed torch.
Gives: small picklable schema records (`records`), cached per torch release
(`db`), and the argument kinds (`arg_kinds`): one typed record per kind of
argument, the only place that knows a kind's name (the model, the
templates, the manifest reader, the harness and the bench read it).
"""
