"""Sphinx configuration of the sparsekernel documentation.

Build (from the repository's root, after ``pip install ".[docs]"``)::

    python -m sphinx -W -b html docs docs/_build/html

Environment variables read here:

``SPARSEKERNEL_DOCS_RUN_EXAMPLES``
    A regular expression (Python ``re.search`` on the example's path): the scripts of
    ``examples/`` it matches are executed by sphinx-gallery and their output and figures shown;
    the others are rendered as code only. Default: every example (about 10 s in all).
    ``tests/test_docs_build.py`` runs only ``probabilities.py`` (it draws a figure).
``SPARSEKERNEL_DOCS_EXAMPLES``
    The directory of the example scripts (default: ``examples/`` beside ``docs/``); the docs
    build test builds a copy of ``docs/`` in a temporary directory and points here.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path

import sparsekernel

DOCS = Path(__file__).resolve().parent
EXAMPLES = Path(os.environ.get("SPARSEKERNEL_DOCS_EXAMPLES", DOCS.parent / "examples")).resolve()
sys.path.insert(0, str(DOCS / "_ext"))

# A docstring numpydoc cannot parse cleanly (an unknown section, a malformed parameter list) is a
# Python warning inside numpydoc, which Sphinx's -W does not see: make it an error, so the build
# (and tests/test_docs_build.py) fails on it.
warnings.filterwarnings("error", category=UserWarning, module=r"numpydoc(\..*)?")

project = "sparsekernel"
author = "the sparsekernel developers"
copyright = "the sparsekernel developers"
release = sparsekernel.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5"]
root_doc = "index"
default_role = "literal"

# -- API reference: autosummary pages from the docstrings -------------------------------------------
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's __all__ is its public API
autosummary_imported_members = False
autodoc_typehints = "none"
autodoc_default_options: dict[str, object] = {}
numpydoc_show_class_members = False  # the class template lists the methods itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False


def _skip_foreign_member(app, what, name, obj, skip, options):
    """Document only what sparsekernel defines: the methods inherited from scikit-learn's
    BaseEstimator and mixins (get_params, set_output, set_fit_request, ...) are scikit-learn's, and
    their docstrings link into scikit-learn's own documentation."""
    if skip or name.startswith("_"):
        return True
    target = obj.fget if isinstance(obj, property) else obj
    module = getattr(target, "__module__", None)
    if what == "class" and callable(target) and module is not None and not module.startswith("sparsekernel"):
        return True
    return None


# The docstrings are written to read well in help() and an editor: plain text in which a fitted
# attribute (``dual_coef_``), a formula (``max_{i in I_-}``) or an absolute value (``|W|``) would be
# reST markup (a hyperlink reference, a substitution). After numpydoc has turned the sections into
# reST, the plain-text parts are escaped; literal blocks, doctest blocks, directives and anything
# between backquotes are left alone.
_MARKUP = re.compile(r"(``.*?``|:[\w:.+-]+:`[^`]*`|`[^`]*`_{0,2})")
_REFERENCE_END = re.compile(r"(?<=[\w)\]}])_(?=\W|$)")


def _escape_text(line):
    parts = _MARKUP.split(line)
    for i in range(0, len(parts), 2):  # the even parts lie outside backquotes
        parts[i] = _REFERENCE_END.sub(r"\\_", parts[i]).replace("|", r"\|")
    return "".join(parts)


def _plain_text_as_rest(lines):
    out = []
    block_indent = None  # indentation of the line that opened a literal block or a directive
    in_doctest = False
    for line in lines:
        text = line.lstrip()
        indent = len(line) - len(text)
        if block_indent is not None:
            if text and indent <= block_indent:
                block_indent = None
            else:
                out.append(line)
                continue
        if in_doctest:
            in_doctest = bool(text)
            out.append(line)
            continue
        if text.startswith(">>>"):
            in_doctest = True
            out.append(line)
        elif text.startswith(".. "):
            block_indent = indent
            out.append(line)
        else:
            if text.rstrip().endswith("::"):
                block_indent = indent
            out.append(_escape_text(line))
    return out


def _module_tables_as_literal(lines):
    """A module docstring's indented plain-text table (a name, then its description on the same and
    the following lines) is shown as written: a literal block."""
    out = []
    for k, line in enumerate(lines):
        previous = out[-1] if out else ""
        opens_block = line.startswith(" ") and line.strip() and not previous.strip() and k > 0
        if opens_block and not any(p.strip() for p in out[-1:]) and len(out) >= 2:
            before = out[-2]
            if before.strip() and not before.startswith(" ") and not before.rstrip().endswith("::"):
                out.extend(["::", ""])
        out.append(line)
    return out


def _docstring_as_rest(app, what, name, obj, options, lines):
    if what == "module":
        lines[:] = _module_tables_as_literal(lines)
    lines[:] = _plain_text_as_rest(lines)


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_member)
    app.connect("autodoc-process-docstring", _docstring_as_rest, priority=900)  # after numpydoc (500)


# -- The example gallery ---------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": [str(EXAMPLES)],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": os.environ.get("SPARSEKERNEL_DOCS_RUN_EXAMPLES", r"\.py$"),
    "ignore_pattern": r"__init__\.py",
    "reset_argv": "sparsekernel_docs.reset_argv",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_signature": False,
    "plot_gallery": "True",
    "min_reported_time": 1e9,  # no timing tables in the pages
    "write_computation_times": False,
}

# -- HTML -----------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sparsekernel {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "install": [], "benchmarks": [], "developer": []}

# the module template links a submodule's names that sparsekernel also exports to their one page
autosummary_context = {"toplevel": list(sparsekernel.__all__)}
