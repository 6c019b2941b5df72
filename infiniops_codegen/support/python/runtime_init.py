# Installed as <name>/_runtime/__init__.py of a library's wheel (the tool's
# CMake project, INFINI_OPS_WHEEL): infiniops-codegen's modules that load a
# built module (runtime/ and the base/ modules it imports), in their folders, copied as they are, so that
# the package imports without the tool installed.
