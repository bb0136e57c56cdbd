"""Language identification: fastText for text (text.py), a file-type table for code (code.py)."""
