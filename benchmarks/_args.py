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


def add_store_options(p: argparse.ArgumentParser, quick_help: str) -> None:
    """The options every benchmark with a results store takes: --force, --quick, --data-dir."""
    from pathlib import Path

    p.add_argument("--force", action="store_true", help="redo cells already stored")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--data-dir", type=Path, default=None,
                   help="data directory (default: $SPARSEKERNEL_DATA or /work/shared/data)")


def parse_cores(p: argparse.ArgumentParser, text: str) -> set[int]:
    """--cores "0,1" as a set of CPU ids (an argparse error when malformed)."""
    try:
        return {int(c) for c in text.split(",") if c.strip()}
    except ValueError:
        p.error(f"bad --cores {text!r}")
