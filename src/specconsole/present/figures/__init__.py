"""A trial's measured figures in words: progress and the ETA, repeats, the per-level table,
acceptance, GPU memory and power, what the draft costs."""
