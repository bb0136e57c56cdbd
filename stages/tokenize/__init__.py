"""Tokenization: the stage (stage.py) and tokenizer loading (tokenizer.py)."""
