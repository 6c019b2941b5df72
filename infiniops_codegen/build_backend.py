"""The PEP 517 backend and dynamic-metadata provider of a project's wheel, at
the path every `init` project's pyproject.toml names
(`build-backend = "infiniops_codegen.build_backend"`). The backend is
toolchain/wheel.py; this module is its fixed public name."""

from .toolchain.wheel import (  # noqa: F401 - the hooks pip and scikit-build-core call
    build_editable,
    build_sdist,
    build_wheel,
    dynamic_metadata,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    get_requires_for_dynamic_metadata,
    main,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

if __name__ == "__main__":
    main()
