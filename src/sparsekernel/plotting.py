"""Figures of the papers, for any fitted sparsekernel model (matplotlib, the ``plot`` extra).

- :func:`plot_decision_boundary`: 2-D decision regions with the expansion vectors marked
  (S-KLR Figs 3 / 5, NSSVM Fig 7);
- :func:`plot_frontier`: accuracy against model size over a path of lam, s or N_z (S-KLR Fig 7);
- :func:`plot_convergence`: the KKT gap or ||F|| against iterations on a log scale (NSSVM Fig 1);
- :func:`plot_reliability`: reliability diagram of several models (KLR against SVC + Platt).

Every function draws on the Axes it is given (a new figure's otherwise) and returns it; nothing
here selects a backend or shows a window, so the functions work under Agg.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

__all__ = ["plot_decision_boundary", "plot_frontier", "plot_convergence", "plot_reliability", "expansion_points"]


def _axes(ax):
    """``ax``, or new axes of pyplot: matplotlib (the ``plot`` extra) is needed only then, so that
    the rest of the module (``expansion_points``, drawing on axes one passes) imports without it."""
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError('sparsekernel.plotting needs matplotlib (the \'plot\' extra): '
                          'pip install "sparsekernel[plot]"') from exc
    return plt.subplots()[1]


def expansion_points(model):
    """The points a fitted model's predictions are expanded on, as a dense (m, n_features) array.

    ``expansion_vectors_`` for SLMC / SparseKFD (and the reduced-set baselines), else
    ``support_vectors_`` (SVC, SVR, KLR, S-KLR, NSSVC); an empty array for a precomputed kernel.

    Parameters
    ----------
    model : fitted sparsekernel estimator

    Returns
    -------
    ndarray of shape (m, n_features)
    """
    pts = getattr(model, "expansion_vectors_", None)
    if pts is None:
        pts = getattr(model, "support_vectors_", None)
    if pts is None:
        raise AttributeError(f"{type(model).__name__} has neither expansion_vectors_ nor support_vectors_ "
                             "(is it fitted?)")
    return np.asarray(pts.toarray() if sp.issparse(pts) else pts, dtype=np.float64)


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def plot_decision_boundary(model, X, y, ax=None, *, grid_resolution=200, margin=0.1, response="auto",
                           show_expansion=True, levels=None, cmap=None, scatter_kwargs=None, expansion_kwargs=None):
    """Decision regions of a fitted 2-D classifier with the training points and the model's
    expansion vectors marked.

    Two classes: the decision function filled in a diverging colormap, its zero level drawn as a
    solid line (the boundary) and ``levels`` (default -1 and +1: the SVM margins) as dashed lines.
    More classes: the regions of the predicted classes. Then one scatter per class of the training
    points, and one scatter of hollow circles on the expansion vectors (support vectors for SVC,
    KLR, S-KLR and NSSVC, the learned ``expansion_vectors_`` for SLMC and SparseKFD), as in S-KLR
    Figs 3 / 5 and NSSVM Fig 7.

    Parameters
    ----------
    model : fitted classifier
        Fitted on 2 features.
    X : array-like of shape (n_samples, 2)
    y : array-like of shape (n_samples,)
    ax : matplotlib Axes or None
    grid_resolution : int, default=200
        Grid points per axis.
    margin : float, default=0.1
        Extra room around the data, as a fraction of its range.
    response : {'auto', 'decision_function', 'predict_proba'}, default='auto'
        What is filled for two classes: 'auto' is decision_function when the model has one.
        With 'predict_proba' the boundary is the level 0.5 and ``levels`` default to none.
    show_expansion : bool, default=True
    levels : sequence of float or None
        Extra dashed contour levels (two classes).
    cmap : str or Colormap or None
        Colormap of the filled regions ('RdBu_r' for two classes, 'tab10' otherwise).
    scatter_kwargs, expansion_kwargs : dict or None
        Passed to the scatters of the training points / of the expansion vectors.

    Returns
    -------
    matplotlib.axes.Axes
        Its collections: the filled contour, the contour lines, one PathCollection per class,
        then (``show_expansion``) one PathCollection of the expansion vectors with label
        "support vectors (m)" or "expansion vectors (m)".
    """
    ax = _axes(ax)
    X = _dense(X)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_decision_boundary needs X with 2 features, got shape {X.shape}")
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = margin * np.where(hi > lo, hi - lo, 1.0)
    g0, g1 = (np.linspace(lo[j] - pad[j], hi[j] + pad[j], grid_resolution) for j in range(2))
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.column_stack([G0.ravel(), G1.ravel()])
    classes = np.asarray(getattr(model, "classes_", np.unique(y)))

    if len(classes) == 2:
        if response == "auto":
            response = "decision_function" if hasattr(model, "decision_function") else "predict_proba"
        if response == "decision_function":
            Z = np.asarray(model.decision_function(grid), dtype=np.float64).reshape(G0.shape)
            boundary, extra = 0.0, (-1.0, 1.0) if levels is None else tuple(levels)
            span = max(float(np.max(np.abs(Z))), 1e-12)
            vmin, vmax = -span, span
        elif response == "predict_proba":
            Z = np.asarray(model.predict_proba(grid))[:, 1].reshape(G0.shape)
            boundary, extra = 0.5, () if levels is None else tuple(levels)
            vmin, vmax = 0.0, 1.0
        else:
            raise ValueError(f"response must be 'auto', 'decision_function' or 'predict_proba', got {response!r}")
        ax.contourf(G0, G1, Z, levels=20, cmap=cmap or "RdBu_r", vmin=vmin, vmax=vmax, alpha=0.5)
        ax.contour(G0, G1, Z, levels=[boundary], colors="k", linewidths=1.5)
        inside = [v for v in sorted(extra) if Z.min() < v < Z.max()]
        if inside:
            ax.contour(G0, G1, Z, levels=inside, colors="k", linewidths=0.8, linestyles="--")
    else:
        index = np.searchsorted(classes, model.predict(grid)).reshape(G0.shape)
        ax.contourf(G0, G1, index, levels=np.arange(len(classes) + 1) - 0.5, cmap=cmap or "tab10",
                    vmin=-0.5, vmax=9.5, alpha=0.35)

    colours = ["tab:blue", "tab:red"] if len(classes) == 2 else [f"C{k % 10}" for k in range(len(classes))]
    for k, c in enumerate(classes):
        mask = y == c
        kw = {"s": 18, "color": colours[k], "edgecolors": "none", "label": str(c)}
        kw.update(scatter_kwargs or {})
        ax.scatter(X[mask, 0], X[mask, 1], **kw)

    if show_expansion:
        pts = expansion_points(model)
        if pts.size:
            name = "expansion vectors" if hasattr(model, "expansion_vectors_") else "support vectors"
            kw = {"s": 80, "facecolors": "none", "edgecolors": "k", "linewidths": 1.2,
                  "label": f"{name} ({len(pts)})"}
            kw.update(expansion_kwargs or {})
            ax.scatter(pts[:, 0], pts[:, 1], **kw)
    ax.set_xlim(g0[0], g0[-1])
    ax.set_ylim(g1[0], g1[-1])
    ax.set_title(type(model).__name__)
    ax.legend(loc="best", fontsize="small")
    return ax


def _records(results):
    """A list of dicts from a list of dicts, a dict of columns or a DataFrame-like (``to_dict``)."""
    if hasattr(results, "to_dict"):
        return results.to_dict("records")
    if isinstance(results, dict):
        keys = list(results)
        n = len(results[keys[0]]) if keys else 0
        return [{k: results[k][i] for k in keys} for i in range(n)]
    return list(results)


def _groups(records, key):
    """[(group value, its records)] in the order of first appearance ([(None, records)] without key)."""
    if key is None:
        return [(None, records)]
    out = {}
    for r in records:
        out.setdefault(r.get(key), []).append(r)
    return list(out.items())


def plot_frontier(results, ax=None, x="n_expansion", y="accuracy", label_by=None, *, annotate=None, logx=False,
                  marker="o"):
    """Accuracy against model size over a path of lam, s or N_z (S-KLR Fig 7).

    Parameters
    ----------
    results : list of dict, dict of lists, or DataFrame
        One record per fitted model, holding at least the keys ``x`` and ``y``.
    ax : matplotlib Axes or None
    x, y : str, default='n_expansion', 'accuracy'
        The keys on the two axes (their names become the axis labels).
    label_by : str or None
        Key whose values split the records into lines (the model's name, say); one line (without a
        legend) when None. Each line is sorted by ``x``.
    annotate : str or None
        Key whose value is written next to each point (the lam, s or N_z of the path).
    logx : bool, default=False
        Log scale for the model size.
    marker : str, default='o'

    Returns
    -------
    matplotlib.axes.Axes
        With one Line2D per group, labelled by its ``label_by`` value.
    """
    ax = _axes(ax)
    records = [r for r in _records(results) if r.get(x) is not None and r.get(y) is not None]
    for group, recs in _groups(records, label_by):
        recs = sorted(recs, key=lambda r: float(r[x]))
        xs = np.array([float(r[x]) for r in recs])
        ys = np.array([float(r[y]) for r in recs])
        ax.plot(xs, ys, marker=marker, label=None if group is None else str(group))
        if annotate is not None:
            for r, xv, yv in zip(recs, xs, ys):
                v = r.get(annotate)
                text = f"{v:.3g}" if isinstance(v, numbers.Real) else str(v)
                ax.annotate(text, (xv, yv), textcoords="offset points", xytext=(3, 3), fontsize="x-small")
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(True, alpha=0.3)
    if label_by is not None and records:
        ax.legend(loc="best", fontsize="small")
    return ax


def plot_convergence(history, ax=None, metric="kkt_gap", tol=None, *, x="iteration", label_by=None, label=None):
    """A solver's optimality measure against iterations on a log scale (NSSVM Fig 1).

    Parameters
    ----------
    history : list of dict, or dict of label -> list of dict
        Progress records, each with the key ``x`` and (when it reports it) ``metric``; records
        without the metric or with a non-positive value are skipped. A dict draws one line per
        entry. NSSVC's ``history_[k]`` rows are (||F||, ACC, s): pass
        ``[{"iteration": i, "norm_F": h[0]} for i, h in enumerate(model.history_[k])]``.
    ax : matplotlib Axes or None
    metric : str, default='kkt_gap'
        The key plotted ('kkt_gap' for SMO, the ||F|| key for NSSVM, any other key).
    tol : float or None
        Drawn as a horizontal dashed line (the stopping tolerance).
    x : str, default='iteration'
    label_by : str or None
        Key splitting the records into lines (the sub-problem of a one-vs-one fit, say).
    label : str or None
        Legend label of a single line.

    Returns
    -------
    matplotlib.axes.Axes
        Log-scale y axis, one Line2D per line, plus the tol line (label "tol").
    """
    ax = _axes(ax)
    if isinstance(history, dict):
        lines = [(str(k), list(v)) for k, v in history.items()]
    else:
        lines = [(label if g is None else str(g), recs) for g, recs in _groups(_records(history), label_by)]
    for name, recs in lines:
        pts = [(float(r[x]), float(r[metric])) for r in recs if r.get(metric) is not None and x in r]
        pts = sorted(p for p in pts if np.isfinite(p[1]) and p[1] > 0)
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, label=name)
    if tol is not None:
        ax.axhline(float(tol), color="k", linestyle="--", linewidth=0.8, label="tol")
    ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(metric)
    ax.grid(True, which="both", alpha=0.3)
    if any(line.get_label() and not line.get_label().startswith("_") for line in ax.get_lines()):
        ax.legend(loc="best", fontsize="small")
    return ax


def _confidence(y_true, proba, pos_label, classes):
    """(predicted probability, outcome in {0, 1}) of a binary or top-label reliability diagram."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim == 2 and proba.shape[1] > 2:
        classes = np.unique(y_true) if classes is None else np.asarray(classes)
        if len(classes) != proba.shape[1]:
            raise ValueError(f"probabilities have {proba.shape[1]} columns but there are {len(classes)} classes; "
                             "pass classes=model.classes_")
        top = np.argmax(proba, axis=1)
        return proba[np.arange(len(top)), top], (classes[top] == y_true).astype(np.float64)
    if proba.ndim == 2:
        proba = proba[:, -1]
    if pos_label is None:
        pos_label = (np.unique(y_true) if classes is None else np.asarray(classes))[-1]
    return proba, (y_true == pos_label).astype(np.float64)


def plot_reliability(y_true, probas, ax=None, n_bins=10, *, pos_label=None, classes=None, strategy="uniform"):
    """Reliability diagram of several models: observed frequency against predicted probability in
    ``n_bins`` bins, with the diagonal of perfect calibration (KLR against SVC + Platt).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    probas : dict of label -> array
        Each model's probabilities: of the positive class, shape (n,), or ``predict_proba`` (two
        columns: the second is the positive class; more columns: the top-label diagram, the
        largest probability against whether its class is right).
    ax : matplotlib Axes or None
    n_bins : int, default=10
    pos_label : label or None
        The positive class of binary problems (default: the largest label).
    classes : array-like or None
        The columns' classes for more than two (default: the sorted labels of ``y_true``).
    strategy : {'uniform', 'quantile'}, default='uniform'
        Bins of equal width or of equal counts.

    Returns
    -------
    matplotlib.axes.Axes
        The diagonal first (label "perfectly calibrated"), then one Line2D per model labelled
        "<name> (ECE x.xxx)", with the expected calibration error of the bins.
    """
    ax = _axes(ax)
    y_true = np.asarray(y_true)
    if strategy not in ("uniform", "quantile"):
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    if not isinstance(n_bins, numbers.Integral) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="0.5", label="perfectly calibrated")
    for name, proba in probas.items():
        p, outcome = _confidence(y_true, proba, pos_label, classes)
        if strategy == "quantile":
            edges = np.percentile(p, np.linspace(0.0, 100.0, n_bins + 1))
        else:
            edges = np.linspace(0.0, 1.0, n_bins + 1)
        which = np.searchsorted(edges[1:-1], p)  # scikit-learn's calibration_curve binning
        count = np.bincount(which, minlength=len(edges) - 1)
        used = count > 0
        mean_p = np.bincount(which, weights=p, minlength=len(count))[used] / count[used]
        freq = np.bincount(which, weights=outcome, minlength=len(count))[used] / count[used]
        ece = float(np.sum(count[used] * np.abs(mean_p - freq)) / len(p))
        ax.plot(mean_p, freq, marker="o", label=f"{name} (ECE {ece:.3f})")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_aspect("equal")
    ax.set_xlabel("mean predicted probability")
    ax.set_ylabel("observed frequency")
    ax.legend(loc="upper left", fontsize="small")
    return ax
