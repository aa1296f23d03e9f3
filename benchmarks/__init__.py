"""Benchmarks and the realistic workload they run on (``python -m benchmarks.workload``)."""
