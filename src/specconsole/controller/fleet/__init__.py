"""Several boxes at once: the pool's runtime, its boxes, and its console and headless drivers."""
