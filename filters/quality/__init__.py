"""Quality rules: code (The Stack / StarCoder) and text (Gopher, C4, FineWeb)."""
