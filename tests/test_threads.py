"""Threads as scikit-learn means them: ``n_jobs=None`` is every OpenMP thread the process may use,
never more (OMP_NUM_THREADS, threadpoolctl limits, the limits joblib sets in its workers, CPU
affinity), so that ``GridSearchCV(SVC(), ..., n_jobs=k)`` does not start k times the cores."""

import os
import subprocess
import sys

import numpy as np
import pytest
from joblib import cpu_count
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from sparsekernel import NSSVC, SVC, KernelLogisticRegression, _core
from sparsekernel._base import available_threads, n_threads

X, Y = make_classification(n_samples=300, n_features=6, random_state=0)


def _threads_of_fit(est, X, y):
    """A scorer: the threads the fitted SVC's solves were given (solver_stats_)."""
    return float(max(s["n_threads"] for s in est.solver_stats_))


def test_none_is_at_most_the_cpus_the_process_may_use():
    assert 1 <= n_threads(None) <= available_threads() <= cpu_count()
    assert n_threads(-1) == available_threads()
    assert n_threads(-2) == max(1, available_threads() - 1)
    assert n_threads(3) == 3  # an explicit count is the user's choice


def test_none_leaves_the_cores_other_processes_run_on(monkeypatch):
    """n_jobs=None takes only the CPUs nothing else runs on now (/proc/loadavg's runnable count,
    this thread included): with every other CPU busy, one thread."""
    import sparsekernel._base as base

    monkeypatch.setattr(base, "available_threads", lambda: 8)
    monkeypatch.setattr(base.os, "cpu_count", lambda: 8)
    for running, expected in [(1, 8), (2, 7), (5, 4), (8, 1), (40, 1)]:
        monkeypatch.setattr(base, "open", lambda *a, r=running, **k: _LoadAvg(r), raising=False)
        assert base.idle_cpus() == expected
        assert base.n_threads(None) == expected
        assert base.n_threads(-1) == 8  # all of them, as asked
    monkeypatch.setattr(base, "open", lambda *a, **k: (_ for _ in ()).throw(OSError("no /proc")), raising=False)
    assert base.idle_cpus() is None and base.n_threads(None) == 8


class _LoadAvg:
    """A stand-in of /proc/loadavg with `running` runnable threads."""

    def __init__(self, running):
        self.text = f"0.50 0.40 0.30 {running}/700 12345\n".encode()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self):
        return self.text


@pytest.mark.parametrize("bad", [0, 1.5, "2"])
def test_bad_n_jobs_is_a_value_error(bad):
    with pytest.raises(ValueError, match="n_jobs"):
        n_threads(bad)


def test_threadpool_limits_one_gives_one_thread():
    with threadpool_limits(limits=1, user_api="openmp"):
        assert available_threads() == 1
        assert n_threads(None) == 1
        svc = SVC().fit(X, Y)
        assert all(s["n_threads"] == 1 for s in svc.solver_stats_)
    assert n_threads(None) <= min(cpu_count(), available_threads())


def test_omp_num_threads_one_gives_one_thread():
    code = ("from sklearn.datasets import make_classification\n"
            "from sparsekernel import SVC\nfrom sparsekernel._base import n_threads\n"
            "X, y = make_classification(n_samples=200, random_state=0)\n"
            "s = SVC().fit(X, y)\n"
            "print(n_threads(None), s.solver_stats_[0]['n_threads'])\n")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]


def test_fits_inside_grid_search_workers_share_the_cpus():
    """Each of GridSearchCV's 2 workers gets at most its share of the CPUs (joblib's limit in the
    worker), not all of them: the fits' own threads times the workers never exceed the CPUs."""
    share = max(1, cpu_count() // 2)
    search = GridSearchCV(SVC(), {"C": [0.5, 1.0, 2.0]}, cv=2, n_jobs=2, scoring=_threads_of_fit).fit(X, Y)
    used = search.cv_results_["mean_test_score"]
    assert np.all(used >= 1) and np.all(used <= share), used


@pytest.mark.parametrize("make", [lambda: KernelLogisticRegression(), lambda: NSSVC(kernel="rbf", s=20)])
def test_other_estimators_resolve_none_the_same_way(make, monkeypatch):
    """Every estimator's n_jobs=None goes through the same resolution (patched here to 1: the fit
    must ask it, not os.cpu_count())."""
    import sparsekernel._base as base

    calls = []
    real = base.available_threads

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(base, "available_threads", counted)
    make().fit(X, Y)
    assert calls


def test_a_team_only_where_a_step_pays_for_it():
    """The engine starts a team of threads only when a step's passes split into chunks
    (_core.TEAM_MIN_OPS operations): iris's problems run on one thread at n_jobs=2, a 6,000-row
    problem on two; the models are the same whatever the threads (the steps are)."""
    from sklearn.datasets import load_iris

    Xi, yi = load_iris(return_X_y=True)
    small = SVC(n_jobs=2).fit(Xi, yi)
    assert [s["team_threads"] for s in small.solver_stats_] == [1, 1, 1]
    one = SVC(n_jobs=1).fit(Xi, yi)
    np.testing.assert_array_equal(small.dual_coef_, one.dual_coef_)
    Xb, yb = make_classification(n_samples=6000, n_features=20, random_state=0)
    big = SVC(n_jobs=2).fit(Xb, yb)
    assert big.solver_stats_[0]["team_threads"] == 2
    assert 6000 * (4 + 20) >= _core.TEAM_MIN_OPS > 100 * (4 + 4)
    np.testing.assert_array_equal(big.dual_coef_, SVC(n_jobs=1).fit(Xb, yb).dual_coef_)


def test_team_counters_add_up():
    """The engine's team counters (parallel.hpp TeamStats, solver_stats_[0]['team']: the parallel
    model's inputs, benchmarks/bench_manycore.py --model) are consistent: every loop's wall time is
    the master's own chunks plus its wait for the helpers', the helpers' work fits in the loops'
    wall time, the work filed by capacity is all the work, the loops are inside the solve; one
    thread has no team and no loops."""
    X, y = make_classification(n_samples=6000, n_features=20, random_state=0)
    two = SVC(n_jobs=2).fit(X, y).solver_stats_[0]
    if two["team_threads"] != 2:
        pytest.skip("the process may use one thread only")
    t = two["team"]
    assert t["loops"] > 0 and t["chunks"] >= t["loops"]
    assert t["wall_us"] == pytest.approx(t["master_work_us"] + t["wait_us"], rel=1e-9)
    assert 0 < t["helper_work_us"] <= t["wall_us"] * 1.001 + 1.0
    assert np.sum(t["work_by_capacity_us"]) == pytest.approx(t["master_work_us"] + t["helper_work_us"] + t["solo_us"],
                                                            rel=1e-9)
    assert t["wall_us"] + t["solo_us"] <= t["solve_us"]
    assert list(t["capacity_bounds"]) == sorted(t["capacity_bounds"]) and t["capacity_bounds"][0] == 1
    one = SVC(n_jobs=1).fit(X, y).solver_stats_[0]["team"]
    assert one["loops"] == 0 and one["wall_us"] == 0 and one["solve_us"] > 0
