"""Helpers of the documentation build (importable by name from conf.py's sphinx-gallery settings)."""

from __future__ import annotations

import tempfile
from pathlib import Path


def reset_argv(gallery_conf, script_vars):
    """Command-line arguments of an example run by sphinx-gallery.

    ``probabilities.py`` draws its reliability diagram when given a file name: it gets one in a
    temporary directory (the gallery shows the open figure; the file itself is not used)."""
    if Path(script_vars["src_file"]).name == "probabilities.py":
        return [str(Path(tempfile.gettempdir()) / "sparsekernel-docs-reliability.png")]
    return []
