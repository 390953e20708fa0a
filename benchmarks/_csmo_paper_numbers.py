"""Published numbers of the conjugate-SMO paper, for side-by-side tables.

Torres-Barrán, Alaíz & Dorronsoro, "Faster SVM Training via Conjugate SMO", section 4,
transcribed from ``shared/papers/conjugate-smo-torres-alaiz-dorronsoro.txt`` (text extracted from
the LaTeX source, tables inline).  Notes on the transcription:

* Table 1 (data-set sizes) is section 4.1.  The paper's cpusmall has 6,143 rows (LIBSVM's
  cpusmall has 8,192; 6,143 is about 3/4 of it and the paper does not say which rows).
* Table 2 (section 4.2): fit times in seconds of LIBSVM's second-order SMO and of CSMO (the
  authors' LIBSVM fork), gamma = 1/d, tol (eps_KKT) = 1e-3, features scaled to [-1, 1], averages
  of 10 runs, minimum over 3 repetitions.  **Misprint/ambiguity**: the table's header says
  C = 1, 100, 10000 while the text says "C = 10, 100, 10000"; we key the first column by 1 (the
  header) and keep the text's value in ``TABLE2_C_TEXT``.  The paper's CSMO does not shrink
  ("our Conjugate SMO implementation is not adapted to shrinking"); LIBSVM's SMO shrinks by
  default and the text does not say it was turned off.  The regression sets of Table 2 (cpusmall,
  trajectory) do not state epsilon: LIBSVM's default is 0.1.  The caption lists "adult8, web8,
  cpusmall and trajectory"; trajectory is not available to us, its rows are kept for reference.
* Tables 3 and 4 (section 4.3): 5-fold CV grid searches.  "Time (h)" as printed (the text: "the
  times reported correspond to the 5-fold averages of the accumulated hyper-parameter search
  times over each fold", i.e. the accumulated time of the grid on one fold, averaged over the 5
  folds).  The printed RTD agrees with the one recomputed from the printed hours within 0.03
  (ijcnn1 differs by 0.02, rounding).  Hyper-parameters are log2 values; accuracy is a percentage (Table 3); Table 4's column
  is headed "MSE" (the text says "mean absolute error"; the values - abalone 4.5 on the raw
  rings - are the usual MSE).  RTD = 100 (t_SMO - t_CSMO) / t_SMO, as printed (3 decimals).
* The grids (section 4.3, "the hyper-parameter values considered in Fan et al. (2005)"):
  classification C = 2^-5, 2^-3, ..., 2^15 (11 values) x gamma = 2^-15, 2^-13, ..., 2^3
  (10 values) = 110 points.  Regression: gamma as above, C in "[2^-1, 2^-15]" - **misprint** for
  [2^-1, 2^15] (steps of 2 in log2: 9 values, the only reading that gives their "9 x 10 x 8 = 720")
  and epsilon = 2^-8, 2^-7, ..., 2^-1 (8 values); then the top C = 2^13, 2^15 and the bottom
  gamma = 2^-15, 2^-13 are skipped: 7 x 8 x 8 = 448 points (C = 2^-1..2^11, gamma = 2^-11..2^3).
  Every optimal value in Table 4 lies on this grid (C* odd in 5..9, gamma* odd in -9..3).
  Caches 100 MB and 1 GB, tol 1e-3, 550 (classification) / 2240 (regression) fits per search.

Run ``python benchmarks/_csmo_paper_numbers.py`` to re-check the transcription (internal
consistency: RTD recomputed from the times, grid sizes, optimal points on the grids).
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------- Table 1
#: Table 1: (n, d) and, for classification, (n+, n-).
TABLE1_CLASSIFICATION = {
    "adult8": (22_696, 123, 5_506, 17_190),
    "web8": (49_749, 300, 1_479, 48_270),
    "ijcnn1": (49_990, 22, 4_853, 45_137),
    "cod-rna": (59_535, 8, 19_845, 39_690),
    "mnist1": (60_000, 784, 6_742, 53_258),
    "skin": (245_057, 3, 50_859, 194_198),
}
TABLE1_REGRESSION = {
    "abalone": (4_177, 8), "cpusmall": (6_143, 12), "trajectory": (20_000, 297),
    "cadata": (20_640, 7), "year": (46_215, 90), "ctscan": (53_500, 385),
}

# ---------------------------------------------------------------------------------- Table 2
TABLE2_C = (1.0, 100.0, 10_000.0)          # the table's header
TABLE2_C_TEXT = (10.0, 100.0, 10_000.0)    # section 4.2's text
TABLE2_CACHES_MB = (1, 50, 100, 500, 1000, 5000, 10_000)
TABLE2_TOL = 1e-3

# dataset -> cache (MB) -> C -> (SMO seconds, CSMO seconds); rows in the printed order
_T2_ROWS = {
    "adult8": [
        (1, 5.52, 5.29, 100.39, 62.47, 6216.00, 2619.61),
        (50, 4.83, 4.43, 26.10, 21.49, 3512.05, 1908.27),
        (100, 4.31, 4.42, 12.70, 11.41, 2405.84, 1350.65),
        (500, 4.24, 4.37, 9.23, 8.34, 318.93, 211.85),
        (1000, 4.07, 4.22, 8.67, 7.82, 305.88, 197.70),
        (5000, 4.05, 4.04, 8.68, 7.83, 306.33, 196.32),
        (10_000, 3.96, 4.04, 8.67, 7.82, 305.95, 196.20),
    ],
    "cpusmall": [
        (1, 1.36, 1.10, 68.83, 47.95, 2960.25, 2066.70),
        (50, 0.64, 0.59, 22.12, 16.96, 944.43, 773.95),
        (100, 0.64, 0.58, 22.08, 16.89, 916.96, 710.93),
        (500, 0.63, 0.59, 22.08, 16.91, 913.41, 710.99),
        (1000, 0.63, 0.58, 22.08, 16.91, 913.43, 711.76),
        (5000, 0.64, 0.59, 22.09, 16.88, 913.38, 711.64),
        (10_000, 0.65, 0.59, 22.10, 16.92, 913.35, 711.00),
    ],
    "trajectory": [
        (1, 2.37, 2.03, 68.93, 54.81, 1765.73, 1114.29),
        (50, 0.74, 0.74, 32.32, 26.69, 721.16, 529.22),
        (100, 0.74, 0.75, 10.96, 10.78, 747.45, 514.02),
        (500, 0.75, 0.75, 6.52, 6.58, 120.86, 89.50),
        (1000, 0.74, 0.74, 7.17, 6.64, 79.48, 58.08),
        (5000, 0.75, 0.74, 6.25, 6.18, 76.44, 60.82),
        (10_000, 0.74, 0.73, 6.41, 6.28, 74.66, 58.25),
    ],
    "web8": [
        (1, 5.11, 4.91, 52.33, 46.86, 356.63, 411.22),
        (50, 3.53, 3.54, 22.78, 23.27, 228.59, 207.61),
        (100, 3.37, 3.46, 6.22, 6.87, 143.66, 138.97),
        (500, 3.06, 3.16, 3.93, 4.36, 17.98, 20.08),
        (1000, 3.01, 3.09, 3.94, 4.36, 18.28, 19.52),
        (5000, 3.00, 3.09, 3.94, 4.37, 18.20, 19.58),
        (10_000, 3.00, 3.10, 3.94, 4.35, 17.99, 19.27),
    ],
}


def _table2() -> dict[str, dict[int, dict[float, tuple[float, float]]]]:
    out: dict[str, dict[int, dict[float, tuple[float, float]]]] = {}
    for name, rows in _T2_ROWS.items():
        out[name] = {}
        for cache, *times in rows:
            out[name][cache] = {C: (times[2 * k], times[2 * k + 1]) for k, C in enumerate(TABLE2_C)}
    return out


#: ``TABLE2[dataset][cache_MB][C] = (smo_seconds, csmo_seconds)``.
TABLE2 = _table2()

# ---------------------------------------------------------------------------------- grids
CLASSIFICATION_LOG2_C = tuple(range(-5, 16, 2))        # 11 values
CLASSIFICATION_LOG2_GAMMA = tuple(range(-15, 4, 2))    # 10 values
REGRESSION_LOG2_C = tuple(range(-1, 12, 2))            # 7 values (2^13, 2^15 skipped)
REGRESSION_LOG2_GAMMA = tuple(range(-11, 4, 2))        # 8 values (2^-15, 2^-13 skipped)
REGRESSION_LOG2_EPSILON = tuple(range(-8, 0))          # 8 values
GRID_CACHES_MB = (100, 1000)
GRID_FOLDS = 5
GRID_TOL = 1e-3

# ---------------------------------------------------------------------------------- Table 3
#: Table 3 (classification): log2 C*, log2 gamma*, accuracy % (SMO, CSMO), and per cache (MB)
#: (SMO hours, CSMO hours, RTD).
TABLE3 = {
    "adult8": dict(log2_C=11, log2_gamma=-9, acc=(84.438, 84.438),
                   times={100: (13.124, 8.729, 33.488), 1000: (3.317, 2.447, 26.232)}),
    "cod-rna": dict(log2_C=15, log2_gamma=-11, acc=(94.744, 94.746),
                    times={100: (93.594, 51.356, 45.129), 1000: (61.728, 29.911, 51.544)}),
    "ijcnn1": dict(log2_C=5, log2_gamma=1, acc=(98.848, 98.848),
                   times={100: (2.755, 2.602, 5.533), 1000: (1.535, 1.510, 1.649)}),
    "mnist1": dict(log2_C=1, log2_gamma=-7, acc=(99.812, 99.812),
                   times={100: (604.167, 543.346, 10.067), 1000: (491.657, 410.269, 16.554)}),
    "skin": dict(log2_C=5, log2_gamma=-5, acc=(99.972, 99.972),
                 times={100: (23.873, 23.383, 2.051), 1000: (23.818, 23.564, 1.069)}),
    "web8": dict(log2_C=3, log2_gamma=-5, acc=(98.864, 98.864),
                 times={100: (5.757, 5.831, -1.288), 1000: (4.702, 4.768, -1.400)}),
}

# ---------------------------------------------------------------------------------- Table 4
#: Table 4 (regression): log2 C*, log2 gamma*, log2 epsilon*, MSE (SMO, CSMO), and per cache
#: (MB) (SMO hours, CSMO hours, RTD).
TABLE4 = {
    "abalone": dict(log2_C=5, log2_gamma=-1, log2_epsilon=-1, mse=(4.500, 4.500),
                    times={100: (1.877, 1.219, 35.052), 1000: (1.890, 1.229, 34.980)}),
    "cadata": dict(log2_C=9, log2_gamma=3, log2_epsilon=-1, mse=(3066.524, 3066.526),
                   times={100: (11.495, 9.250, 19.525), 1000: (10.546, 8.712, 17.389)}),
    "cpusmall": dict(log2_C=9, log2_gamma=-7, log2_epsilon=-4, mse=(0.028, 0.028),
                     times={100: (13.379, 9.703, 27.472), 1000: (14.168, 10.561, 25.461)}),
    "ctscan": dict(log2_C=3, log2_gamma=-9, log2_epsilon=-8, mse=(0.001, 0.001),
                   times={100: (2463.891, 2061.566, 16.329), 1000: (1395.560, 1220.699, 12.530)}),
    "trajectory": dict(log2_C=1, log2_gamma=-9, log2_epsilon=-3, mse=(0.999, 0.999),
                       times={100: (177.447, 174.635, 1.585), 1000: (24.995, 23.898, 4.390)}),
    "year": dict(log2_C=3, log2_gamma=-5, log2_epsilon=-4, mse=(0.587, 0.587),
                 times={100: (6546.589, 4637.676, 29.159), 1000: (1112.437, 894.214, 19.617)}),
}


def paper_rtd(name: str, cache_mb: int) -> float | None:
    """The paper's RTD for set ``name`` (Table 3 or 4) at cache 100 or 1000 MB."""
    table = TABLE3 if name in TABLE3 else TABLE4 if name in TABLE4 else None
    if table is None:
        return None
    return table[name]["times"][cache_mb][2]


#: Sets with a clearly positive published RTD: the bar asks RTD > 0 and within 10 points there.
RTD_BAR_SETS = ("adult8", "mnist1", "abalone", "cpusmall")
RTD_BAR_POINTS = 10.0


def _self_check() -> list[str]:
    problems = []
    for tname, table in (("Table 3", TABLE3), ("Table 4", TABLE4)):
        for name, row in table.items():
            for cache, (smo, csmo, rtd) in row["times"].items():
                recomputed = 100.0 * (smo - csmo) / smo
                if abs(recomputed - rtd) > 0.05:   # ijcnn1 is off by 0.02: hours rounded to 3 decimals
                    problems.append(f"{tname} {name} {cache} MB: RTD {rtd} vs recomputed {recomputed:.3f}")
            if row["log2_C"] not in (CLASSIFICATION_LOG2_C if table is TABLE3 else REGRESSION_LOG2_C):
                problems.append(f"{tname} {name}: C* = 2^{row['log2_C']} is off the grid")
            if row["log2_gamma"] not in (CLASSIFICATION_LOG2_GAMMA if table is TABLE3
                                         else REGRESSION_LOG2_GAMMA):
                problems.append(f"{tname} {name}: gamma* = 2^{row['log2_gamma']} is off the grid")
            if table is TABLE4 and row["log2_epsilon"] not in REGRESSION_LOG2_EPSILON:
                problems.append(f"{tname} {name}: epsilon* = 2^{row['log2_epsilon']} is off the grid")
    n_cls = len(CLASSIFICATION_LOG2_C) * len(CLASSIFICATION_LOG2_GAMMA)
    n_reg = len(REGRESSION_LOG2_C) * len(REGRESSION_LOG2_GAMMA) * len(REGRESSION_LOG2_EPSILON)
    if (n_cls, n_reg) != (110, 448):
        problems.append(f"grid sizes {n_cls}, {n_reg} (paper: 110, 448)")
    for name, rows in _T2_ROWS.items():
        if [r[0] for r in rows] != list(TABLE2_CACHES_MB):
            problems.append(f"Table 2 {name}: cache column {[r[0] for r in rows]}")
    return problems


if __name__ == "__main__":
    issues = _self_check()
    print("\n".join(issues) if issues else "transcription consistent (RTD, grids, optima)")
    for name in ("adult8", "web8", "cpusmall"):
        print(name, {cache: TABLE2[name][cache][10_000.0] for cache in (1, 100, 1000)})
