"""What a finished run shows and ships: the report (report.py, plots.py), the dataset
card (card.py), the Hub upload (hub.py) and the rewriting of local paths in every
published file (public.py)."""
