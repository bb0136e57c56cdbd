"""Mixing and packing: token-budget plan, selection, split, Megatron .bin/.idx packing."""
