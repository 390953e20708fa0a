"""The one list of the library's estimators and what each works with.

The tools derive their tables from it: the command line's model names (``cli``), the estimators a
``.skm`` file holds (``io``), the ONNX converters (``export.onnx``), the types skops trusts
(``export.skops``). A new estimator is added here once; ``tests/test_registry.py`` then checks it
with every tool that claims it (memory budget, export, skops, the command line, plotting).
"""

from __future__ import annotations

from dataclasses import dataclass

from .klr import KernelLogisticRegression, SparseKernelLogisticRegression
from .klr_cv import KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV
from .model_selection import PathSearchCV
from .nssvm import NSSVC
from .slmc import SLMC, ReducedSetClassifier, ReducedSVM, SparseKFD
from .svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

#: the ONNX graph families (``export.onnx``): how a model's expansion becomes its outputs
ONNX_FAMILIES = ("svc", "svr", "one_class", "klr", "expansion")


@dataclass(frozen=True)
class Entry:
    """One estimator class and its capabilities.

    cli : the command line's model name (None: not offered there), with ``summary`` its one line
    skm : a ``.skm`` file (``sparsekernel.io``) holds it
    onnx : its ONNX graph family (one of ONNX_FAMILIES), or None (no converter)
    expansion : a fitted model is one kernel expansion (``_base.fitted_expansion``): plotting and
        the command line's model size read it
    budget : ``_memory.fit_budget`` states its fit's memory
    chooses : a cross-validated estimator: it predicts, saves and exports as the model it chose
        (``estimator_``)
    """

    cls: type
    cli: str | None = None
    summary: str = ""
    skm: bool = False
    onnx: str | None = None
    expansion: bool = True
    chooses: bool = False
    budget: bool = True

    @property
    def name(self):
        return self.cls.__name__


ESTIMATORS = (
    Entry(SVC, "svc", "C-support vector classifier (one-vs-one)", skm=True, onnx="svc"),
    Entry(NuSVC, "nusvc", "nu-support vector classifier: nu bounds the fraction of margin errors", skm=True,
          onnx="svc"),
    Entry(SVR, "svr", "epsilon-support vector regression", skm=True, onnx="svr"),
    Entry(NuSVR, "nusvr", "nu-support vector regression: nu sets the tube's width", skm=True, onnx="svr"),
    Entry(OneClassSVM, "ocsvm", "one-class SVM: outlier / novelty detection (labels not used)", skm=True,
          onnx="one_class"),
    Entry(KernelLogisticRegression, "klr", "kernel logistic regression (probabilities from the fit)", skm=True,
          onnx="klr"),
    Entry(SparseKernelLogisticRegression, "sklr", "sparse kernel logistic regression", skm=True, onnx="klr"),
    Entry(KernelLogisticRegressionCV, "klr-cv", "kernel logistic regression, C by cross-validated log-loss",
          skm=True, onnx="klr", chooses=True),
    Entry(SparseKernelLogisticRegressionCV, "sklr-cv", "sparse KLR within a size budget (max_kept), C by CV",
          skm=True, onnx="klr", chooses=True),
    Entry(NSSVC, "nssvc", "Newton sparse SVM: at most s support vectors", skm=True, onnx="expansion"),
    Entry(SLMC, "slmc", "sparse large margin classifier: learned expansion vectors", skm=True, onnx="expansion"),
    Entry(SparseKFD, "skfd", "sparse kernel Fisher discriminant: learned expansion vectors", skm=True,
          onnx="expansion"),
    Entry(ReducedSetClassifier, onnx="expansion"),  # the SLMC paper's reduced-set baselines
    Entry(ReducedSVM, onnx="expansion"),
    Entry(PathSearchCV, expansion=False, budget=False),  # a search: skops stores it
)


def entries(**capability):
    """The entries with the given capabilities, e.g. ``entries(skm=True)``; a capability given as
    ``True`` for a str field (``onnx=True``) means any value."""
    out = []
    for e in ESTIMATORS:
        ok = True
        for key, want in capability.items():
            have = getattr(e, key)
            ok &= (have is not None and have is not False) if want is True and not isinstance(have, bool) \
                else have == want
        if ok:
            out.append(e)
    return out


def cli_models():
    """command-line name -> (estimator class, one-line description), in the registry's order."""
    return {e.cli: (e.cls, e.summary) for e in ESTIMATORS if e.cli is not None}
