"""Benchmarks: recall quality on LoCoMo, recall latency against size, server throughput."""
