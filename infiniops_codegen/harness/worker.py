"""Harness worker: reads op names on stdin, answers one JSON line per op.

Run by `python -m infiniops_codegen.harness`, which restarts it when an op
kills it (see __main__.py).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import torch

from ..model import manifest
from ..base import platforms
from ..runtime import load
from . import report, skips, values


def main() -> None:
    warnings.filterwarnings("ignore")
    build = Path(os.environ["INFINIOPS_BUILD_DIR"])
    device = os.environ.get("INFINIOPS_HARNESS_DEVICE", "cpu")
    # A torch port's device (sim, npu, ...) exists once its module is imported.
    platforms.import_torch_module(device)
    module = load(build)
    by_name = manifest.of_build(build).by_name()
    skip_file = os.environ.get("INFINIOPS_HARNESS_SKIPS")
    skip_list = skips.harness_skips(Path(skip_file) if skip_file else None)
    torch.manual_seed(0)
    # --devices: every sample tensor (and so every reference) is made there.
    values.DEVICE = device
    for line in sys.stdin:
        if torch._C._is_torch_function_mode_enabled():
            raise RuntimeError(
                "a TorchFunctionMode is active: the library's calls would go to it"
            )
        name = line.strip()
        try:
            result = report.check_op(module, by_name[name], skip_list)
        except Exception as e:  # noqa: BLE001 - reported, the run goes on
            result = {
                "status": "error",
                "error": f"{type(e).__name__}: {e}",
                "cases": [],
            }
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
