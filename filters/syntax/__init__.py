"""Syntax validation: tree-sitter parse, masks for grammar gaps, balance and shell checks."""
