"""The ``export`` extra: what its modules need beyond the core, and the one error naming it."""

from __future__ import annotations

import importlib

EXTRA_HINT = 'pip install "sparsekernel[export]"'


def require(*modules):
    """Import ``modules`` (top-level names) or raise one ImportError naming the ``export`` extra."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(f"sparsekernel.export needs {', '.join(missing)} (the 'export' extra): {EXTRA_HINT}")
