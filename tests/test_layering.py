"""The package's layering, read from the source: every import points down the declared layer order
(no circle, not even inside a layer), imports inside functions are only the lazy imports of
optional or heavy dependencies, and the tools (``dask/``, ``cli/``, ``export/``, the searches of
``model_selection``) use no private attribute of an estimator.

The checks are functions of the source text, so each is also run on a made-up module that breaks it
(the test fails when one upward import is added)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sparsekernel

PACKAGE = Path(sparsekernel.__file__).parent
NAME = "sparsekernel"

#: bottom to top; a module may import from its own layer or below, never above. Modules of a
#: package listed by its name ("export") include its submodules unless listed themselves.
LAYERS = [
    ("types and data access", ["_core", "_version", "_dask_predict", "_memory", "_kernel_grad", "_base", "_budget",
                               "_blocks", "datasets", "metrics"]),
    ("engine", ["_engine"]),
    ("strategies", ["_dc", "_warm", "_compact", "_expansion", "_dask_rows"]),
    ("fit driver", ["_fit"]),
    ("estimators", ["svm", "klr", "nssvm", "slmc"]),
    ("searches", ["model_selection", "klr_cv"]),
    ("registry", ["_registry"]),
    ("tools", ["io", "export", "plotting", "dask", "cli"]),
    ("package", ["", "__main__"]),
]

#: what a function may import lazily: the optional extras (dask, export, plot) and the few heavy
#: scikit-learn modules that most fits never use (each adds 90-160 ms to ``import sparsekernel``)
OPTIONAL = {"dask", "distributed", "matplotlib", "onnx", "skl2onnx", "onnxruntime", "skops"}
HEAVY = {"sklearn.cluster", "sklearn.calibration", "sklearn.datasets", "sklearn.linear_model"}

#: the tools that drive estimators from outside: they may use an estimator's public API only
TOOLS = ("dask", "cli", "export", "model_selection")
#: private names of other libraries' classes the tools may read
FOREIGN_PRIVATE = {"BaseSearchCV._parameter_constraints"}


def _modules():
    """{dotted name relative to the package ('' for the package itself): source path}."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    out["_core"] = None  # the C++ extension
    return out


MODULES = _modules()


def layer_of(module):
    """The index of ``module``'s layer (its own entry, else its package's)."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        for i, (_, members) in enumerate(LAYERS):
            if name in members:
                return i
    if module == "":
        return len(LAYERS) - 1
    raise AssertionError(f"module {module!r} is in no layer: add it to LAYERS")


def _resolve(module, node, is_package):
    """The package modules an ImportFrom / Import node names, relative to the package."""
    if isinstance(node, ast.Import):
        return [a.name[len(NAME) + 1:] if a.name != NAME else "" for a in node.names
                if a.name == NAME or a.name.startswith(NAME + ".")]
    if node.level == 0:
        if node.module != NAME and not (node.module or "").startswith(NAME + "."):
            return []
        base = node.module[len(NAME) + 1:] if node.module != NAME else ""
    else:
        parts = module.split(".") if module else []
        if not is_package:
            parts = parts[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    out = []
    for a in node.names:  # "from . import _core": the module itself when the name is one
        sub = f"{base}.{a.name}" if base else a.name
        out.append(sub if sub in MODULES else base)
    return out


def imports_of(module, source, is_package=False):
    """[(target module, inside a function, line, external top-level name or None)] of a module's source."""
    tree = ast.parse(source)
    local = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        inside = id(node) in local
        targets = _resolve(module, node, is_package)
        if targets:
            out += [(t, inside, node.lineno, None) for t in targets]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.append((None, inside, node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(None, inside, node.lineno, a.name) for a in node.names]
    return out


def upward_imports(module, source, is_package=False):
    here = layer_of(module)
    return [(t, line) for t, _, line, _ in imports_of(module, source, is_package)
            if t is not None and t != module and layer_of(t) > here]


def bad_local_imports(module, source, is_package=False):
    bad = []
    for target, inside, line, external in imports_of(module, source, is_package):
        if not inside:
            continue
        if target is not None:
            bad.append((f"{NAME}.{target}" if target else NAME, line))
        elif external.split(".")[0] not in OPTIONAL and not any(external == h or external.startswith(h + ".")
                                                                 for h in HEAVY):
            bad.append((external, line))
    return bad


def private_uses(source):
    """``x._name`` reads of anything but self / cls / super() (dunders and FOREIGN_PRIVATE aside)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        if ast.unparse(node) in FOREIGN_PRIVATE:
            continue
        out.append((ast.unparse(node), node.lineno))
    return out


def _source(module):
    return MODULES[module].read_text(), MODULES[module].name == "__init__.py"


PY_MODULES = sorted(m for m, p in MODULES.items() if p is not None)


@pytest.mark.parametrize("module", PY_MODULES)
def test_imports_point_down(module):
    source, is_package = _source(module)
    assert upward_imports(module, source, is_package) == []


@pytest.mark.parametrize("module", PY_MODULES)
def test_function_local_imports_are_optional_or_heavy_dependencies(module):
    source, is_package = _source(module)
    assert bad_local_imports(module, source, is_package) == []


def test_no_import_circle():
    graph = {m: set() for m in PY_MODULES}
    for m in PY_MODULES:
        source, is_package = _source(m)
        graph[m] = {t for t, _, _, _ in imports_of(m, source, is_package) if t is not None and t != m and t in graph}
    # a package imports its submodules, which must not import it back (it would be half made)
    state = {}

    def visit(m, path):
        state[m] = "open"
        for t in graph[m]:
            if state.get(t) == "open":
                raise AssertionError("import circle: " + " -> ".join(path + [m, t]))
            if t not in state:
                visit(t, path + [m])
        state[m] = "done"

    for m in PY_MODULES:
        if m not in state:
            visit(m, [])


@pytest.mark.parametrize("module", [m for m in PY_MODULES if m.split(".")[0] in TOOLS])
def test_tools_use_no_private_estimator_attribute(module):
    source, _ = _source(module)
    assert private_uses(source) == []


def test_every_module_is_in_a_layer():
    for m in MODULES:
        layer_of(m)


# ---------------------------------------------------------------------- the checks can fail
def test_an_added_upward_import_is_caught():
    source, is_package = _source("_engine")
    assert upward_imports("_engine", source, is_package) == []
    bad = source + "\nfrom .svm import SVC\n"
    assert upward_imports("_engine", bad, is_package) == [("svm", bad.count("\n"))]
    bad = source + "\nfrom sparsekernel.model_selection import PathSearchCV\n"
    assert [t for t, _ in upward_imports("_engine", bad, is_package)] == ["model_selection"]
    # a package importing a submodule ("from . import x") names the submodule
    assert [t for t, _ in upward_imports("_base", "from . import cli\n")] == ["cli"]


def test_a_local_import_of_the_package_is_caught():
    src = "def f():\n    from .svm import SVC\n    import dask.array\n    from sklearn.cluster import KMeans\n" \
          "    import joblib\n"
    assert bad_local_imports("klr", src) == [("sparsekernel.svm", 2), ("joblib", 5)]


def test_a_private_use_is_caught():
    src = "def f(model):\n    self._ok()\n    super()._ok()\n    return model._ovo_coef(), model.__class__\n"
    assert private_uses(src) == [("model._ovo_coef", 4)]


def test_a_circle_inside_a_layer_is_caught(monkeypatch):
    real = imports_of

    def with_circle(module, source, is_package=False):
        extra = [("svm", False, 1, None)] if module == "slmc" else []
        extra += [("slmc", False, 1, None)] if module == "svm" else []
        return real(module, source, is_package) + extra

    monkeypatch.setitem(globals(), "imports_of", with_circle)
    with pytest.raises(AssertionError, match="import circle"):
        test_no_import_circle()


def test_the_core_and_the_command_line_import_without_the_optional_extras():
    """``pip install sparsekernel`` (no extras): the package, its command line and the plotting
    module's expansion_points import and run with matplotlib, dask, skops and ONNX missing."""
    import subprocess
    import sys

    code = ("import sys\n"
            "for m in ('matplotlib', 'dask', 'distributed', 'skops', 'onnx', 'skl2onnx', 'onnxruntime'):\n"
            "    sys.modules[m] = None\n"
            "import sparsekernel, sparsekernel.cli, sparsekernel.io, sparsekernel.export\n"
            "from sparsekernel.plotting import expansion_points\n"
            "from sparsekernel.cli import main\n"
            "raise SystemExit(main(['datasets']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "breast_cancer" in proc.stdout
