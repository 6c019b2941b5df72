"""Stage 4, build time: generated sources compiled into a module.

Takes: a generation (`render`) and the project's native kernels.
Gives: a built module in a build directory (`builder`: generate, configure
the tool's CMake project in `support/`, compile, smoke-test), the cached
bridge objects (`bridge_cache`), the CUDA toolkit the configure uses
(`cuda_toolkit`), a failed link said as the kernel signature to write
(`link_errors`), and a project's wheel (`wheel`, the PEP 517 backend behind
`infiniops_codegen.build_backend`).
"""
