"""
Probabilities: KLR with C by cross-validation against SVC + Platt
=================================================================

Kernel logistic regression's probabilities come from the model itself: KernelLogisticRegressionCV
chooses C by cross-validated log-loss (the default C = 1 under-fits), and
SparseKernelLogisticRegressionCV keeps at most 30 % of the points (``max_kept``).
SVC(probability=True) fits a sigmoid on an inner 5-fold cross-validation (Platt), whose
probabilities can disagree with its own predict.

Neither wins everywhere: on digits KLR's held-out log-loss is well below Platt's; on
breast_cancer Platt's is the lower one. benchmarks/results/proba.md has 21 sets, up to 15,000
rows, with scikit-learn-intelex and a Nystroem pipeline beside them.

    python examples/probabilities.py [reliability.png]
"""

import os
import sys
import warnings

from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsekernel import SVC, KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV

probas = {}
for data_name, load in (("digits", load_digits), ("breast_cancer", load_breast_cancer)):
    X, y = load(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    models = {"KernelLogisticRegressionCV": KernelLogisticRegressionCV(random_state=0),
              "SparseKernelLogisticRegressionCV": SparseKernelLogisticRegressionCV(random_state=0),
              "SVC(probability=True)": SVC(probability=True, random_state=0)}
    losses = {}
    for name, model in models.items():
        pipe = make_pipeline(StandardScaler(), model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # probability=True is deprecated by scikit-learn 1.9
            pipe.fit(X_train, y_train)
        p = pipe.predict_proba(X_test)
        losses[name] = log_loss(y_test, p)
        if data_name == "breast_cancer":
            probas[name] = p
        agree = (pipe.classes_[p.argmax(axis=1)] == pipe.predict(X_test)).mean()
        size = model.estimator_.n_expansion_ if hasattr(model, "estimator_") else len(model.support_)
        print(f"{data_name:14s} {name:32s} log-loss {losses[name]:.3f}  accuracy "
              f"{(pipe.predict(X_test) == y_test).mean():.3f}  argmax(proba) = predict on {100 * agree:.1f} %  "
              f"expansion vectors {size} of {len(y_train)}")
    print(f"{data_name:14s} lowest log-loss: {min(losses, key=losses.get)}")

if len(sys.argv) > 1:  # the reliability diagram (matplotlib: pip install "sparsekernel[plot]")
    import matplotlib

    matplotlib.use("Agg")
    from sparsekernel.plotting import plot_reliability

    ax = plot_reliability(y_test, {k: v[:, 1] for k, v in probas.items()})
    ax.figure.savefig(sys.argv[1])
    print("wrote", os.path.basename(sys.argv[1]))
