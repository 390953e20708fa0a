"""The docstring examples of the public API run and print what they show (doctest), and every public
estimator has one.

The public API is ``sparsekernel.__all__`` and the public submodules below: what the documentation's
API reference (docs/api/index.rst) shows. The examples are meant as a newcomer's first lines, so
they are small (scikit-learn's bundled data sets) and fast.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest
from sklearn.base import BaseEstimator

import sparsekernel

PUBLIC_MODULES = ["sparsekernel", "sparsekernel.model_selection", "sparsekernel.slmc", "sparsekernel.datasets",
                  "sparsekernel.io", "sparsekernel.export", "sparsekernel.plotting", "sparsekernel.dask",
                  "sparsekernel.metrics"]
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def public_names(module):
    """A module's public names: its ``__all__``, else the classes and functions it defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [name for name, value in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))
            and getattr(value, "__module__", None) == module.__name__]


def public_objects():
    """(qualified name, object) of every public class and function, each object once."""
    seen = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isroutine(obj):
                seen.setdefault(id(obj), (f"{module_name}.{name}", obj))
    return list(seen.values())


def collect_doctests():
    """The doctests of the public modules' docstrings and of the public objects (with their methods)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for test in finder.find(module, module_name, globs={}):
            if test.name == module_name:  # the module's own docstring; its objects come below
                tests.setdefault(test.name, test)
    for name, obj in public_objects():
        module = inspect.getmodule(obj)
        for test in finder.find(obj, name, module=module, globs={}):
            tests.setdefault(test.name, test)
    return [tests[name] for name in sorted(tests) if tests[name].examples]


DOCTESTS = collect_doctests()
# the estimators of the top-level namespace (the paper baselines of sparsekernel.slmc are not held to it)
ESTIMATORS = [(f"sparsekernel.{name}", getattr(sparsekernel, name)) for name in sparsekernel.__all__
              if inspect.isclass(getattr(sparsekernel, name)) and issubclass(getattr(sparsekernel, name), BaseEstimator)]


def test_the_public_api_is_collected():
    names = {name for name, _ in public_objects()}
    for name in sparsekernel.__all__:
        obj = getattr(sparsekernel, name)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            assert any(n.rsplit(".", 1)[1] == name for n in names), name
    expected = {"sparsekernel.SVC", "sparsekernel.SVR", "sparsekernel.NSSVC", "sparsekernel.SLMC",
                "sparsekernel.SparseKFD", "sparsekernel.KernelLogisticRegression",
                "sparsekernel.SparseKernelLogisticRegression", "sparsekernel.PathSearchCV"}
    assert expected <= {name for name, _ in ESTIMATORS}
    assert len(DOCTESTS) >= len(expected)


@pytest.mark.parametrize("name,cls", ESTIMATORS, ids=[name for name, _ in ESTIMATORS])
def test_estimator_has_an_example(name, cls):
    doc = inspect.getdoc(cls) or ""
    assert "Examples\n--------\n" in doc, f"{name}'s docstring has no numpydoc Examples section"
    section = doc.split("Examples\n--------\n", 1)[1]
    assert ">>> " in section, f"{name}'s Examples section has no >>> lines"
    assert any(test.name == name for test in DOCTESTS), f"doctest finds no example for {name}"


@pytest.mark.parametrize("test", DOCTESTS, ids=[test.name for test in DOCTESTS])
def test_docstring_examples(test):
    output = []
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    result = runner.run(test, out=output.append, clear_globs=True)
    assert result.attempted > 0
    assert result.failed == 0, "".join(output)
