"""The schedule's proof beyond the ladder: its edges, the engine's own adaptive mode, where
speculation stops paying, what the server ran, and another workload (issue 43)."""
