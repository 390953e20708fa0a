"""Dual-problem arithmetic shared by test_csmo.py, test_svr.py and test_warm_start.py.

Everything is recomputed here in float64 from a dense kernel matrix (sklearn.metrics.pairwise), so
that the checks do not depend on the engine's own bookkeeping. The generic dual of the engine is

    min_a 1/2 a'Qa + p'a   s.t.  y'a = 0,  0 <= a <= hi,

SVC: Q = yy' * K, p = -1, hi = C_i.  eps-SVR (2N variables a = [a+, a-], y = [+1, -1]):
Q = [[K, -K], [-K, K]], p = [eps - z, eps + z], hi = [C_i, C_i].
"""

from __future__ import annotations

import numpy as np

EPS32 = 2.0**-24  # the engine keeps kernel rows in float32


def svc_Q(K, y_pm):
    return np.outer(y_pm, y_pm) * K


def svr_Q(K):
    return np.block([[K, -K], [-K, K]])


def svr_y(n):
    return np.r_[np.ones(n), -np.ones(n)]


def svr_p(z, eps):
    z = np.asarray(z, dtype=np.float64)
    return np.r_[eps - z, eps + z]


def dual_objective(Q, p, a):
    return 0.5 * a @ Q @ a + p @ a


def svr_dual_vector(dual_coef, support, n):
    """[a+, a-] (2n values) from an SVR's dual_coef_ (= a+ - a-) and support_ (either library)."""
    if hasattr(dual_coef, "toarray"):  # scikit-learn keeps it sparse after a sparse fit
        dual_coef = dual_coef.toarray()
    c = np.zeros(n)
    c[np.asarray(support)] = np.asarray(dual_coef, dtype=np.float64).ravel()
    return np.r_[np.maximum(c, 0.0), np.maximum(-c, 0.0)]


def svr_objective_from_coef(K, z, eps, coef_full):
    """1/2 c'Kc + eps sum|c| - z'c: the 2N-variable objective at a+ = max(c, 0), a- = max(-c, 0)."""
    c = np.asarray(coef_full, dtype=np.float64)
    return 0.5 * c @ K @ c + eps * np.abs(c).sum() - np.asarray(z, dtype=np.float64) @ c


def kkt_gap(Q, y, p, a, hi):
    """max_{I_up} F - min_{I_low} F with F = -y (Qa + p) (the engine's stopping quantity)."""
    G = Q @ a + p
    F = -y * G
    at_lo = a <= 0
    at_hi = a >= hi
    up = np.where(y > 0, ~at_hi, ~at_lo)
    low = np.where(y > 0, ~at_lo, ~at_hi)
    if not up.any() or not low.any():
        return 0.0
    return float(F[up].max() - F[low].min())


def float32_slack(Q, a):
    """Bound on |(Qa)_engine - (Qa)_float64| from the float32 rows (plus a floor)."""
    return 4 * EPS32 * float(np.max(np.abs(Q) @ np.abs(a))) + 1e-9


def check_feasible(y, a, hi, rel=1e-10):
    assert np.all(a >= 0), a.min()
    assert np.all(a <= hi * (1 + 1e-12) + 1e-15), np.max(a - hi)
    scale = max(1.0, np.abs(a).sum())
    assert abs(y @ a) <= rel * scale, (y @ a, scale)
