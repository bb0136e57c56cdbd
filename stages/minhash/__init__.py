"""MinHash near-deduplication: the stage (stage.py) and one module per phase."""
