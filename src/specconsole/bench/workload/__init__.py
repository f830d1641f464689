"""What a benchmark sends: the prompt sets and datasets."""
