"""Every public name has a numpydoc docstring: a summary and, when it takes arguments, a
Parameters section (classes document their constructor's parameters)."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC = {
    "sparsekernel": None,  # __all__
    "sparsekernel.slmc": ["SLMC", "SparseKFD", "ReducedSetClassifier", "ReducedSVM"],
    "sparsekernel.io": ["save_model", "load_model", "read_header"],
    "sparsekernel.datasets": ["load_data", "list_datasets", "make_nssvm_gaussians", "iter_nssvm_gaussians"],
    "sparsekernel.export": None,
    "sparsekernel.dask": None,
    "sparsekernel.plotting": ["plot_decision_boundary", "plot_frontier", "plot_convergence", "plot_reliability",
                              "expansion_points"],
}


def _names():
    for module_name, names in PUBLIC.items():
        module = importlib.import_module(module_name)
        for name in names if names is not None else module.__all__:
            yield module_name, name, getattr(module, name)


@pytest.mark.parametrize("module_name,name,obj", list(_names()), ids=lambda v: v if isinstance(v, str) else "")
def test_numpydoc_docstring(module_name, name, obj):
    doc = inspect.getdoc(obj)
    assert doc and len(doc.splitlines()[0]) > 10, f"{module_name}.{name} has no summary line"
    params = [p for p in inspect.signature(obj).parameters if p not in ("self", "args", "kwargs")]
    if params:
        assert "Parameters\n----------" in doc, f"{module_name}.{name} has no Parameters section"
