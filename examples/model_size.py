"""
A model size you choose: SLMC against the full SVC
==================================================

A kernel classifier whose size you choose: SLMC learns N_z expansion vectors (not training
points), so prediction costs N_z kernel evaluations per sample, against the full SVC's N_SV.

    python examples/model_size.py
"""

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sparsekernel import SLMC, SVC

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
batch = X_test[np.arange(20000) % len(X_test)]


def predict_seconds(model):
    t0 = time.perf_counter()
    model.decision_function(batch)
    return time.perf_counter() - t0


svc = SVC(C=10.0).fit(X_train, y_train)
print(f"full SVC: {len(svc.support_)} support vectors, test error {100 * (svc.predict(X_test) != y_test).mean():.2f} %,"
      f" 20k predictions in {predict_seconds(svc):.3f} s")
for n_z in (5, 10, 20):  # expansion vectors per one-vs-rest problem
    slmc = SLMC(n_z, C=10.0, random_state=0).fit(X_train, y_train)  # stops when W no longer falls (tol)
    print(f"SLMC N_z = {n_z:2d} x 10 classes: test error {100 * (slmc.predict(X_test) != y_test).mean():.2f} %,"
          f" 20k predictions in {predict_seconds(slmc):.3f} s, fit {slmc.fit_time_:.1f} s"
          f" ({slmc.n_iter_.max()} L-BFGS iterations at most)")
