"""Command-line helpers of the benchmark scripts (standard library only: bench_scaling parses its
arguments before it pins its cores and imports numpy)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def csv_list(kind: Callable[[str], object], allowed=None):
    """An argparse type: a comma-separated list of ``kind`` values, each in ``allowed`` if given."""
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if allowed is not None:
            unknown = sorted(set(items) - set(allowed))
            if unknown:
                raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {list(allowed)}")
        return [kind(t) for t in items]
    return parse
