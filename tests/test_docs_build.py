"""The documentation site builds without a warning, and the README is what a newcomer needs.

``test_docs_build`` runs Sphinx with ``-W`` (a warning is an error: a broken page, a broken
reference, a docstring numpydoc cannot read) on a copy of docs/ in a temporary directory, with
sphinx-gallery executing ``examples/probabilities.py`` only (the docs' conf.py reads
SPARSEKERNEL_DOCS_RUN_EXAMPLES; the other examples are shown as code, and tests/test_examples.py
runs them all). The README tests keep the commands CI and users rely on and run its code blocks.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import sparsekernel

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
DOCS_COMMAND = 'pip install ".[docs]" && python -m sphinx -W -b html docs docs/_build/html'
MAIN_JOB_COMMAND = "pip install . && sparsekernel compare breast_cancer"


def _ci_test_command():
    """The command .ci/run runs as "the README's test command" (without its output plumbing)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line.strip() == "# the README's test command")
    return lines[k + 1].split(" 2>&1")[0].strip()


def test_docs_build(tmp_path):
    import numpydoc  # noqa: F401  the docs tools are in the test extra: missing, the test fails
    import pydata_sphinx_theme  # noqa: F401
    import sphinx  # noqa: F401
    import sphinx_gallery  # noqa: F401

    source = tmp_path / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build", "auto_examples", "generated",
                                                                   "sg_execution_times.rst"))
    env = dict(os.environ, SPARSEKERNEL_DOCS_EXAMPLES=str(ROOT / "examples"),
               SPARSEKERNEL_DOCS_RUN_EXAMPLES=r"probabilities\.py$", MPLBACKEND="Agg")
    html = tmp_path / "html"
    out = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(tmp_path / "doctrees"), str(source), str(html)],
                         capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert out.returncode == 0, (out.stdout + out.stderr)[-6000:]

    # every public name has its API page, every public module its page
    generated = html / "api" / "generated"
    for name in sparsekernel.__all__:
        assert (generated / f"sparsekernel.{name}.html").is_file(), name
    for module in ("model_selection", "slmc", "datasets", "io", "export", "plotting", "dask"):
        assert (generated / f"sparsekernel.{module}.html").is_file(), module
    svc_page = (generated / "sparsekernel.SVC.html").read_text()
    assert "Examples" in svc_page and "load_iris" in svc_page and "decision_function" in svc_page
    # the user guide: a page per method, each citing its paper
    papers = {"svm": "Conjugate SMO", "klr": "A Fast Dual Algorithm for Kernel", "sparse_klr": "sparsity-inducing",
              "nssvm": "Sparse SVM for Sufficient Data Reduction", "slmc": "A Direct Method for Building Sparse",
              "model_selection": "PathSearchCV"}
    for page, title in papers.items():
        assert title in (html / "user_guide" / f"{page}.html").read_text(), page
    for page in ("benchmarks", "developer", "install", "quickstart", "references"):
        assert (html / f"{page}.html").is_file(), page
    # the gallery: every example has a page; the one that ran shows its output and its figure
    for script in (ROOT / "examples").glob("*.py"):
        assert (html / "auto_examples" / f"{script.stem}.html").is_file(), script.name
    ran = (html / "auto_examples" / "probabilities.html").read_text()
    assert "argmax(proba) = predict" in ran
    assert list((html / "_images").glob("sphx_glr_probabilities_001.png"))


def _load_conf():
    """The docs' conf.py as a namespace (it installs a warnings filter: kept inside the caller's
    catch_warnings)."""
    return runpy.run_path(str(DOCS / "conf.py"))


def test_numpydoc_parse_problems_fail_the_build():
    from numpydoc.docscrape import NumpyDocString

    broken = "Summary line.\n\nParameters\n----------\nx : int\n\nExamplez\n--------\n>>> 1\n"
    with warnings.catch_warnings():
        _load_conf()
        with pytest.raises(UserWarning, match="Unknown section"):
            NumpyDocString(broken)


def test_plain_docstring_text_is_escaped_for_rest():
    with warnings.catch_warnings():
        conf = _load_conf()
    lines = ["The fitted dual_coef_ and intercept_ give f; max_{i in I_-} |W| of ``support_``.",
             ":class:`SVC` keeps `kkt_gap_`.",
             "",
             ">>> model.dual_coef_ | 0",
             "array(...)",
             "",
             "Formula::",
             "",
             "    a_ + |b|"]
    out = conf["_plain_text_as_rest"](lines)
    assert out[0] == r"The fitted dual_coef\_ and intercept\_ give f; max\_{i in I\_-} \|W\| of ``support_``."
    assert out[1] == lines[1]  # roles and backquoted text untouched
    assert out[3:] == lines[3:]  # doctest and literal blocks untouched


def test_readme_first_screen():
    text = README.read_text()
    assert _ci_test_command() == 'python -m pip install ".[test]" && python -m pytest -q tests -p no:cacheprovider'
    for command in (_ci_test_command(), MAIN_JOB_COMMAND, DOCS_COMMAND):
        assert f"\n    {command}\n" in text, command  # verbatim, as an indented code line
    lines = text.splitlines()
    first_install = next(i for i, line in enumerate(lines) if MAIN_JOB_COMMAND in line)
    example_end = next(i for i, line in enumerate(lines) if line.startswith("## Quick start"))
    assert first_install < 40 and example_end <= 40, "the first screen: what it is, the commands, an example"
    intro = text.split("\n\n")[1]  # the paragraph under the title
    assert not re.search(r"\beqs?\.|\(\d+\)|Table \d", intro), "no equation numbers up front"
    assert "shared/docs" not in text and "DESIGN.md" not in text
    for name in ("SVC", "SVR", "KernelLogisticRegression", "SparseKernelLogisticRegression", "NSSVC", "SLMC",
                 "PathSearchCV"):
        assert f"from sparsekernel import {name}" in text or f", {name}" in text, name


def _python_blocks(text, rst=False):
    if rst:
        blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text)
        return ["\n".join(line[3:] for line in block.splitlines()) for block in blocks]
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("path", ["README.md", "docs/quickstart.rst"])
def test_quick_start_code_runs(path, tmp_path):
    blocks = _python_blocks((ROOT / path).read_text(), rst=path.endswith(".rst"))
    assert len(blocks) >= 7, blocks  # an opening block and one per estimator family
    code = "\n".join(blocks) + "\nprint('quick start ran')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "quick start ran" in out.stdout
