"""The correctness harness: every op of a built module against PyTorch."""
