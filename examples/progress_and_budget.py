"""
Progress, time budgets and verbose output
=========================================

Watch a fit and bound it: scikit-learn's ProgressBar (scikit-learn >= 1.9, with rich), a time
budget that returns the solver's current iterate as a usable model, and verbose text.

    python examples/progress_and_budget.py
"""

import warnings

from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from sparsekernel import SVC

X, y = make_classification(n_samples=8000, n_features=20, n_informative=10, n_classes=3, flip_y=0.05,
                           random_state=0)

try:
    from sklearn.callback import ProgressBar

    SVC(C=10.0).set_callbacks(ProgressBar()).fit(X, y)  # one bar per one-vs-one problem
except ImportError:
    print("(no sklearn.callback.ProgressBar here: scikit-learn < 1.9 or rich missing)")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    budget = SVC(C=1000.0, tol=1e-6, time_limit=0.5).fit(X, y)
print(f"time_limit=0.5: converged_={budget.converged_}, training accuracy {(budget.predict(X) == y).mean():.3f}, "
      f"{sum(issubclass(w.category, ConvergenceWarning) for w in caught)} ConvergenceWarning")

SVC(C=10.0, verbose=True).fit(X[:3000], y[:3000])  # the same progress as text
