"""cmx: MLX's array framework design in C, with a Python package mirroring
``mlx``: ``import cmx.core as mx`` gives the arrays, ops, devices and
streams; ``cmx.utils`` has the tree utilities."""
