"""Published numbers of the NSSVM paper, for side-by-side tables.

Zhou, "Sparse SVM for sufficient data reduction" (IEEE TPAMI 2021), section 4, transcribed from
``shared/papers/nssvm-zhou.txt``.  The paper's runs: MATLAB R2019a on a laptop (Intel i9-9880H
2.3 GHz, 32 GB).  ACC / TACC are training / test accuracy in %, TIME is CPU seconds, NSV the number
of support vectors (Table VII and VIII give NSV/m).  ``None`` marks the paper's '--' (not run).

Methods (Table V): HSVM = LIBSVM (hinge, dual); SSVM = LS-SVMlab (squared hinge); LSVM = LIBLINEAR
``-s 3`` (L2-regularised hinge loss, dual coordinate descent - sklearn's
``LinearSVC(loss='hinge', dual=True)``); FSVM = MATLAB ``fitclinear`` (Solver='dual'); SNSVM =
Li's semismooth Newton (squared hinge); NSSVM = the paper's method.  All peers at their defaults.

Notes on the transcription:

* Table VII (Example 4.1, averages over 20 trials): train and test sets of m each.  LSVM is
  '--' above 1e6 ("ran for too long").  SNSVM's NSV/m is 1 (its solution is dense).
* Table VI (small real sets): only a9a is available here; its row is kept for all six methods.
* Table VIII (large real sets): only skin (skin_nonskin) is available here.  Table III lists skin
  with m = 245056 rows (the UCI / LIBSVM file has 245057) and no test file: the paper splits such
  sets 90% / 10% ("the first part contains 90% of samples"; whether in file order or at random is
  not said).
* Table IV: C = 0.25 and c = 0.01 C everywhere here; s0 = s(beta) = ceil(beta n (log2(m/n))^2)
  with beta = 0.5 (Example 4.1, m <= 1e4), 1 (Example 4.1, m > 1e4), 0.2 (a5a-a9a), 0.05 (the
  other real sets, skin included), 10 (higgs, susy, covtype, hepmass, with C = log2 m).
"""

from __future__ import annotations

#: Table VII columns.
TABLE7_METHODS = ("LSVM", "FSVM", "SNSVM", "NSSVM")

#: Table VII: m -> method -> (ACC %, TACC %, TIME s, NSV/m).
TABLE7 = {
    10**5: {"LSVM": (96.95, 96.96, 0.10, 7.83e-2), "FSVM": (96.91, 96.93, 0.10, 8.85e-2),
            "SNSVM": (96.95, 96.96, 0.04, 1.0), "NSSVM": (96.95, 96.94, 0.04, 5.94e-3)},
    10**6: {"LSVM": (96.94, 96.94, 3.88, 7.81e-2), "FSVM": (96.91, 96.93, 2.43, 8.87e-2),
            "SNSVM": (96.94, 96.94, 0.36, 1.0), "NSSVM": (96.94, 96.93, 0.33, 8.62e-4)},
    10**7: {"LSVM": (None, None, None, None), "FSVM": (96.92, 96.93, 30.62, 8.88e-2),
            "SNSVM": (96.93, 96.93, 3.42, 1.0), "NSSVM": (96.93, 96.93, 2.08, 1.09e-4)},
    10**8: {"LSVM": (None, None, None, None), "FSVM": (96.91, 96.93, 447.1, 8.89e-2),
            "SNSVM": (96.93, 96.93, 34.1, 1.0), "NSSVM": (96.93, 96.93, 12.3, 1.44e-5)},
}
TABLE7_TRIALS = 20

#: Table VI columns.
TABLE6_METHODS = ("SSVM", "HSVM", "LSVM", "FSVM", "SNSVM", "NSSVM")

#: Table VI (a9a only): method -> (ACC %, TACC %, TIME s, NSV).
TABLE6 = {
    "a9a": {"SSVM": (None, None, None, None), "HSVM": (84.99, 84.98, 70.59, 11533),
            "LSVM": (84.99, 85.00, 0.158, 11772), "FSVM": (80.63, 80.96, 0.072, 20030),
            "SNSVM": (84.96, 84.94, 0.361, 32561), "NSSVM": (84.04, 84.47, 0.130, 1754)},
}

#: Table VIII (skin only): method -> (ACC %, TACC %, TIME s, NSV/m).
TABLE8 = {
    "skin": {"LSVM": (92.90, 92.66, 0.42, 1.97e-1), "FSVM": (92.73, 92.45, 0.33, 2.55e-1),
             "SNSVM": (92.37, 92.23, 0.11, 1.0), "NSSVM": (91.04, 90.63, 0.08, 2.20e-4)},
}
TABLE8_METHODS = TABLE7_METHODS

#: Table III sizes of the sets available here: name -> (n, m train, m test; 0 = 90/10 split).
TABLE3 = {"a9a": (123, 32561, 16281), "skin": (3, 245056, 0)}

#: Table IV: beta of s0 = s(beta) per case (C = 0.25, c = 0.01 C).
TABLE4_BETA = {"example41_small": 0.5, "example41": 1.0, "a5a-a9a": 0.2, "other": 0.05}
TABLE4_C = 0.25


def paper_beta(name: str) -> float:
    """Table IV's beta for a real data set (a5a-a9a: 0.2, every other real set: 0.05)."""
    return TABLE4_BETA["a5a-a9a"] if name in ("a5a", "a6a", "a7a", "a8a", "a9a") else TABLE4_BETA["other"]


def paper_rows(name: str) -> tuple[dict, bool]:
    """The paper's rows for real set ``name``: (method -> (ACC, TACC, TIME, NSV or NSV/m), whether the
    last entry is NSV/m).  Empty for sets the paper does not have."""
    if name in TABLE6:
        return TABLE6[name], False
    if name in TABLE8:
        return TABLE8[name], True
    return {}, False


if __name__ == "__main__":
    for m, row in TABLE7.items():
        nssvm = row["NSSVM"]
        print(f"Table VII m={m:.0e}: NSSVM NSV = {nssvm[3] * m:.0f}, ACC {nssvm[0]}, TIME {nssvm[2]} s")
    print(f"skin NSSVM NSV ~ {TABLE8['skin']['NSSVM'][3] * 0.9 * TABLE3['skin'][1]:.0f} (90% of 245056 rows)")
