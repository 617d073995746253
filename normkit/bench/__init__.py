"""Benchmark harness: ``python -m normkit.bench --help``.

Cases and bytes model: ``cases.py``; providers: ``providers.py``; command line: ``__main__.py``.
"""
