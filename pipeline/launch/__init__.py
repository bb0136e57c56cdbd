"""The Megatron-LM launcher (not a stage): render, check and run pretrain_gpt.py."""
