"""The compiler (ir layer): record -> blocks -> ops -> kernels -> schedule, and the planner."""
