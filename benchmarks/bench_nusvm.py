"""NuSVC, NuSVR and OneClassSVM against scikit-learn (LIBSVM) and scikit-learn-intelex (oneDAL).

Side by side in one process, on the cores given by ``--cores`` (the process pins itself with
``os.sched_setaffinity`` before numpy or any of the libraries is imported, so that OpenMP, oneDAL's
TBB and OpenBLAS size their pools from it):

    python benchmarks/bench_nusvm.py --cores 0      # every system on one core (ours n_jobs=1)
    python benchmarks/bench_nusvm.py --cores 0,1    # two cores (ours n_jobs=2, oneDAL its default)

For each model, set and nu: sparsekernel's fit, scikit-learn's and (NuSVC, NuSVR) scikit-learn-
intelex's, interleaved over ``--repeats`` (the tables give medians), all with kernel rbf, gamma = the
value of 'scale' computed once per set, tol 1e-3, cache 200 MB. Reported: fit seconds, ours / the
faster peer (the issue's bar: <= 0.5), nSV, the agreement of the held-out predictions with
LIBSVM's, and the dual objective both systems' ``dual_coef_`` give, recomputed here the same way.

- NuSVC: the binary benchmark sets (a9a, w8a, magic, usps = digit 0 against the rest, skin).
- OneClassSVM: the same sets, fitted on the training rows of class +1 only; reported also the AUC
  of ``score_samples`` on the whole test set (class +1 = inlier). scikit-learn-intelex has none.
- NuSVR: abalone (rings) and cpusmall (standardised target) of ``../shared/data/libsvm/regression``,
  75 / 25 split, C = 1.

Writes benchmarks/results/nusvm_<cores>.md / .json (one section per run of a core setting). Sets
missing from ../shared/data are skipped.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (standard library only: safe before pinning)
from _harness import csv_list  # noqa: E402

MODELS = ("nusvc", "ocsvm", "nusvr")
CLASSIFICATION_SETS = ("a9a", "w8a", "magic", "usps", "skin")
REGRESSION_SETS = ("abalone", "cpusmall")
NUS = (0.1, 0.5)
AGREEMENT_BAR = 0.999  # held-out predictions equal to LIBSVM's (the bar)
TOL, CACHE_SIZE = 1e-3, 200
DUAL_BLOCK = 1024


class Store(_harness.Store):
    prefix = "nusvm"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", type=_harness.parse_cores, default="0,1", help="CPU ids to pin the process to (0 or 0,1)")
    p.add_argument("--models", type=csv_list(str, MODELS), default=list(MODELS))
    p.add_argument("--sets", type=csv_list(str), default=None, help="override the sets of every model")
    p.add_argument("--nus", type=csv_list(float), default=list(NUS))
    p.add_argument("--repeats", type=int, default=3, help="fits of sparsekernel per setting (median)")
    p.add_argument("--peer-repeats", type=int, default=1,
                   help="fits of each peer (interleaved with sparsekernel's first ones; LIBSVM takes minutes)")
    p.add_argument("--max-train", type=int, default=None,
                   help="random subset of the training rows (seeded; the table says so)")
    p.add_argument("--skip-systems", type=csv_list(str, ("sklearn", "intelex")), default=[])
    p.add_argument("--force", action="store_true", help="refit entries already stored")
    p.add_argument("--reference-tol", type=float, default=None,
                   help="for every row whose agreement with LIBSVM is under 99.9 %%: LIBSVM and ours refitted "
                        "at this tol, and the agreements of the four fits reported (is the problem's solution "
                        "determined at tol 1e-3?)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    cores = args.cores
    try:
        _harness.pin(cores)     # before numpy and the libraries start their thread pools
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import numpy as np
    import scipy.sparse as sp

    import _csmo_data
    import _datasets
    import bench_svc

    threads = len(cores)
    part = f"{threads}core" if threads == 1 else f"{threads}cores"
    store = Store(part, quick=False, force=args.force)

    # ------------------------------------------------------------------ data
    def classification(name):
        split = _datasets.load(name)
        if split is None:
            return None
        X, y, Xt, yt = split
        if args.max_train and X.shape[0] > args.max_train:
            X, y = bench_svc.subsample_rows(X, y, args.max_train, seed=0)
        return X, np.where(y > 0, 1.0, -1.0), Xt, np.where(yt > 0, 1.0, -1.0)

    def regression(name):
        try:
            s = _csmo_data.load(name)
        except Exception as exc:  # files missing
            print(f"{name}: {exc!r}, skipped", flush=True)
            return None
        rng = np.random.RandomState(0)
        order = rng.permutation(s.n)
        cut = int(0.75 * s.n)
        tr, te = np.sort(order[:cut]), np.sort(order[cut:])
        return s.X[tr], s.y[tr], s.X[te], s.y[te]

    # ------------------------------------------------------------------ systems
    def make(system, model, nu, gamma):
        common = dict(kernel="rbf", gamma=gamma, tol=TOL, cache_size=CACHE_SIZE, nu=nu)
        if model == "nusvr":
            common["C"] = 1.0
        name = {"nusvc": "NuSVC", "nusvr": "NuSVR", "ocsvm": "OneClassSVM"}[model]
        if system == "sparsekernel":
            import sparsekernel
            return getattr(sparsekernel, name)(**common, n_jobs=threads)
        if system == "intelex":
            import sklearnex.svm
            return getattr(sklearnex.svm, name)(**common)
        import sklearn.svm
        return getattr(sklearn.svm, name)(**common)

    def systems_for(model):
        out = ["sparsekernel"]
        if "sklearn" not in args.skip_systems:
            out.append("sklearn")
        if model != "ocsvm" and "intelex" not in args.skip_systems:
            try:
                import sklearnex.svm  # noqa: F401
                out.append("intelex")
            except Exception as exc:
                print(f"scikit-learn-intelex: {exc!r}, skipped", flush=True)
        return out

    def dual_value(est, X, gamma, z=None):
        """1/2 c'Kc - z'c from dual_coef_ (c) and the support vectors (nu-SVR: z = targets)."""
        from sklearn.metrics.pairwise import rbf_kernel

        c = est.dual_coef_
        c = (c.toarray() if sp.issparse(c) else np.asarray(c)).ravel()
        sv = np.asarray(est.support_)
        Xs = X[sv]
        quad = 0.0
        for i in range(0, len(c), DUAL_BLOCK):
            quad += float(c[i:i + DUAL_BLOCK] @ (rbf_kernel(Xs[i:i + DUAL_BLOCK], Xs, gamma=gamma) @ c))
        lin = 0.0 if z is None else float(z[sv] @ c)
        return 0.5 * quad - lin

    def timed(est, X, y):
        gc.collect()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est.fit(X, y)
            return time.perf_counter() - t0

    def reference_agreements(model, nu, gamma, X, y, Xt):
        """Held-out agreements of LIBSVM and ours at tol and at args.reference_tol (X, Xt: ours, peers')."""
        preds = {}
        for system, tol in [(s, t) for t in (TOL, args.reference_tol) for s in ("sklearn", "sparsekernel")]:
            est = make(system, model, nu, gamma).set_params(tol=tol)
            mine = system == "sparsekernel"
            seconds = timed(est, X[0] if mine else X[1], y)
            preds[f"{'ours' if mine else 'LIBSVM'} tol {tol:g}"] = np.asarray(est.predict(Xt[0] if mine else Xt[1]))
            print(f"  {system} tol={tol:g}: {seconds:.1f} s, nSV {len(est.support_)}", flush=True)
        names = list(preds)
        return {"pairs": [[a, b, float(np.mean(preds[a] == preds[b]))]
                          for k, a in enumerate(names) for b in names[k + 1:]]}

    # ------------------------------------------------------------------ runs
    rows = {m: [] for m in MODELS}
    reference_rows = []
    for model in args.models:
        sets = args.sets or (REGRESSION_SETS if model == "nusvr" else CLASSIFICATION_SETS)
        for name in sets:
            data = regression(name) if model == "nusvr" else classification(name)
            if data is None:
                print(f"{model} {name}: missing, skipped", flush=True)
                continue
            X, y, Xt, yt = data
            if model == "ocsvm":
                X = X[y > 0]
                y = None
            gamma = bench_svc.scale_gamma(X)
            peer_X = _datasets.as_int32_indices(X)
            peer_Xt = _datasets.as_int32_indices(Xt)
            nu_max = None
            if model == "nusvc":  # nu-SVC is feasible for nu <= 2 min(n+, n-) / n (LIBSVM refuses more)
                nu_max = 2.0 * min(np.sum(y > 0), np.sum(y < 0)) / len(y)
            done_nus = set()
            for nu_asked in args.nus:
                # an infeasible nu (a9a, w8a, usps, skin at 0.5: their smaller class is under 25 %) is
                # replaced by 0.9 of the largest feasible one, and the table says so
                nu = nu_asked if nu_max is None or nu_asked <= nu_max else float(f"{0.9 * nu_max:.3g}")
                if nu in done_nus:  # both asked values infeasible (w8a): one row
                    continue
                done_nus.add(nu)
                key = f"{model}|{name}|nu={nu:g}"
                config = dict(n_train=X.shape[0], d=X.shape[1], gamma=gamma, nu=nu, repeats=args.repeats,
                              peer_repeats=args.peer_repeats, threads=threads, max_train=args.max_train)
                if not store.done(key, config):
                    systems = systems_for(model)
                    times = {s: [] for s in systems}
                    fitted = {}
                    for rep in range(max(args.repeats, args.peer_repeats)):  # interleaved
                        for s in systems:
                            if rep >= (args.repeats if s == "sparsekernel" else args.peer_repeats) or times[s] is None:
                                continue
                            est = make(s, model, nu, gamma)
                            try:
                                times[s].append(timed(est, X if s == "sparsekernel" else peer_X, y))
                                fitted[s] = est
                            except Exception as exc:
                                times[s] = None
                                fitted[s] = repr(exc)
                        print(key, {s: (None if t is None else [round(v, 3) for v in t]) for s, t in times.items()},
                              flush=True)
                    result = {"systems": {}}
                    ref = fitted.get("sklearn")
                    for s in systems:
                        est = fitted[s]
                        if isinstance(est, str):
                            result["systems"][s] = {"error": est}
                            continue
                        Xs_train = X if s == "sparsekernel" else peer_X
                        Xs_test = Xt if s == "sparsekernel" else peer_Xt
                        out = {"times": times[s], "n_sv": int(len(est.support_)),
                               "dual": dual_value(est, Xs_train, gamma, y if model == "nusvr" else None)}
                        pred = np.asarray(est.predict(Xs_test))
                        if model == "nusvr":
                            out["mse"] = float(np.mean((pred - yt) ** 2))
                        else:
                            out["acc"] = 100.0 * float(np.mean(pred == (yt if model == "nusvc" else np.where(yt > 0, 1, -1))))
                        if model == "ocsvm":
                            from sklearn.metrics import roc_auc_score
                            out["auc"] = float(roc_auc_score(yt > 0, est.score_samples(Xs_test)))
                        if s != "sklearn" and not isinstance(ref, str) and ref is not None:
                            ref_pred = np.asarray(ref.predict(peer_Xt))
                            if model == "nusvr":
                                out["max_abs_diff"] = float(np.max(np.abs(pred - ref_pred)))
                                out["agree"] = float(np.mean(np.abs(pred - ref_pred) <= 1e-2 * max(1.0, np.std(yt))))
                            else:
                                out["agree"] = float(np.mean(pred == ref_pred))
                        if s == "sparsekernel":
                            out["n_iter"] = int(np.sum(est.n_iter_))
                            out["converged"] = bool(getattr(est, "converged_", True))
                        result["systems"][s] = out
                    store.put(key, config, result)
                result = store.get(key, config)
                agree = result["systems"].get("sparsekernel", {}).get("agree")
                if args.reference_tol and agree is not None and agree < AGREEMENT_BAR:
                    ref_key, ref_config = f"reftol|{key}", {**config, "reference_tol": args.reference_tol}
                    if not store.done(ref_key, ref_config):
                        store.put(ref_key, ref_config, reference_agreements(model, nu, gamma, (X, peer_X), y,
                                                                            (Xt, peer_Xt)))
                    reference_rows.append((model, name, nu, store.get(ref_key, ref_config)))
                rows[model].append((name, nu if nu == nu_asked else f"{nu:g} (asked {nu_asked:g}; > {nu_max:.3g} is "
                                                                        "infeasible)", X.shape[0], result))

    # ------------------------------------------------------------------ tables
    fmt = _harness.fmt

    def med(r):
        return None if not r or r.get("error") or not r.get("times") else statistics.median(r["times"])

    body = []
    titles = {"nusvc": "NuSVC", "ocsvm": "OneClassSVM (fit on class +1; AUC of score_samples on the test set)",
              "nusvr": "NuSVR (C = 1)"}
    met = total = 0
    for model in MODELS:
        if not rows[model]:
            continue
        peers = ["sklearn"] + (["intelex"] if model != "ocsvm" else [])
        head = ["data", "nu", "n_train", "ours s", *[f"{p} s" for p in peers], "ours / faster peer",
                "nSV ours / sklearn", "agreement with LIBSVM %", "dual rel. diff",
                "MSE ours / sklearn" if model == "nusvr" else "acc % ours / sklearn"]
        if model == "ocsvm":
            head.append("AUC ours / sklearn")
        table = []
        for name, nu, n, r in rows[model]:
            sysr = r["systems"]
            ours, sk = sysr.get("sparsekernel", {}), sysr.get("sklearn", {})
            t_ours = med(ours)
            t_peers = [med(sysr.get(p)) for p in peers]
            best = min([t for t in t_peers if t is not None], default=None)
            ratio = None if t_ours is None or best is None else t_ours / best
            if ratio is not None:
                total += 1
                met += ratio <= 0.5
            dual_diff = (None if "dual" not in ours or "dual" not in sk else
                         abs(ours["dual"] - sk["dual"]) / max(abs(sk["dual"]), 1e-12))
            quality = ("mse", ".4f") if model == "nusvr" else ("acc", ".2f")
            row = [name, nu if isinstance(nu, str) else f"{nu:g}", n, fmt(t_ours), *[fmt(t) for t in t_peers], fmt(ratio, ".2f"),
                   f"{ours.get('n_sv', '-')} / {sk.get('n_sv', '-')}",
                   "-" if ours.get("agree") is None else f"{100 * ours['agree']:.2f}",
                   fmt(dual_diff, ".1e"),
                   f"{format(ours[quality[0]], quality[1]) if quality[0] in ours else '-'} / "
                   f"{format(sk[quality[0]], quality[1]) if quality[0] in sk else '-'}"]
            if model == "ocsvm":
                row.append(f"{ours.get('auc', float('nan')):.4f} / {sk.get('auc', float('nan')):.4f}")
            table.append(row)
        body += [f"## {titles[model]}", "", *_harness.md_table(head, table), ""]
    body += [f"Bar (fit time <= 0.5x the faster peer): met on {met} of {total}.", ""]
    if reference_rows:
        body += [f"## Rows under {100 * AGREEMENT_BAR:g} % agreement: LIBSVM and ours at tol {TOL:g} and "
                 f"{args.reference_tol:g}", "",
                 "Held-out predictions equal between each pair of fits (% of the test set).", ""]
        pairs = [f"{a} / {b}" for a, b, _ in reference_rows[0][3]["pairs"]]
        body += _harness.md_table(["model", "data", "nu", *pairs],
                                  [[m, name, f"{nu:g}", *[f"{100 * v:.2f}" for _, _, v in r["pairs"]]]
                                   for m, name, nu, r in reference_rows]) + [""]
    intro = [f"{threads} core(s): the process pinned to CPUs {sorted(cores)}; sparsekernel with n_jobs={threads}, "
             "scikit-learn single-threaded (LIBSVM), scikit-learn-intelex with its default threads. Kernel rbf, "
             f"gamma = 'scale' computed once per set, tol {TOL}, cache {CACHE_SIZE} MB; seconds = median of "
             f"{args.repeats} fits of sparsekernel and {args.peer_repeats} of each peer, interleaved. Agreement: "
             "held-out predictions equal to scikit-learn's (NuSVR: "
             "within 1 % of the target's standard deviation). dual rel. diff: |q_ours - q_sklearn| / |q_sklearn| "
             "with q = 1/2 c'Kc - z'c recomputed from each system's dual_coef_ (z = 0, NuSVR: the targets)."
             + (f" Training rows capped at {args.max_train} (seeded subset)." if args.max_train else ""), ""]
    store.write_md(f"nu-SVM and one-class SVM, {threads} core(s)", intro + body, complete=True)
    print("\n".join(body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
