"""
Probabilities: KLR with C by cross-validation against SVC + Platt
=================================================================

Kernel logistic regression's probabilities come from the model itself: KernelLogisticRegressionCV
chooses C by cross-validated log-loss (the default C = 1 under-fits), and
SparseKernelLogisticRegressionCV the smallest model within 5 % of the best log-loss.
SVC(probability=True) fits a sigmoid on an inner 5-fold cross-validation (Platt), whose
probabilities can disagree with its own predict.

    python examples/probabilities.py [reliability.png]
"""

import sys
import warnings

from sklearn.datasets import load_breast_cancer
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sparsekernel import SVC, KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)

models = {"KernelLogisticRegressionCV": KernelLogisticRegressionCV(),
          "SparseKernelLogisticRegressionCV": SparseKernelLogisticRegressionCV(),
          "SVC(probability=True)": SVC(probability=True, random_state=0)}
probas = {}
for name, model in models.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # probability=True is deprecated by scikit-learn 1.9
        model.fit(X_train, y_train)
    p = model.predict_proba(X_test)
    probas[name] = p
    agree = (p.argmax(axis=1) == model.predict(X_test).astype(int)).mean()
    size = model.estimator_.n_expansion_ if hasattr(model, "estimator_") else len(model.support_)
    print(f"{name:32s} log-loss {log_loss(y_test, p):.3f}  accuracy {(model.predict(X_test) == y_test).mean():.3f}"
          f"  argmax(proba) = predict on {100 * agree:.1f} %  expansion vectors {size}")

if len(sys.argv) > 1:  # the reliability diagram (matplotlib: pip install "sparsekernel[plot]")
    import matplotlib

    matplotlib.use("Agg")
    from sparsekernel.plotting import plot_reliability

    ax = plot_reliability(y_test, {k: v[:, 1] for k, v in probas.items()})
    ax.figure.savefig(sys.argv[1])
    print("wrote", sys.argv[1])
