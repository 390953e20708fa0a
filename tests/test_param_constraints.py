"""``_parameter_constraints`` on every public estimator (issue 51): every parameter of ``__init__``
has its constraints (scikit-learn's ``check_param_validation`` checks each with a value of a wrong
type and one just outside its range, and the message that names it), the values that worked before
still work, and the rules over several parameters stay in their one place per family
(``_check_cross_params``)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import pytest
from sklearn.utils._param_validation import Interval, InvalidParameterError, RealNotInt
from sklearn.utils.estimator_checks import check_param_validation

from sparsekernel import NSSVC, SVC, SVR, KernelLogisticRegression, NuSVC, NuSVR, OneClassSVM, \
    SparseKernelLogisticRegression
from sparsekernel._base import NumInterval, validate_constrained_params
from sparsekernel.klr_cv import KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV
from sparsekernel.slmc import SLMC, ReducedSetClassifier, ReducedSVM, SparseKFD

ESTIMATORS = [SVC, NuSVC, SVR, NuSVR, OneClassSVM, KernelLogisticRegression, SparseKernelLogisticRegression,
              KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV, NSSVC, SLMC, SparseKFD,
              ReducedSetClassifier, ReducedSVM]
IDS = [cls.__name__ for cls in ESTIMATORS]


def _data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    return X, (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_every_parameter_has_constraints(cls):
    assert set(cls._parameter_constraints) == set(cls().get_params(deep=False))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_sklearn_check_param_validation(cls):
    """scikit-learn's own check: each parameter set to an object of no valid type, then to a value
    just outside each of its ranges, makes fit raise InvalidParameterError naming the parameter and
    the estimator ("The 'C' parameter of SVC must be ... Got ... instead.")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # (probability set to a bool)
        check_param_validation(cls.__name__, cls())


@pytest.mark.parametrize("cls,params", [
    (SVC, dict(C=True)), (SVC, dict(degree=True)), (SVC, dict(tol=True)), (NuSVC, dict(nu=True)),
    (SVR, dict(epsilon=False)), (SVC, dict(max_iter=np.True_)), (SVC, dict(n_jobs=True)),
    (KernelLogisticRegression, dict(C=True)), (SparseKernelLogisticRegression, dict(lam=True)),
    (NSSVC, dict(s=True)), (SLMC, dict(n_expansion=True)), (SLMC, dict(tol=True)),
    (SparseKernelLogisticRegressionCV, dict(max_kept=True)), (KernelLogisticRegressionCV, dict(patience=True)),
])
def test_bools_are_not_numbers(cls, params):
    (name,) = params
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of {cls.__name__} must be"):
        cls(**params).fit(*_data())


@pytest.mark.parametrize("typ", [Integral, Real, RealNotInt])
@pytest.mark.parametrize("closed", ["left", "right", "both", "neither"])
def test_num_interval_agrees_with_sklearn_interval(typ, closed):
    """NumInterval's plain comparisons give Interval's answer on every value that is not a bool (and,
    for RealNotInt, not a numpy float that is not a Python float)."""
    values = [0, 1, -1, 2, 0.0, 1.0, -0.0, -1e-6, 1e-300, 0.5, 1.5, np.inf, -np.inf, np.nan, np.float64(0.5),
              np.float64(np.nan), np.int64(3), np.int32(-1), np.uint8(0), 2**31, 2**31 - 1, 2**40, 10**400, "1", None,
              [1]]
    for left, right in ((None, None), (0, None), (None, -1), (0, 1), (1, None), (0, 2**31), (-1, 1)):
        if typ is not Integral:
            left, right = (None if b is None else float(b) for b in (left, right))
        elif (left is None and closed in ("left", "both")) or (right is None and closed in ("right", "both")):
            continue
        ours, theirs = NumInterval(typ, left, right, closed=closed), Interval(typ, left, right, closed=closed)
        assert str(ours) == str(theirs)
        for v in values:
            assert ours.is_satisfied_by(v) == theirs.is_satisfied_by(v), (left, right, v)
        assert not ours.is_satisfied_by(True) and not ours.is_satisfied_by(np.False_)


def test_num_interval_reads_numpy_floats_as_not_int():
    share = NumInterval(RealNotInt, 0.0, 1.0, closed="right")
    assert share.is_satisfied_by(np.float32(0.5)) and share.is_satisfied_by(0.5) and share.is_satisfied_by(1.0)
    assert not share.is_satisfied_by(1) and not share.is_satisfied_by(np.int64(1))
    assert not share.is_satisfied_by(0.0) and not share.is_satisfied_by(np.nan) and not share.is_satisfied_by(1.5)


@pytest.mark.parametrize("est", [
    SVC(C=np.inf, kernel="linear"),  # a hard margin
    SVC(C=np.float32(2.0), gamma="auto", tol=np.float64(1e-3), degree=np.int64(2), kernel="poly",
        coef0=np.float32(1.0), max_iter=np.int64(-1), n_jobs=np.int64(-1), cache_size=50, time_limit=30),
    SVC(gamma=np.float32(0.5), n_jobs=1, max_iter=10**6, class_weight={0: 2.0, 1: 1.0}, random_state=np.int64(3),
        verbose=0, working_set_size=np.int64(8), solver="batched", decision_function_shape="ovo",
        shrinking=np.False_, break_ties=np.bool_(False)),
    SVC(kernel=lambda A, B: A @ B.T),
    SVC(solver="dc", early_stop_level=1),
    SVR(C=np.inf, epsilon=0.0, n_jobs=-2, warm_start=True),
    NuSVC(nu=np.float32(0.5), class_weight="balanced"),
    NuSVR(nu=1, C=3),
    OneClassSVM(nu=1.0, gamma=2),
    KernelLogisticRegression(C=np.int64(2), bound=1e-4, n_components=np.int64(64), refine_basis=0,
                             random_state=np.random.RandomState(0)),
    SparseKernelLogisticRegression(lam=0, C=10),
    SparseKernelLogisticRegression(lam=np.float32(0.5)),
    NSSVC(s=np.float32(0.5), adaptive=True, c=0.001, eta=0.1, tol=1e-4, budget="5ms"),
    NSSVC(s=np.int64(10), adaptive=np.False_, kernel="rbf", budget=np.int64(20)),
    SLMC(np.int64(3), max_iter=0, tol=0, init="random", budget=None),
    SLMC(np.float32(0.2), max_iter=2),
    ReducedSVM(3, Cs=(0.5, 2.0), cv=np.int64(2)),
])
def test_valid_values_keep_working(est):
    X, y = _data(60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # probability left at "deprecated": no warning
        warnings.simplefilter("ignore", UserWarning)
        warnings.filterwarnings("ignore", category=Warning, message=".*(converge|time_limit|max_iter).*")
        est.fit(X, None if isinstance(est, OneClassSVM) else (y if not isinstance(est, (SVR, NuSVR)) else y * 1.0))


def test_probability_keeps_its_deprecation():
    X, y = _data()
    with pytest.warns(FutureWarning, match="probability.+deprecated"):
        SVC(probability=np.False_).fit(X, y)
    with pytest.raises(InvalidParameterError, match="The 'probability' parameter of SVC must be an instance of"):
        SVC(probability="yes").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        SVC().fit(X, y)


@pytest.mark.parametrize("est,match", [
    (SVC(early_stop_level=1), "early_stop_level applies to solver='dc'"),
    (SVR(early_stop_level=2, solver="smo2"), "early_stop_level applies to solver='dc'"),
    (SVC(solver="dc", kernel="precomputed"), "precomputed or callable"),
    (SVC(solver="dc", kernel=lambda A, B: A @ B.T), "precomputed or callable"),
    (NSSVC(C=0.1, c=0.1), "c must be smaller than C"),
    (KernelLogisticRegressionCV(Cs=2, cv="alo", scoring="accuracy"), "log-loss only"),
])
def test_cross_parameter_rules(est, match):
    X, y = _data()
    if est.get_params().get("kernel") == "precomputed":
        X = X @ X.T
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=IDS)
def test_validation_is_checked_at_every_fit(cls):
    """A parameter set after construction is checked by the next fit (nothing is kept from the first)."""
    est = cls()
    validate_constrained_params(est)
    est.set_params(n_jobs=0)
    with pytest.raises(InvalidParameterError, match=rf"The 'n_jobs' parameter of {cls.__name__} must be"):
        validate_constrained_params(est)


def test_constraints_are_made_once_per_class(monkeypatch):
    """The validation runs on every fit: its constraint objects are made once per class, not per fit
    (scikit-learn's validate_parameter_constraints makes them on every call: 3-4x the time)."""
    from sparsekernel import _base

    est = SVC()
    validate_constrained_params(est)
    made = []
    monkeypatch.setattr(_base, "make_constraint", lambda c: made.append(c))
    for C in (1.0, 2.0, np.inf):
        validate_constrained_params(est.set_params(C=C))
    assert made == []
