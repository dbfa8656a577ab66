"""Benchmarks: each measures against a baseline run in the same process; none asserts."""
