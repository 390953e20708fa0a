"""The main job: sparsekernel.SVC next to scikit-learn's SVC on data that ships with scikit-learn
(and a synthetic set large enough for timings to mean something), then sparse kernel logistic
regression next to SVC(probability=True), whose Platt probabilities come from an inner 5-fold CV
and can disagree with its own predict, then a cross-validated grid search over (C, gamma) with
PathSearchCV (warm-started along C) next to scikit-learn's GridSearchCV, then the sparse linear SVM
NSSVC on the NSSVM paper's Example 4.1 (a million samples) next to LinearSVC and
LogisticRegression, and the sparse large margin classifier SLMC (learned expansion vectors, 10 % of
the SVM's support vectors) next to the full SVC; printed as tables.

    sparsekernel demo            # or: sparsekernel-demo
"""

from __future__ import annotations

import time
import warnings

import click
import numpy as np
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SklearnSVC, LinearSVC

from ..datasets import make_nssvm_gaussians

from ..klr import SparseKernelLogisticRegression
from ..model_selection import PathSearchCV
from ..nssvm import NSSVC
from ..slmc import SLMC
from ..svm import SVC


def _datasets(n_synthetic):
    from sklearn.datasets import load_breast_cancer, load_digits, make_classification  # (heavy: as above)

    X, y = load_breast_cancer(return_X_y=True)
    yield "breast_cancer", StandardScaler().fit_transform(X), y
    X, y = load_digits(return_X_y=True)
    yield "digits (10 classes)", X / 16.0, y
    X, y = make_classification(n_samples=n_synthetic, n_features=20, n_informative=10, flip_y=0.05,
                               random_state=0)
    yield f"synthetic {n_synthetic}x20", X, y


def _fit(model, Xtr, ytr, Xte, yte):
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    fit = time.perf_counter() - t0
    return fit, 100.0 * np.mean(model.predict(Xte) == yte), len(model.support_)


@click.command()
@click.option("--C", "C", type=click.FloatRange(0.0, min_open=True), default=1.0, show_default=True,
              help="C of the SVC, S-KLR and SLMC tables' models (the grid search and NSSVC tables have their own).")
@click.option("--n-synthetic", type=click.IntRange(100), default=20000, show_default=True,
              help="Samples of the synthetic data set in the SVC and S-KLR tables (the grid search takes at most "
                   "4000 of them; the SLMC table, 4000).")
@click.option("--n-nssvm", type=click.IntRange(100), default=1_000_000, show_default=True,
              help="Training samples (and as many test samples) of the NSSVC table, the NSSVM paper's Example 4.1.")
def demo(C, n_synthetic, n_nssvm):
    """Print the demo tables: sparsekernel's SVC, sparse KLR, grid search, NSSVC and SLMC next to
    scikit-learn's (a few minutes at the default sizes)."""
    return _tables(C, n_synthetic, n_nssvm)


def _tables(C, n_synthetic, n_nssvm):
    header = (f"{'data set':<22}{'n':>7}{'sk fit s':>10}{'sklearn s':>11}{'ratio':>7}"
              f"{'sk acc%':>9}{'skl acc%':>9}{'sk nSV':>8}{'skl nSV':>8}")
    print(f"sparsekernel.SVC vs sklearn.svm.SVC (rbf, C={C}, gamma='scale', tol=1e-3)")
    print(header)
    print("-" * len(header))
    for name, X, y in _datasets(n_synthetic):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        t_sk, acc_sk, nsv_sk = _fit(SVC(C=C), Xtr, ytr, Xte, yte)
        t_skl, acc_skl, nsv_skl = _fit(SklearnSVC(C=C), Xtr, ytr, Xte, yte)
        print(f"{name:<22}{len(ytr):>7}{t_sk:>10.3f}{t_skl:>11.3f}{t_sk / t_skl:>7.2f}"
              f"{acc_sk:>9.2f}{acc_skl:>9.2f}{nsv_sk:>8}{nsv_skl:>8}")
    print()
    print(f"sparsekernel.SparseKernelLogisticRegression (lam='auto') vs sklearn.svm.SVC(probability=True) "
          f"(rbf, C={C}, gamma='scale')")
    header = (f"{'data set':<22}{'n':>7}{'sk fit s':>10}{'sklearn s':>11}{'ratio':>7}"
              f"{'sk logloss':>11}{'skl logloss':>12}{'sk kept':>8}{'skl pred!=argmax':>17}")
    print(header)
    print("-" * len(header))
    for name, X, y in _datasets(n_synthetic):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        row = []
        for model in (SparseKernelLogisticRegression(C=C), SklearnSVC(C=C, probability=True, random_state=0)):
            t0 = time.perf_counter()
            with warnings.catch_warnings():  # scikit-learn 1.9 deprecates probability=True
                warnings.simplefilter("ignore", FutureWarning)
                model.fit(Xtr, ytr)
            fit = time.perf_counter() - t0
            P = model.predict_proba(Xte)
            logloss = log_loss(yte, P, labels=model.classes_)
            disagree = int(np.sum(model.predict(Xte) != model.classes_[np.argmax(P, axis=1)]))
            row.append((fit, logloss, disagree, getattr(model, "n_expansion_", len(model.support_))))
        (t_sk, ll_sk, _, kept), (t_skl, ll_skl, dis_skl, _) = row
        print(f"{name:<22}{len(ytr):>7}{t_sk:>10.3f}{t_skl:>11.3f}{t_sk / t_skl:>7.2f}"
              f"{ll_sk:>11.4f}{ll_skl:>12.4f}{kept:>8}{dis_skl:>17}")
    print("(our predict is the argmax of our predict_proba by construction. C weighs the logistic loss, not the\n"
          " hinge loss, so the same C regularises the two models differently: compare at a tuned C, e.g. --C 10.)")
    print()
    _grid_search_table(n_synthetic)
    print()
    _nssvm_table(n_nssvm)
    print()
    _slmc_table(C)
    return 0


def _predict_seconds(model, X, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.decision_function(X)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _slmc_table(C, n_batch=20000):
    """SLMC with N_z = 10 % of the SVM's support vectors (per one-vs-rest problem), against the full
    sparsekernel.SVC: test error, expansion vectors against support vectors (the kernel evaluations
    per predicted sample), and the time to predict a batch of n_batch samples."""
    print(f"sparse large margin classifier SLMC(n_expansion=0.1) vs the full SVC (rbf, C={C}, gamma='scale'); "
          f"prediction time on {n_batch} samples")
    header = (f"{'data set':<22}{'n':>7}{'SVC err%':>9}{'SLMC err%':>10}{'nSV':>6}{'N_z':>6}{'SVC fit s':>10}"
              f"{'SLMC fit s':>11}{'SVC pred s':>11}{'SLMC pred s':>12}{'speed-up':>9}")
    print(header)
    print("-" * len(header))
    for name, X, y in _datasets(4000):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        batch = Xte[np.arange(n_batch) % len(Xte)]
        svc, slmc = SVC(C=C), SLMC(0.1, C=C, random_state=0)
        fits = []
        for model in (svc, slmc):
            t0 = time.perf_counter()
            with warnings.catch_warnings():  # SLMC warns when its outer L-BFGS stops on max_iter
                warnings.simplefilter("ignore")
                model.fit(Xtr, ytr)
            fits.append(time.perf_counter() - t0)
        err_svc, err_slmc = (100.0 * (1.0 - m.score(Xte, yte)) for m in (svc, slmc))
        p_svc, p_slmc = _predict_seconds(svc, batch), _predict_seconds(slmc, batch)
        print(f"{name:<22}{len(ytr):>7}{err_svc:>9.2f}{err_slmc:>10.2f}{len(svc.support_):>6}"
              f"{len(slmc.expansion_vectors_):>6}{fits[0]:>10.3f}{fits[1]:>11.3f}{p_svc:>11.4f}{p_slmc:>12.4f}"
              f"{p_svc / p_slmc:>8.1f}x")
    print("(N_z counts the expansion vectors of all one-vs-rest problems; nSV the SVC's distinct support vectors.)")


def _nssvm_table(m):
    """NSSVC (defaults: Algorithm 2, s(1), C = 0.25, c = C / 100) on Example 4.1 of the NSSVM paper,
    m training and m test samples, against scikit-learn's linear classifiers."""
    from sklearn.linear_model import LogisticRegression  # (heavy: imported when the demo runs)

    X, y = make_nssvm_gaussians(2 * m, random_state=0)
    Xtr, ytr, Xte, yte = X[:m], y[:m], X[m:], y[m:]
    print(f"sparse linear SVM, NSSVM Example 4.1 (2-D Gaussians, Bayes accuracy 96.93%), {m} train / {m} test")
    header = f"{'method':<34}{'fit s':>8}{'train acc%':>12}{'test acc%':>11}{'support vectors':>17}"
    print(header)
    print("-" * len(header))
    for name, model in (("sparsekernel NSSVC", NSSVC(random_state=0)),
                        ("sparsekernel NSSVC refit_intercept", NSSVC(random_state=0, refit_intercept=True)),
                        ("sklearn LinearSVC", LinearSVC()),
                        ("sklearn LogisticRegression", LogisticRegression())):
        t0 = time.perf_counter()
        model.fit(Xtr, ytr)
        fit = time.perf_counter() - t0
        nsv = str(len(model.support_)) if hasattr(model, "support_") else "-"
        print(f"{name:<34}{fit:>8.3f}{100 * model.score(Xtr, ytr):>12.2f}{100 * model.score(Xte, yte):>11.2f}"
              f"{nsv:>17}")


def _grid_search_table(n_synthetic):
    """5-fold grid search over C = 2^-3..2^11 (x4) and gamma = scale x 4^(-2..1): PathSearchCV with
    sparsekernel.SVC(solver='csmo'), folds walked in parallel threads (n_jobs=-1, one thread per fit),
    against GridSearchCV with sklearn.svm.SVC (n_jobs=-1, processes)."""
    Cs = [2.0 ** k for k in range(-3, 12, 2)]
    print(f"grid search, 5-fold CV, C = 2^-3..2^11 (x4) x 4 gammas ({len(Cs) * 4} candidates): sparsekernel "
          f"PathSearchCV(SVC(solver='csmo', n_jobs=1), n_jobs=-1) vs sklearn GridSearchCV(SVC(), n_jobs=-1)")
    header = f"{'data set':<22}{'n':>7}{'sk s':>9}{'sklearn s':>11}{'ratio':>7}{'sk best':>9}{'skl best':>10}  same best"
    print(header)
    print("-" * len(header))
    for name, X, y in _datasets(min(n_synthetic, 4000)):
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
        scale = 1.0 / (Xtr.shape[1] * Xtr.var())
        grid = {"C": Cs, "gamma": [scale * 4.0 ** k for k in (-2, -1, 0, 1)]}
        cv = StratifiedKFold(5, shuffle=True, random_state=0)
        rows = []
        for search in (PathSearchCV(SVC(solver="csmo", n_jobs=1), grid, cv=cv, refit=False, n_jobs=-1),
                       GridSearchCV(SklearnSVC(), grid, cv=cv, refit=False, n_jobs=-1)):
            t0 = time.perf_counter()
            search.fit(Xtr, ytr)
            rows.append((time.perf_counter() - t0, search.best_score_, search.best_params_))
        (t_sk, s_sk, p_sk), (t_skl, s_skl, p_skl) = rows
        print(f"{name:<22}{len(ytr):>7}{t_sk:>9.2f}{t_skl:>11.2f}{t_sk / t_skl:>7.2f}{s_sk:>9.4f}{s_skl:>10.4f}"
              f"  {'yes' if p_sk == p_skl else 'no'}")

