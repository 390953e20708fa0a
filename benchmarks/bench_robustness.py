"""The robustness report (issue 22): fuzz cases per estimator, peak memory against the stated budget,
Ctrl-C latency per solver, determinism; written to benchmarks/results/robustness.md.

Parts (each stores its numbers as an entry of benchmarks/results/robustness.json, so they can run
separately):

``fuzz``     the hypothesis suite under the long profile (SK_FUZZ_PROFILE=long: 10,000 cases per
             test), in a subprocess; the cases tried and how they ended, per estimator.
``memory``   benchmarks/bench_memory.py (its own subprocess per fit; results/memory.json).
``sigint``   every solver interrupted by SIGINT a second into a long fit, in a fresh interpreter
             (tests/test_interrupt.py's machinery), ``--repeats`` times: the seconds from the signal
             to the fit raising KeyboardInterrupt (median and max).
``report``   robustness.md from what the parts stored (alone: nothing is run).

Usage::

    python benchmarks/bench_robustness.py [--parts fuzz,memory,sigint,report] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import _harness  # noqa: E402  (the results store, tables)
import bench_memory  # noqa: E402  (its store)
from _harness import md_table  # noqa: E402

# the solvers a SIGINT is measured on: (label, script name or SVC solver, classes, script)
SIGINT_CASES = [
    ("SVC smo2", "smo2", 2, "SCRIPT"), ("SVC smo1", "smo1", 2, "SCRIPT"), ("SVC batched", "batched", 2, "SCRIPT"),
    ("SVC smo2, 4 classes in threads", "smo2", 4, "SCRIPT"), ("SVC csmo", "svc-csmo", 2, "ESTIMATOR_SCRIPT"),
    ("SVR", "svr", 2, "ESTIMATOR_SCRIPT"), ("KLR smo", "klr-smo", 2, "ESTIMATOR_SCRIPT"),
    ("KLR nystrom (refine_basis)", "klr-nystrom", 2, "ESTIMATOR_SCRIPT"), ("S-KLR smo", "sklr-smo", 2, "ESTIMATOR_SCRIPT"),
    ("NSSVC", "-", 2, "NSSVM_SCRIPT"), ("SLMC", "-", 2, "SLMC_SCRIPT"), ("SparseKFD", "skfd", 2, "ESTIMATOR_SCRIPT"),
    ("PathSearchCV (2 folds at once)", "pathsearchcv", 2, "ESTIMATOR_SCRIPT"),
]


# what the checks of issue 22 found, and where the regression test is
FINDINGS = [
    "fuzzing (S-KLR): max_iter=-1 with tol=1e-12 on unscaled data ran forever; 'no limit' is now LIBSVM's "
    "max(10^7, 100 N) steps (`test_fuzz_regression_unreachable_tol_ends`)",
    "fuzzing (SparseKFD): a gradient whose square underflows made L-BFGS-B's first step infinite: NaN expansion "
    "vectors; a vanishing gradient ends the run and no run returns a non-finite iterate "
    "(`test_fuzz_regression_vanishing_gradient_keeps_finite_vectors`)",
    "fuzzing (S-KLR): gamma='scale' on a constant CSR column was 4.5e15 (one-pass variance) and poly kernel values "
    "beyond float32 gave NaN decisions; two-pass variance, kernels that can overflow the float32 caches refused "
    "(`test_fuzz_regression_constant_sparse_column_and_overflowing_kernel`)",
    "memory benchmark (SparseKFD on w8a): CSR with int64 indices (load_svmlight_file) reached KMeans, which rejects "
    "them; fits narrow the indices once (`test_fuzz_regression_int64_csr_reaches_kmeans`)",
    "memory benchmark: the compact KLR route held its kernel block 3-4 times (float64, float32 copy, growth "
    "copies: 354 MB against a 100 MB cache on a9a), NSSVC gathered its whole column block when growing, SLMC's "
    "random start densified all of X (431 MB on w8a), multiclass fits gave every concurrent problem the whole "
    "cache_size (tests/test_memory.py, tests/test_klr_compact.py)",
    "thread-count determinism: the compact KLR route and the SLMC/SKFD gradients (threaded BLAS sums) and KMeans "
    "starts depended on n_jobs; nested threadpool limits left by concurrent fits out of order left BLAS on one "
    "thread for the rest of the process (tests/test_concurrency.py)",
    "Ctrl-C latency: 2.8 s (KLR, the start-up gradient pass had no interrupt check) and 6.7 s (SLMC, 1000 steps of "
    "300-feature rows between polls); a parallel PathSearchCV left its threads' fits running into the "
    "interpreter's exit, which aborted the process (tests/test_interrupt.py, every estimator)",
    "UBSan, rerun after the kernel NSSVC blocks (issue 23): the in-memory NSSVC's dense row blocks were views of "
    "the caller's X, not of its aligned copy, so the linear scan read misaligned doubles again "
    "(`test_misaligned_input_is_read_as_aligned`, which had passed under UBSan before that change)",
]


class Store(_harness.Store):
    """``robustness.json``: one entry per part (fuzz, sanitizers, sigint)."""

    prefix = "robustness"


def stored(store: Store, part: str):
    e = store.entries.get(part)
    return None if e is None else e["result"]


def part_fuzz(store: Store):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fuzz_long.json"
        env = dict(os.environ, SK_FUZZ_PROFILE="long", SK_FUZZ_REPORT=str(out),
                   PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(ROOT / "tests" / "fuzz")], env=env, cwd=ROOT, capture_output=True, text=True)
        tally = json.loads(out.read_text())
    tally["seconds"] = time.perf_counter() - t0
    tally["summary"] = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    store.put("fuzz", {"profile": "long"}, tally)
    print(tally["summary"])


def merge_fuzz(store: Store, paths, minutes, add=False, shards=False):
    """Store the tallies of fuzz runs made separately (SK_FUZZ_REPORT files, e.g. the targets split
    over two processes) as the fuzz part, or (``add``) add their targets to the stored part.
    ``shards``: the files are shards of the same targets (processes drawing their own random cases,
    SK_FUZZ_EXAMPLES each), whose counts add up; otherwise a target may come from one file only."""
    before = stored(store, "fuzz") if add else None
    cases = dict(before["cases"]) if before else {}
    status = int(before["exitstatus"]) if before else 0
    if len({Path(p).resolve() for p in paths}) < len(paths):
        raise ValueError("a file is given twice")
    merged = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        if data.get("profile") != "long":
            raise ValueError(f"{path}: not a long-profile run")
        status = max(status, int(data["exitstatus"]))
        for target, counts in data["cases"].items():
            if target in cases or (target in merged and not shards):
                raise ValueError(f"{target} is counted twice")
            total = merged.setdefault(target, {})
            for outcome, n in counts.items():
                total[outcome] = total.get(outcome, 0) + n
    cases.update(merged)
    summary = f"{len(paths)} run{'s' if len(paths) > 1 else ''}, exit status {status} (0: every test passed)"
    if before:
        summary = f"{before['summary']}; then {summary}: {', '.join(sorted(set(cases) - set(before['cases'])))}"
    store.put("fuzz", {"profile": "long"}, {"profile": "long", "exitstatus": status, "cases": cases,
                                            "seconds": (before["seconds"] if before else 0.0) + 60.0 * minutes,
                                            "summary": summary})


def part_sigint(store: Store, repeats):
    sys.path.insert(0, str(ROOT / "tests"))
    import test_interrupt as ti

    rows = {}
    for label, name, n_classes, script in SIGINT_CASES:
        lat = []
        for _ in range(repeats):
            latency, returncode, out, err = ti.sigint_latency(name, n_classes, getattr(ti, script))
            if latency is None:
                print(f"{label}: not caught (status {returncode})\n{err[-1500:]}")
                break
            lat.append(latency)
        if lat:
            rows[label] = {"median": statistics.median(lat), "max": max(lat), "runs": lat}
            print(f"{label:34s} median {rows[label]['median']:.3f} s, max {rows[label]['max']:.3f} s", flush=True)
    store.put("sigint", {"repeats": repeats}, rows)


def part_memory():
    subprocess.run([sys.executable, str(HERE / "bench_memory.py")], check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")))


def report(store: Store) -> None:
    lines = ["The parts are described in the docstring of `benchmarks/bench_robustness.py`.", ""]
    fuzz = stored(store, "fuzz")
    lines += ["## Fuzzing (hypothesis, `SK_FUZZ_PROFILE=long`)", ""]
    if fuzz:
        lines += [f"pytest: {fuzz['summary']} ({fuzz['seconds'] / 60:.0f} min). A case ends in a fitted model whose "
                  "outputs passed every check (`fit`), or in a ValueError/TypeError with a message (`error`); the "
                  "command line cases end in exit status 0, 1 (an error, one line) or 2 (usage). Anything else — a "
                  "crash, a hang past the fit time budget (1 s; 0.25 s in the long profile), another exception, a "
                  "warning storm — fails the run.", ""]
        rows = []
        for target, counts in sorted(fuzz["cases"].items()):
            total = sum(counts.values())
            ok = counts.get("fit", 0) + counts.get("exit 0", 0)
            rows.append([target, f"{total:,}", f"{ok:,}", f"{total - ok:,}"])
        lines += md_table(["target", "cases", "fitted / exit 0", "clear error / exit 1, 2"], rows)
    else:
        lines.append("(not run)")
    lines += ["", "## Found and fixed (each with a regression test)", ""] + [f"- {f}" for f in FINDINGS]
    lines += ["", "## Sanitizers and warnings", "",
              "`scripts/sanitize.sh` (ASan + UBSan, runtimes preloaded) and `cmake -DSK_WERROR=ON` "
              "(-Wall -Wextra -Werror): " + (stored(store, "sanitizers") or "(not run)")]
    lines += ["", "## Threads and determinism", "",
              "tests/test_concurrency.py: every estimator (both KLR routes, multiclass cases) bit-identical across "
              "n_jobs = 1, 2, 3 and repeated runs; all of them fitted and predicting at once from four Python threads "
              "equal to one after another; a Python thread is never stopped for more than a fifth of a fit (the GIL "
              "is released; a GIL-holding C loop stops it for nearly all of it, which the test also checks); the "
              "process-wide BLAS/OpenMP settings are as before after concurrent fits."]
    lines += ["", "## Peak memory of a fit against the stated budget", "",
              "Each fit in a fresh interpreter: VmHWM after the fit minus VmRSS before it (the kernel's peak "
              "counter reset by /proc/self/clear_refs), in MB. Budget = the terms of `sparsekernel._memory.fit_budget` "
              "(README, 'Memory'); cache_size = 100 MB; fits stopped by a 30 s time limit have filled their caches "
              "long before (`benchmarks/bench_memory.py`, results/memory.json).", ""]
    memory = bench_memory.Store.load()
    if memory is not None:
        mem = {k: e["result"] for k, e in memory.entries.items()}
        lines += md_table(["estimator", "set", "N", "X (MB)", "peak", "budget", "peak / budget"],
                          [[r["estimator"], r["set"], f"{r['n']:,}", f"{r['x_mb']:.1f}", f"{r['peak_mb']:.0f}",
                            f"{r['budget_mb']:.0f}", f"{r['peak_mb'] / r['budget_mb']:.2f}"]
                           for r in (mem[k] for k in sorted(mem, key=lambda k: (mem[k]["set"], k)))])
    sig = stored(store, "sigint")
    lines += ["", "## Ctrl-C latency", "",
              "Seconds from SIGINT to KeyboardInterrupt raised out of the fit (the child prints "
              "`time.monotonic()` when it catches it), a second into a fit that would run for minutes.", ""]
    if sig:
        lines += md_table(["solver", "median (s)", "max (s)"],
                          [[k, f"{v['median']:.3f}", f"{v['max']:.3f}"] for k, v in sig.items()])
    else:
        lines.append("(not run)")
    store.write_md("Robustness (issue 22)", lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="fuzz,memory,sigint,report")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--merge-fuzz", nargs="+", metavar="JSON", help="store these SK_FUZZ_REPORT files as the fuzz part")
    ap.add_argument("--fuzz-minutes", type=float, default=0.0, help="their wall time (for the report)")
    ap.add_argument("--add", action="store_true", help="with --merge-fuzz: add their targets to the stored ones")
    ap.add_argument("--shards", action="store_true",
                    help="with --merge-fuzz: the files are shards of the same targets; add up their counts")
    ap.add_argument("--sanitizers", help="store the outcome of the last scripts/sanitize.sh run (text)")
    args = ap.parse_args()
    parts = args.parts.split(",")
    measures = args.merge_fuzz or args.sanitizers or {"fuzz", "sigint"} & set(parts)
    store = Store(force=True, register_run=bool(measures))   # the report alone: the last run's record
    if args.merge_fuzz:
        merge_fuzz(store, args.merge_fuzz, args.fuzz_minutes, add=args.add, shards=args.shards)
    if args.sanitizers:
        store.put("sanitizers", {}, args.sanitizers)
    if "fuzz" in parts:
        part_fuzz(store)
    if "memory" in parts:
        part_memory()
    if "sigint" in parts:
        part_sigint(store, args.repeats)
    if "report" in parts or parts:
        report(store)


if __name__ == "__main__":
    main()
