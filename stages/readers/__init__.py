"""Input readers: each turns one kind of input into document tables."""
