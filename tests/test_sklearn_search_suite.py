"""scikit-learn's own grid-search tests, run against sparsekernel.model_selection.PathSearchCV.

The installed scikit-learn's ``sklearn/model_selection/tests/test_search.py`` is copied into four
temporary directories, each next to a generated ``conftest.py`` (tests/_sklearn_suite.py), and run
four times at once (two pairs, see WITH_SVC):

* with ``sklearn.model_selection.GridSearchCV`` replaced by ``PathSearchCV`` when pytest loads the
  conftest, i.e. before the test module is imported. test_search.py takes GridSearchCV by
  ``from sklearn.model_selection import GridSearchCV`` (bound at import, after the substitution: also
  in the ``parametrize`` lists built at import) and from nowhere else: from
  ``sklearn.model_selection._search`` it takes only ``BaseSearchCV`` and
  ``_yield_masked_array_for_each_param``, so ``sklearn.model_selection._search.GridSearchCV`` (the
  class's defining module, which scikit-learn's pickles name) is left alone, as is what scikit-learn
  bound before the substitution (``sklearn.linear_model._ridge``'s GridSearchCV behind RidgeCV, unused
  here). Its helper ``from sklearn.model_selection.tests.common import OneTimeSplitter`` imports the
  installed module (which takes only KFold). The conftest checks after collection that neither the
  test module nor any scikit-learn test helper module holds the original GridSearchCV. Only
  GridSearchCV is replaced: RandomizedSearchCV, HalvingGridSearchCV, HalvingRandomSearchCV,
  BaseSearchCV and the estimators keep testing scikit-learn;
* unmodified (the same imports, nothing replaced): the baseline. Only the tests that pass with
  scikit-learn's own GridSearchCV count (the rest fail or skip for reasons of their own, e.g. optional
  dependencies not installed), and each of them must pass with PathSearchCV.

pytest names a class parameter by its ``__name__``, so the substituted run's ids say PathSearchCV where
the baseline's say GridSearchCV (``test_scalar_fit_param[GridSearchCV-param_search0]``): they are
compared, and listed below, with GridSearchCV's names.

This suite reports one test: it fails listing every inner test that passes with GridSearchCV and does
not pass (fails, errors, skips or is missing) with PathSearchCV, unless it is in EXPECTED_FAILURES. An
expected failure that passes (or matches no test that passes with GridSearchCV) does not fail the
run: it is reported by a UserWarning (visible in pytest's warnings summary, and printed with ``-s``)
so that the list gets shortened.

Run:  python -m pytest tests/test_sklearn_search_suite.py        (add -s for the inner summary)
Keep the inner temporary directories for a manual run with SPARSEKERNEL_KEEP_SUITE_DIR=1 (their paths
are printed); then ``cd <dir> && python -m pytest -p no:cacheprovider test_search.py``.
"""

from __future__ import annotations

import pytest

from _sklearn_suite import canonical_ids, check_outcomes, run_suites, sklearn_tests_dir, write_suite

TEST_FILES = ("test_search.py",)

SUBSTITUTIONS = {"sklearn.model_selection.GridSearchCV": "sparsekernel.model_selection.PathSearchCV"}
ID_ALIASES = {"PathSearchCV": "GridSearchCV"}  # substituted run's ids -> the baseline's

# Inner test id (GridSearchCV's names) -> why it is expected to fail with PathSearchCV. Admissible
# reasons only: an assertion on GridSearchCV's class name or repr (or on its exact __init__ signature
# when that is the only reason). A key with "[...]" names one parametrization; a key without it covers
# every parametrization of that test function.
# Empty for scikit-learn 1.9.1: its one message naming the class (test_search_cv_score_samples_error)
# builds it from ``search_cv.__class__.__name__``, the ids are compared with GridSearchCV's names, and
# test_search_html_repr looks only at the inner estimators' names.
EXPECTED_FAILURES = {
}

SUBPROCESS_TIMEOUT = 900  # seconds; the four inner runs take about a minute together


# The second pair of runs puts sparsekernel.SVC in place of sklearn.svm.SVC in both (test_search.py
# takes it by ``from sklearn.svm import SVC``): the searches over SVC then take PathSearchCV's own
# route (warm-started walks, shared kernel rows), which the first pair does not reach.
WITH_SVC = {"sklearn.svm.SVC": "sparsekernel.SVC"}


@pytest.fixture(scope="module")
def inner_runs(tmp_path_factory):
    src = sklearn_tests_dir("model_selection", TEST_FILES)
    if src is None:
        pytest.skip("scikit-learn's search test file (sklearn/model_selection/tests/test_search.py, "
                    "sklearn/conftest.py) is not installed")
    work = tmp_path_factory.mktemp("sklearn_search_suite")
    title = "scikit-learn's search tests with sparsekernel.model_selection.PathSearchCV in place of "
    kw = dict(writer="test_sklearn_search_suite.py")
    substituted = write_suite(work / "path_search_cv", src, TEST_FILES, substitutions=SUBSTITUTIONS,
                              title=title + "sklearn.model_selection.GridSearchCV.", **kw)
    baseline = write_suite(work / "grid_search_cv", src, TEST_FILES, substitutions=SUBSTITUTIONS, substitute=False,
                           title="scikit-learn's search tests, unmodified (the baseline).", **kw)
    substituted_svc = write_suite(work / "path_search_cv_svc", src, TEST_FILES,
                                  substitutions={**SUBSTITUTIONS, **WITH_SVC},
                                  title=title + "GridSearchCV, and sparsekernel.SVC in place of sklearn.svm.SVC.", **kw)
    baseline_svc = write_suite(work / "grid_search_cv_svc", src, TEST_FILES, substitutions=WITH_SVC,
                               title="scikit-learn's search tests with sparsekernel.SVC (the baseline).", **kw)
    runs = run_suites([baseline, substituted, baseline_svc, substituted_svc], TEST_FILES, SUBPROCESS_TIMEOUT)
    print("\ninner runs (at once): " + ", ".join(f"{r.work.name} {r.seconds:.1f} s" for r in runs))
    return {"sklearn.svm.SVC": runs[:2], "sparsekernel.SVC": runs[2:]}


@pytest.mark.parametrize("svc", ["sklearn.svm.SVC", "sparsekernel.SVC"])
def test_sklearn_search_suite(inner_runs, svc):
    base, sub = inner_runs[svc]
    check_outcomes(canonical_ids(sub.results, ID_ALIASES), EXPECTED_FAILURES,
                   what=f"scikit-learn search tests (SVC = {svc})", substitutes="PathSearchCV",
                   baseline=base.results, baseline_name="GridSearchCV")
