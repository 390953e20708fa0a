"""ONNX export of sparsekernel's kernel machines through skl2onnx's converter registry.

Every model here predicts from a kernel expansion, ``dec = K(X, B) @ W.T + b`` over the stored
points B (support vectors, expansion vectors), and then turns ``dec`` into labels, scores or
probabilities. The converters rebuild exactly that with plain ONNX operators: one kernel-graph
builder (:func:`_kernel_block`, the formulas of ``sparsekernel._base.KernelEvaluator``) shared by
one converter per estimator family:

- SVC, NuSVC: LIBSVM's one-vs-one decision values, the vote (ties to the first class),
  scikit-learn's 'ovr' scores or the raw 'ovo' values, ``break_ties``, Platt probabilities for two
  classes (a NuSVC is stored as the C-SVC its solution scales to, so it converts as one);
- SVR, NuSVR: the regression value;
- OneClassSVM: the decision value and the +1 / -1 label;
- KernelLogisticRegression, SparseKernelLogisticRegression: P = 1 / (1 + exp(-f / T)) (T = S-KLR's
  ``temperature_``, 1 for KLR), normalised one-vs-rest probabilities for more classes, the label
  their argmax;
- NSSVC, SLMC, SparseKFD and the reduced-set baselines: the sign or the largest one-vs-rest score.

The graph computes in the input's float type, float64 by default, so onnxruntime reproduces the
library's predictions to rounding (skl2onnx's own SVC converter computes in float32).

Outputs (skl2onnx's conventions): a classifier has ``label`` (int64 for integer, bool or
integral float classes, string for string classes, double for other float classes) and
``probabilities``: ``predict_proba`` when the model has it (KLR, SVC with probability=True and two
classes) unless ``raw_scores=True``, otherwise the scores, one column per class (two classes:
``[-f, f]`` with ``f = decision_function``; SVC with ``decision_function_shape='ovo'`` and more
than two classes: one column per pair). A regressor has ``variable`` of shape (n, 1). An outlier
detector (OneClassSVM) has, as skl2onnx's converter of scikit-learn's OneClassSVM, ``label``
(int64 of shape (n, 1): +1 for inliers, -1 for outliers, ``predict``) and ``scores`` (shape
(n, 1): ``decision_function``); unlike skl2onnx's (the Sign of the score, 0 on the boundary) the
label of a score of exactly 0 is -1, as ``predict``'s.

Registration (:func:`register_converters`, run when :mod:`sparsekernel.export` is imported) also
gives skl2onnx the classifiers' parser :func:`parse_classifier`, so that plain
``skl2onnx.to_onnx(pipeline, X)`` works with no options. skl2onnx's option ``zipmap`` (True by
default, and set to True on a pipeline's final classifier) then means "a ZipMap where ONNX can run
one": with a float32 input and one score per class, ``probabilities`` becomes skl2onnx's usual
list of dicts (``output_label``, ``output_probability``); with a float64 input (ONNX's ZipMap takes
float32 only) or an SVC's pairwise 'ovo' scores they stay one tensor, ``label`` and
``probabilities`` as above. ``zipmap=False`` gives the tensor always, ``'columns'`` one output per
class. :func:`to_onnx` always converts with ``zipmap=False``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._extra import require

require("skl2onnx", "onnx")

from onnx import TensorProto  # noqa: E402
from skl2onnx import convert_sklearn, update_registered_converter  # noqa: E402
from skl2onnx.common.data_types import (  # noqa: E402
    DoubleTensorType,
    FloatTensorType,
    Int64TensorType,
    StringTensorType,
)
from sklearn.pipeline import Pipeline  # noqa: E402

from .._base import fitted_expansion, ovo_pairs  # noqa: E402
from .._registry import entries  # noqa: E402

# the operators used are all in opset 13 with the semantics relied on (ReduceSum's axes as an input)
MIN_OPSET = 13
KERNELS = ("linear", "poly", "rbf", "sigmoid", "laplacian")
_SVC_PLATT_MIN_PROB = 1e-7  # svm._PLATT_MIN_PROB


# ---------------------------------------------------------------------- what each model predicts from
def _check_kernel(model):
    kernel = model.kernel
    if callable(kernel) or kernel not in KERNELS:
        name = "a callable" if callable(kernel) else repr(kernel)
        raise ValueError(f"ONNX export of {type(model).__name__} with kernel={name} is not supported: the graph needs "
                         f"the kernel's formula, one of {KERNELS}")


def model_expansion(model):
    """The :class:`~sparsekernel._base.Expansion` of a fitted sparsekernel estimator (a cross-validated
    one: of the model it chose), B and W dense float64, for the graph.

    Raises
    ------
    ValueError
        For a kernel without a formula in ONNX ('precomputed', a callable), or a model with no single
        expansion (``early_stop_level``).
    TypeError
        For a model type without a converter.
    """
    if not any(type(model) is e.cls for e in entries(onnx=True)):
        raise TypeError(f"no ONNX converter for {type(model).__name__}")
    expansion = fitted_expansion(model)
    _check_kernel(_refitted(model) if _chooses(model) else model)
    return expansion.dense()


# ---------------------------------------------------------------------- graph building
class _Graph:
    """Adds nodes and constants to skl2onnx's container, floats in the graph's type."""

    _FLOAT_TYPES = {np.float64: TensorProto.DOUBLE, np.float32: TensorProto.FLOAT}

    def __init__(self, scope, operator, container):
        opset = container.target_opset
        if opset is not None and opset < MIN_OPSET:
            raise ValueError(f"sparsekernel's ONNX converters need target_opset >= {MIN_OPSET}, got {opset}")
        self.scope, self.container = scope, container
        self.dtype = np.float32 if isinstance(operator.inputs[0].type, FloatTensorType) else np.float64

    def op(self, op_type, *inputs, out=None, **attrs):
        """Add node ``op_type(inputs, **attrs)``; returns its output's name (``out`` if given)."""
        out = out or self.scope.get_unique_variable_name(op_type.lower())
        self.container.add_node(op_type, list(inputs), [out], op_version=MIN_OPSET,
                                name=self.scope.get_unique_operator_name(op_type), **attrs)
        return out

    def const(self, value, dtype=None):
        """A constant tensor: floats in the graph's type unless ``dtype`` says otherwise."""
        arr = np.asarray(value, dtype=dtype or self.dtype)
        name = self.scope.get_unique_variable_name("cst")
        if arr.dtype.kind in "US":
            self.container.add_initializer(name, TensorProto.STRING, list(arr.shape),
                                           [s.encode("utf-8") for s in arr.astype(str).ravel()])
        else:
            onnx_type = self._FLOAT_TYPES.get(arr.dtype.type, TensorProto.INT64)
            self.container.add_initializer(name, onnx_type, list(arr.shape), arr.ravel())
        return name

    def axes(self, *axes):
        return self.const(np.array(axes, dtype=np.int64), dtype=np.int64)

    def to_float(self, name):
        return self.op("Cast", name, to=self._FLOAT_TYPES[self.dtype])


def _kernel_block(g, X, e):
    """K(X, B) of the expansion ``e`` as ONNX nodes, by KernelEvaluator's formulas (rbf from the dot
    products and the squared norms, clipped at 0; poly (gamma x.b + coef0)^degree; sigmoid tanh;
    laplacian exp(-gamma ||x - b||_1))."""
    if e.kernel == "laplacian":
        diff = g.op("Sub", g.op("Unsqueeze", X, g.axes(1)), g.const(e.B[None, :, :]))  # (n, m, d)
        l1 = g.op("ReduceSum", g.op("Abs", diff), g.axes(2), keepdims=0)
        return g.op("Exp", g.op("Mul", l1, g.const(-e.gamma)))
    dot = g.op("MatMul", X, g.const(e.B.T))
    if e.kernel == "linear":
        return dot
    if e.kernel == "rbf":
        x_sq = g.op("ReduceSum", g.op("Mul", X, X), g.axes(1), keepdims=1)        # (n, 1)
        d2 = g.op("Add", g.op("Add", g.op("Mul", dot, g.const(-2.0)), x_sq), g.const(np.einsum("ij,ij->i", e.B, e.B)))
        d2 = g.op("Max", d2, g.const(0.0))
        return g.op("Exp", g.op("Mul", d2, g.const(-e.gamma)))
    affine = g.op("Add", g.op("Mul", dot, g.const(e.gamma)), g.const(e.coef0))
    if e.kernel == "sigmoid":
        return g.op("Tanh", affine)
    return g.op("Pow", affine, g.const(float(e.degree)))  # poly


def _decision(g, X, e):
    """dec = K(X, B) @ W.T + b, shape (n, k)."""
    K = _kernel_block(g, X, e)
    lin = K if e.W is None else g.op("MatMul", K, g.const(e.W.T))
    return g.op("Add", lin, g.const(e.b))


def _expit(g, z):
    """1 / (1 + exp(-z)) (scipy's expit)."""
    return g.op("Div", g.const(1.0), g.op("Add", g.const(1.0), g.op("Exp", g.op("Neg", z))))


def _two_class_scores(g, f):
    """[-f, f] for a binary decision value f of shape (n, 1)."""
    return g.op("Concat", g.op("Neg", f), f, axis=1)


def _classes(scope, model):
    """classes_, or their indices with skl2onnx's option nocl=True."""
    nocl = scope.get_options(model, dict(nocl=False))["nocl"]
    return np.arange(len(model.classes_)) if nocl else model.classes_


def _emit_label(g, operator, index):
    """label = classes_[index] into the operator's first output (index: int64 of shape (n,))."""
    classes, _ = _label_encoding(_classes(g.scope, operator.raw_operator))
    g.op("Gather", g.const(classes, dtype=classes.dtype), index, axis=0, out=operator.outputs[0].full_name)


def _emit_scores(g, operator, scores):
    """scores / probabilities into the operator's second output (:func:`parse_classifier` has put
    a ZipMap after it or not)."""
    g.op("Identity", scores, out=operator.outputs[1].full_name)


def _sign_index(g, positive):
    """int64 (n,) of a boolean (n, 1)."""
    return g.op("Reshape", g.op("Cast", positive, to=TensorProto.INT64), g.axes(-1))


def _argmax(g, scores):
    """The first column of the largest score (numpy's argmax)."""
    return g.op("ArgMax", scores, axis=1, keepdims=0, select_last_index=0)


def _raw_scores(g, operator):
    return bool(g.scope.get_options(operator.raw_operator, dict(raw_scores=False))["raw_scores"])


# ---------------------------------------------------------------------- converters (one per family)
def _pair_matrices(n_classes):
    """(first, second): (n_pairs, n_classes) 0/1 matrices of the pairs' classes in LIBSVM's order."""
    pairs = ovo_pairs(n_classes)
    first, second = np.zeros((len(pairs), n_classes)), np.zeros((len(pairs), n_classes))
    for k, (a, b) in enumerate(pairs):
        first[k, a] = second[k, b] = 1.0
    return first, second


def convert_svc(scope, operator, container):
    """SVC and NuSVC: decision values of LIBSVM's pairs, then the vote (svm.SVC.predict), the scores
    (svm.SVC.decision_function) and Platt's probabilities (two classes)."""
    model = operator.raw_operator
    g = _Graph(scope, operator, container)
    expansion = model_expansion(model)
    dec = _decision(g, operator.inputs[0].full_name, expansion)  # (n, n_pairs), > 0: first class
    n_classes = len(model.classes_)
    if n_classes == 2:
        index = _sign_index(g, g.op("LessOrEqual", dec, g.const(0.0)))  # dec <= 0: classes_[1]
        scores = g.op("Concat", dec, g.op("Neg", dec), axis=1)  # [-f, f], f = -dec
    else:
        first, second = _pair_matrices(n_classes)

        def votes(first_wins):  # votes[:, c] = pairs won by c
            p = g.to_float(first_wins)
            return g.op("Add", g.op("MatMul", p, g.const(first)),
                        g.op("MatMul", g.op("Sub", g.const(1.0), p), g.const(second)))

        # scikit-learn's _ovr_decision_function: a zero vote goes to the first class, plus the
        # confidence s / (3 (|s| + 1)), s = sum of the pairs' values signed for each class
        conf = g.op("MatMul", dec, g.const(first - second))
        ovr = g.op("Add", votes(g.op("GreaterOrEqual", dec, g.const(0.0))),
                   g.op("Div", conf, g.op("Mul", g.op("Add", g.op("Abs", conf), g.const(1.0)), g.const(3.0))))
        if model.break_ties and model.decision_function_shape == "ovr":
            index = _argmax(g, ovr)
        else:  # LIBSVM's vote: > 0 for the first class, ties to the first class (ArgMax's first index)
            index = _argmax(g, votes(g.op("Greater", dec, g.const(0.0))))
        scores = ovr if model.decision_function_shape == "ovr" else dec
    _emit_label(g, operator, index)
    if expansion.platt is not None and not _raw_scores(g, operator):
        if n_classes != 2:
            raise ValueError(f"ONNX export of {type(model).__name__}(probability=True) with more than two classes "
                             "is not supported "
                             "(pairwise coupling solves a linear system per sample); pass raw_scores=True to "
                             "export the decision scores")
        probA, probB = expansion.platt
        z = g.op("Add", g.op("Mul", dec, g.const(probA)), g.const(probB))
        r = g.op("Div", g.const(1.0), g.op("Add", g.const(1.0), g.op("Exp", z)))
        r = g.op("Clip", r, g.const(_SVC_PLATT_MIN_PROB), g.const(1.0 - _SVC_PLATT_MIN_PROB))
        scores = g.op("Concat", r, g.op("Sub", g.const(1.0), r), axis=1)
    _emit_scores(g, operator, scores)


def convert_svr(scope, operator, container):
    """SVR and NuSVR: f(x) = sum_i (a+_i - a-_i) K(x_i, x) + b, shape (n, 1)."""
    g = _Graph(scope, operator, container)
    dec = _decision(g, operator.inputs[0].full_name, model_expansion(operator.raw_operator))
    g.op("Identity", dec, out=operator.outputs[0].full_name)


def convert_one_class_svm(scope, operator, container):
    """OneClassSVM: label +1 where f(x) = sum_i a_i K(x_i, x) - rho > 0, else -1 (``predict``), and
    the scores f(x) (``decision_function``), both of shape (n, 1)."""
    g = _Graph(scope, operator, container)
    dec = _decision(g, operator.inputs[0].full_name, model_expansion(operator.raw_operator))
    inlier = g.op("Cast", g.op("Greater", dec, g.const(0.0)), to=TensorProto.INT64)  # 1 / 0
    g.op("Sub", g.op("Mul", inlier, g.const(2, dtype=np.int64)), g.const(1, dtype=np.int64),
         out=operator.outputs[0].full_name)
    g.op("Identity", dec, out=operator.outputs[1].full_name)


def _refitted(model):
    """A KLR-CV's ``estimator_`` (the chosen C refitted on all the data)."""
    if not getattr(model, "refit", True) or not hasattr(model, "estimator_"):
        raise ValueError(f"ONNX export of a {type(model).__name__} fitted with refit=False: it holds the "
                         "cross-validation results only, no model to export")
    return model.estimator_


def convert_klr(scope, operator, container):
    """(Sparse) kernel logistic regression: P(y | x) = 1 / (1 + exp(-y f(x) / T)) (S-KLR eq. 3 with
    S-KLR's temperature T = ``temperature_``, per one-vs-rest column; 1 for KLR), one-vs-rest
    probabilities normalised to 1, the label their argmax (klr._BaseKLR); for the CV classes, their
    refitted ``estimator_``'s."""
    model = operator.raw_operator
    if _chooses(model):
        model = _refitted(model)
    g = _Graph(scope, operator, container)
    dec = _decision(g, operator.inputs[0].full_name, model_expansion(model))
    n_classes = len(model.classes_)
    T = np.atleast_1d(np.asarray(getattr(model, "temperature_", 1.0), dtype=np.float64))
    z = dec if np.all(T == 1.0) else g.op("Div", dec, g.const(T))
    p = _expit(g, z)
    if n_classes == 2:
        proba = g.op("Concat", _expit(g, g.op("Neg", z)), p, axis=1)
    else:
        proba = g.op("Div", p, g.op("ReduceSum", p, g.axes(1), keepdims=1))
    _emit_label(g, operator, _argmax(g, proba))
    if _raw_scores(g, operator):
        proba = _two_class_scores(g, dec) if n_classes == 2 else dec
    _emit_scores(g, operator, proba)


def convert_expansion_classifier(scope, operator, container):
    """NSSVC, SLMC, SparseKFD and the reduced-set baselines: sgn(f) for two classes (0 goes to
    classes_[0]), the largest one-vs-rest score otherwise; the scores are the decision values."""
    model = operator.raw_operator
    g = _Graph(scope, operator, container)
    dec = _decision(g, operator.inputs[0].full_name, model_expansion(model))
    n_classes = len(model.classes_)
    if n_classes == 2:
        index, scores = _sign_index(g, g.op("Greater", dec, g.const(0.0))), _two_class_scores(g, dec)
    else:
        index, scores = _argmax(g, dec), dec
    _emit_label(g, operator, index)
    _emit_scores(g, operator, scores)


# ---------------------------------------------------------------------- shapes and registration
def _chooses(model):
    """A cross-validated estimator (it converts as the model it chose)."""
    return any(type(model) is e.cls for e in entries(chooses=True))


def _pairwise_scores(model):
    """True for an (Nu)SVC whose scores are one column per pair of classes ('ovo', more than two)."""
    return _family(model) == "svc" and len(model.classes_) > 2 and model.decision_function_shape == "ovo"


def _n_score_columns(model):
    n_classes = len(model.classes_)
    return n_classes * (n_classes - 1) // 2 if _pairwise_scores(model) else n_classes


def _label_encoding(classes):
    """(constant of the labels, skl2onnx tensor type of the label output)."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "biu":
        return classes.astype(np.int64), Int64TensorType
    if classes.dtype.kind == "f":
        if np.all(np.isfinite(classes)) and np.all(classes == np.round(classes)):
            return classes.astype(np.int64), Int64TensorType
        return classes.astype(np.float64), DoubleTensorType
    return classes.astype(str), StringTensorType


def _float_type(operator):
    return FloatTensorType if isinstance(operator.inputs[0].type, FloatTensorType) else DoubleTensorType


def _check_io(operator, n_outputs):
    if len(operator.inputs) != 1 or len(operator.outputs) != n_outputs:
        raise RuntimeError(f"{type(operator.raw_operator).__name__} takes one input and gives {n_outputs} output(s)")
    if not isinstance(operator.inputs[0].type, (DoubleTensorType, FloatTensorType)):
        raise ValueError(f"sparsekernel's ONNX converters take a float64 or float32 tensor, got "
                         f"{type(operator.inputs[0].type).__name__}")


def shape_classifier(operator):
    """label (n,) and scores / probabilities (n, columns) in the input's float type."""
    _check_io(operator, 2)
    model = operator.raw_operator
    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = _label_encoding(_classes(operator.scope_inst, model))[1](shape=[n])
    operator.outputs[1].type = _float_type(operator)(shape=[n, _n_score_columns(model)])


def shape_regressor(operator):
    """variable (n, 1) in the input's float type."""
    _check_io(operator, 1)
    operator.outputs[0].type = _float_type(operator)(shape=[operator.inputs[0].get_first_dimension(), 1])


def shape_outlier_detector(operator):
    """label (n, 1) int64 and scores (n, 1) in the input's float type (skl2onnx's OneClassSVM)."""
    _check_io(operator, 2)
    n = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = Int64TensorType(shape=[n, 1])
    operator.outputs[1].type = _float_type(operator)(shape=[n, 1])


def _zipmap_choice(model, zipmap, input_type):
    """The ZipMap option a classifier's conversion uses, from the option's value (skl2onnx's
    default True, False or 'columns'): True means a ZipMap where ONNX can run one, a float32
    input and one score column per class; otherwise the probabilities stay one tensor. ONNX's
    ZipMap takes float32 tensors only, and skl2onnx's pipeline parser sets True on a final
    classifier the caller gave no options, so True cannot mean more than "where possible"."""
    per_class = not _pairwise_scores(model)
    if zipmap is True:
        return isinstance(input_type, FloatTensorType) and per_class
    if zipmap == "columns" and not per_class:
        raise ValueError("ONNX export: zipmap='columns' needs one score per class, but an SVC with "
                         "decision_function_shape='ovo' has one per pair; leave zipmap unset or False")
    return zipmap


def parse_classifier(scope, model, inputs, custom_parsers=None):
    """skl2onnx parser of the library's classifiers: skl2onnx's own classifier parser (outputs
    ``label`` and ``probabilities``, then a ZipMap or not) with the ZipMap option resolved by
    :func:`_zipmap_choice`. With skl2onnx's parser alone a float64 input gets a ZipMap over
    doubles, a graph onnxruntime refuses; here ``skl2onnx.to_onnx(pipe, X)`` with float64 X and
    no options gives one that runs, its probabilities a float64 tensor."""
    from skl2onnx._parse import _parse_sklearn_classifier

    zipmap = scope.get_options(model, dict(zipmap=True))["zipmap"]
    choice = _zipmap_choice(model, zipmap, inputs[0].type)
    if choice is not zipmap:  # for skl2onnx's parser, on a copy of the caller's options
        options = dict(scope.options or {})
        options[id(model)] = {**(options.get(id(model)) or {}), "zipmap": choice}
        scope.options = options
    return _parse_sklearn_classifier(scope, model, inputs, custom_parsers=custom_parsers)


_CLASSIFIER_OPTIONS = {"zipmap": [False, True, "columns"], "nocl": [False, True], "output_class_labels": [False, True],
                       "raw_scores": [False, True]}
#: the registry's ONNX families (``_registry.ONNX_FAMILIES``): (shape calculator, converter)
_FAMILIES = {
    "svc": (shape_classifier, convert_svc),
    "svr": (shape_regressor, convert_svr),
    "one_class": (shape_outlier_detector, convert_one_class_svm),
    "klr": (shape_classifier, convert_klr),
    "expansion": (shape_classifier, convert_expansion_classifier),
}
_REGISTRY = [(e.cls, *_FAMILIES[e.onnx]) for e in entries(onnx=True)]


def _family(model):
    return next((e.onnx for e in entries(onnx=True) if type(model) is e.cls), None)


_registered = False


def register_converters():
    """Register a shape calculator and a converter for every sparsekernel estimator with skl2onnx
    (``skl2onnx.update_registered_converter``, aliases ``Sparsekernel<Class>``), and for the
    classifiers the parser :func:`parse_classifier` (regressors and the outlier detector take
    skl2onnx's default parser: ``variable``; ``label`` and ``scores`` for an ``OutlierMixin``), so that ``skl2onnx.to_onnx`` /
    ``convert_sklearn`` convert them, alone or inside a pipeline, in float64 or float32, with no
    options. Idempotent; done when :mod:`sparsekernel.export` is imported."""
    global _registered
    if _registered:
        return
    for cls, shape_fn, convert_fn in _REGISTRY:
        classifier = shape_fn is shape_classifier
        update_registered_converter(cls, f"Sparsekernel{cls.__name__}", shape_fn, convert_fn,
                                    parser=parse_classifier if classifier else None,
                                    options=_CLASSIFIER_OPTIONS if classifier else None)
    _registered = True


def to_onnx(model, X, dtype=np.float64, *, raw_scores=False, target_opset=None):
    """Convert a fitted sparsekernel estimator to ONNX.

    Parameters
    ----------
    model : SVC, NuSVC, SVR, NuSVR, OneClassSVM, KernelLogisticRegression,
        SparseKernelLogisticRegression, KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV
        (their refitted ``estimator_``), NSSVC, SLMC, SparseKFD, ReducedSetClassifier or ReducedSVM,
        or a scikit-learn Pipeline ending in one (its other steps through skl2onnx's converters)
        Fitted, with a kernel in ('linear', 'poly', 'rbf', 'sigmoid', 'laplacian').
    X : array-like of shape (n_samples, n_features) or int
        A sample of the input (only its number of columns is used) or the number of features.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Type of the input tensor ``X`` and of every computation and float output. float64
        reproduces the library's predictions to rounding (about 1e-15 relative); float32 is
        smaller and faster, to about 1e-6.
    raw_scores : bool, default=False
        Classifiers with probabilities (KLR, SVC or NuSVC with probability=True): output the decision
        scores instead of ``predict_proba``.
    target_opset : int or None, default=None
        ONNX opset (>= 13); None lets skl2onnx choose its latest tested one.

    Returns
    -------
    onnx.ModelProto
        Input ``X`` (n, n_features). Classifiers: outputs ``label`` (n,) and ``probabilities``
        (n, n_classes) (see the module's docstring for the scores); SVR, NuSVR: ``variable``
        (n, 1); OneClassSVM: ``label`` (n, 1) int64 +1 / -1 and ``scores`` (n, 1), the
        decision function.

    Raises
    ------
    ValueError
        For a kernel without an ONNX formula ('precomputed', a callable), a wrong number of
        features or a dtype other than float64 / float32.
    TypeError
        For a model that is not a sparsekernel estimator with a converter.

    Examples
    --------
    >>> import onnxruntime as ort                                   # doctest: +SKIP
    >>> onx = to_onnx(SVC().fit(X, y), X)                            # doctest: +SKIP
    >>> sess = ort.InferenceSession(onx.SerializeToString())         # doctest: +SKIP
    >>> label, scores = sess.run(None, {"X": X})                     # doctest: +SKIP
    """
    register_converters()
    final = model.steps[-1][1] if isinstance(model, Pipeline) else model
    if not any(type(final) is cls for cls, _, _ in _REGISTRY):
        what = f"a Pipeline ending in {type(final).__name__}" if final is not model else type(model).__name__
        raise TypeError(f"no sparsekernel ONNX converter for {what}; supported: "
                        f"{', '.join(cls.__name__ for cls, _, _ in _REGISTRY)} (alone or as a pipeline's last step; "
                        "other scikit-learn models: skl2onnx.to_onnx, with these converters registered)")
    model_expansion(final)  # fitted, with a kernel the graph can compute
    n_features = int(X) if isinstance(X, numbers.Integral) else int(X.shape[1] if hasattr(X, "shape")
                                                                    else np.asarray(X).shape[1])
    if n_features != model.n_features_in_:
        raise ValueError(f"X has {n_features} features, but {type(model).__name__} was fitted with "
                         f"{model.n_features_in_}")
    tensor_types = {np.dtype(np.float64): DoubleTensorType, np.dtype(np.float32): FloatTensorType}
    if np.dtype(dtype) not in tensor_types:
        raise ValueError(f"dtype must be numpy.float64 or numpy.float32, got {dtype!r}")
    options = None
    if shape_classifier in {s for cls, s, _ in _REGISTRY if type(final) is cls}:
        options = {id(final): {"zipmap": False, "raw_scores": bool(raw_scores)}}
    return convert_sklearn(model, initial_types=[("X", tensor_types[np.dtype(dtype)]([None, n_features]))],
                           options=options, target_opset=target_opset)


register_converters()
