"""Put on PYTHONPATH by scripts/gpu_check.sh only when `infiniops-codegen
bench` has no --device option: with INFINIOPS_DEFAULT_DEVICE set, every
Python process of the run (the bench and its workers) makes its tensors on
that device."""

import os

_device = os.environ.get("INFINIOPS_DEFAULT_DEVICE")
if _device:
    import torch

    torch.set_default_device(_device)
