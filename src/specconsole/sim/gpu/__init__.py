"""The simulated box's GPUs: the state the simulator's processes write and the box's nvidia-smi that
reads it."""
