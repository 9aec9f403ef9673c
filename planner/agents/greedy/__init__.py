"""GREE and GREE-L: the greedy placer and its packing helpers."""
