"""Speed benchmarks (``make bench``): each ``bench_*.py`` module measures figures in one run."""
