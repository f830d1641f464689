"""The simulated box's physics: the memory plan and speed model, resolved launch arguments,
acceptance, the adaptive mode, latency and the rate model."""
