"""The IR ladder and the memory planner (ir layer): blocks, ops, kernels, schedule."""
