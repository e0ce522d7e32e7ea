"""``python -m benchmarks``: see :mod:`benchmarks.cli`."""
from .cli import bench

bench(prog_name="python -m benchmarks")
