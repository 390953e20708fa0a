"""Memory: cache_size holds when problems are solved at once, requests that cannot fit are refused
before allocating, and the stated budgets (sparsekernel._memory.fit_budget) are well formed.

The budgets themselves are measured against peak RSS per fit in a subprocess by
benchmarks/bench_memory.py (tracemalloc cannot see the C++ core)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

import sparsekernel._memory as memory
from sparsekernel import (NSSVC, SLMC, SVC, SVR, InsufficientMemoryError, KernelLogisticRegression, NuSVC, NuSVR,
                          OneClassSVM, SparseKernelLogisticRegression, SparseKFD)

# 20 features: each pair problem (2,000 rows) is large enough to be solved beside another (problem_workers)
X3, Y3 = make_classification(n_samples=3000, n_features=20, n_informative=6, n_classes=3, random_state=0)


@pytest.mark.parametrize("cls", [SVC, KernelLogisticRegression])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cache_size_holds_for_problems_solved_at_once(cls, n_jobs):
    """A 3-class fit on two threads solves two problems at once: each cache gets half the budget
    (3000 float32 rows of 12 kB do not fit 2 MB, so every cache fills up to its share)."""
    kw = {"solver": "smo"} if cls is KernelLogisticRegression else {}
    model = cls(cache_size=2, n_jobs=n_jobs, **kw).fit(X3, Y3)
    peaks = [st["cache_peak_bytes"] for st in model.solver_stats_]
    workers = min(n_jobs, len(peaks))
    assert max(peaks) <= 2 * 2**20 / workers
    assert max(peaks) > 0.9 * 2 * 2**20 / workers  # the share is used: the test would see a larger one


def _tiny_machine(monkeypatch, mb):
    monkeypatch.setattr(memory, "available_bytes", lambda: mb * 2**20)


def test_nssvc_kernel_block_is_refused_before_allocating(monkeypatch):
    X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    _tiny_machine(monkeypatch, 10)  # 2000 x 550 float64 columns (twice) need 17 MB
    with pytest.raises(InsufficientMemoryError, match=r"NSSVC with s=500 .* needs .* MB.*lower s") as err:
        NSSVC(kernel="rbf", s=500).fit(X, y)
    assert isinstance(err.value, ValueError) and isinstance(err.value, MemoryError)
    model = NSSVC(kernel="rbf", s=50, random_state=0).fit(X, y)  # 1.8 MB: fits the same machine
    assert model.score(X, y) > 0.8


def test_nssvc_growth_is_refused_when_the_block_cannot_grow(monkeypatch):
    """Adaptive s grows the resident block; the growth is checked too."""
    X, y = make_classification(n_samples=2000, n_features=5, flip_y=0.3, random_state=0)
    calls = []

    def available():  # room for the first block only
        calls.append(1)
        return (13 if len(calls) == 1 else 1) * 2**20

    monkeypatch.setattr(memory, "available_bytes", available)
    with pytest.raises(InsufficientMemoryError, match="growing its working set"):
        NSSVC(kernel="rbf", s=300, adaptive=True, random_state=0).fit(X, y)
    assert len(calls) >= 2


@pytest.mark.parametrize("cls", [SLMC, SparseKFD])
def test_expansion_blocks_are_refused_before_allocating(monkeypatch, cls):
    X, y = make_classification(n_samples=3000, n_features=5, random_state=0)
    _tiny_machine(monkeypatch, 5)  # 3000 x 300 x 8 B x 4 = 27 MB
    with pytest.raises(InsufficientMemoryError, match="300 expansion vectors .* lower n_expansion"):
        cls(n_expansion=300, max_iter=2, random_state=0).fit(X, y)


def test_unknown_available_memory_refuses_nothing(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: None)
    memory.require(10**18, "anything", "nothing")


def test_available_bytes_reads_the_machine():
    free = memory.available_bytes()
    assert free is None or free > 0


@pytest.mark.parametrize("model", [SVC(), SVR(), NuSVC(), NuSVR(), OneClassSVM(), KernelLogisticRegression(),
                                   SparseKernelLogisticRegression(),
                                   KernelLogisticRegression(solver="nystrom", n_components=40, random_state=0),
                                   NSSVC(kernel="rbf", random_state=0), NSSVC(random_state=0),
                                   SLMC(n_expansion=5, max_iter=3, random_state=0),
                                   SparseKFD(n_expansion=0.2, max_iter=3, random_state=0)],
                         ids=lambda m: type(m).__name__)
def test_fit_budget_terms(model):
    """Every estimator has a stated budget; it grows with cache_size, with X and with N."""
    import warnings

    X, y = make_classification(n_samples=400, n_features=6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, X[:, 0] if isinstance(model, (SVR, NuSVR)) else y)
    budget = memory.fit_budget(model, X)
    assert budget.total == pytest.approx(sum(budget.terms.values()))
    assert budget.terms["X"] >= 2 * X.nbytes and budget.terms["fixed"] == memory.FIXED_BYTES
    assert budget.terms["per_sample"] >= 256 * 400
    if hasattr(model, "cache_size"):
        assert budget.terms["cache"] == model.cache_size * 2**20
    bigger = memory.fit_budget(model, np.vstack([X, X]))
    assert bigger.total > budget.total
    if isinstance(model, (SVR, NuSVR)):  # 2N variables: twice the per-sample bytes of a classifier's
        assert budget.terms["per_sample"] == 2 * memory.fit_budget(SVC(), X).terms["per_sample"]


def test_a_model_without_a_stated_budget_is_refused_with_its_name():
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="no memory budget is stated for LogisticRegression"):
        memory.fit_budget(LogisticRegression(), np.zeros((3, 2)))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_small_cache_reusing_its_row_buffers_gives_the_fit_of_a_large_one(n_jobs):
    """The row cache reuses evicted rows' buffers (spares: no new pages for every row after an
    eviction) and grows rows in place when their buffer has room: with 0.5 MB (1,800 rows of
    ~1,800 floats, evictions and shrinking throughout) the steps, and so the model, are those of a
    cache that holds every row; the peak stays within the budget."""
    X, y = make_classification(n_samples=1800, n_features=10, flip_y=0.1, random_state=1)
    small = SVC(C=10.0, cache_size=0.5, n_jobs=n_jobs).fit(X, y)
    large = SVC(C=10.0, cache_size=500, n_jobs=n_jobs).fit(X, y)
    st = small.solver_stats_[0]
    assert st["cache_misses"] > 1800 and st["cache_peak_bytes"] <= 0.5 * 2**20
    assert small.solver_stats_[0]["n_iter"] == large.solver_stats_[0]["n_iter"]
    np.testing.assert_array_equal(small.support_, large.support_)
    np.testing.assert_array_equal(small.dual_coef_, large.dual_coef_)
