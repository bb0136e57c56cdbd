"""Decontamination: the stage (stage.py) and the benchmark loaders (benchmarks.py)."""
