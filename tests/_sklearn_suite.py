"""Running the installed scikit-learn's own test files against sparsekernel's substitutes: the machinery
shared by tests/test_sklearn_svm_suite.py and tests/test_sklearn_search_suite.py.

A suite copies some test files of the installed scikit-learn into a temporary directory next to a
generated ``conftest.py`` and a ``pytest.ini`` (so that the rootdir is there and no outer configuration
applies). The conftest

* imports the modules named by the substitutions and replaces, e.g., ``sklearn.svm.SVC`` by
  ``sparsekernel.SVC`` when pytest loads it, i.e. before the test modules are imported: names the test
  files bind at import (``from sklearn.svm import SVR``, ``parametrize`` lists) and attribute look-ups at
  run time (``svm.SVC``) both give the substitute. Only the named module attributes are replaced: a
  module that bound the original before (scikit-learn's private modules, such as ``sklearn.svm._classes``
  or ``sklearn.model_selection._search``, which define the classes) keeps it;
* checks, once the tests are collected, that no collected test module and no scikit-learn test helper
  module (a module ``sklearn.<...>.tests.<...>``, e.g. ``sklearn.model_selection.tests.common``) holds an
  original under its name, i.e. that every test sees the substitute: the run stops with a usage error
  otherwise (the test file took the class from a module that was not substituted);
* reuses scikit-learn's ``sklearn/conftest.py`` ``pytest_generate_tests`` for the ``global_random_seed``
  fixture (42 unless SKLEARN_TESTS_GLOBAL_RANDOM_SEED says otherwise) and registers scikit-learn's
  markers.

A run without substitutions (same imports, nothing replaced) gives a baseline: the outcomes with
scikit-learn's own classes.

The files are run by ``python -m pytest`` in a subprocess (``-p no:cacheprovider``, no pytest-randomly,
junit xml parsed), several runs at once when asked, so that a suite reports one test.
``check_outcomes`` fails listing every inner test that failed or errored (with a baseline: every test
that passes in the baseline and does not pass with the substitutes) and is not in the suite's
EXPECTED_FAILURES. An expected failure that passes (or matches no inner test) does not fail the run: it
is reported by a UserWarning (visible in pytest's warnings summary, and printed with ``-s``) so that the
list gets shortened.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

KEEP_DIR_ENV = "SPARSEKERNEL_KEEP_SUITE_DIR"

_CONFTEST = '''\
"""Written by sparsekernel's tests/{writer}: {title}"""

{imports}

# the originals, for the check after collection
_ORIGINALS = {{{originals}}}

# before the test modules are imported (pytest loads conftest.py first)
{assignments}

import pytest  # noqa: E402

from sklearn.conftest import pytest_generate_tests  # noqa: E402,F401  (global_random_seed)


def pytest_configure(config):
    for marker in ("thread_unsafe: scikit-learn marker (not thread-safe test)",
                   "parallel_threads(n): scikit-learn marker",
                   "iterations(n): scikit-learn marker"):
        config.addinivalue_line("markers", marker)


def pytest_collection_finish(session):
    """Every test must see the substitutes: no collected test module and no scikit-learn test helper
    module may hold an original under its name."""
    import sys

    if not _ORIGINALS:
        return
    modules = {{item.module for item in session.items if getattr(item, "module", None) is not None}}
    modules |= {{m for name, m in list(sys.modules.items())
                if name.startswith("sklearn.") and ".tests." in name + "." and m is not None}}
    stale = sorted(f"{{module.__name__}}.{{name}} is the original {{target}}"
                   for module in modules for name, value in list(vars(module).items())
                   for target, original in _ORIGINALS.items() if value is original)
    if stale:
        raise pytest.UsageError("the substitution does not reach the tests:\\n" + "\\n".join(stale))
'''


@dataclass(frozen=True)
class InnerRun:
    """One inner pytest run: {test id: (outcome, message)}, outcome in passed / failed / error /
    skipped; the subprocess's exit code and output; its wall time in seconds; its directory."""

    results: dict
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    work: Path


def sklearn_tests_dir(subpackage, files):
    """The installed scikit-learn's ``sklearn/<subpackage>/tests`` if it holds ``files`` (and
    ``sklearn/conftest.py`` exists), else None."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    d = root.joinpath(*subpackage.split("."), "tests")
    if not all((d / f).is_file() for f in files) or not (root / "conftest.py").is_file():
        return None
    return d


def conftest_source(writer, title, substitutions, substitute=True):
    """The conftest.py of an inner run. ``substitutions``: {"module.attribute": "module.attribute"},
    each target replaced by its replacement; with ``substitute`` False (a baseline run) the same
    modules are imported and nothing is replaced."""
    modules = []
    for dotted in [*substitutions, *substitutions.values()]:
        module = dotted.rsplit(".", 1)[0]
        if module not in modules:
            modules.append(module)
    imports = "\n".join(f"import {m}" for m in modules)
    if substitute:
        originals = ", ".join(f"{t!r}: {t}" for t in substitutions)
        assignments = "\n".join(f"{t} = {r}" for t, r in substitutions.items())
    else:
        originals = ""
        assignments = "# (none: the baseline run, scikit-learn's own classes)"
    return _CONFTEST.format(writer=writer, title=title, imports=imports, originals=originals,
                            assignments=assignments)


def write_suite(work, src_dir, files, *, writer, title, substitutions, substitute=True):
    """Copy ``files`` from ``src_dir`` into the directory ``work`` and write its conftest.py (with the
    substitutions made, or only the same modules imported when ``substitute`` is False) and
    pytest.ini."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    for name in files:
        (work / name).write_bytes((Path(src_dir) / name).read_bytes())
    (work / "conftest.py").write_text(conftest_source(writer, title, substitutions, substitute))
    (work / "pytest.ini").write_text("[pytest]\n")  # rootdir here: no outer configuration applies
    return work


def _command(junit, files):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "--tb=line",
           f"--junitxml={junit}", "-o", "junit_family=xunit2", *files]
    if importlib.util.find_spec("pytest_randomly") is not None:
        cmd[3:3] = ["-p", "no:randomly"]
    return cmd


def run_suites(works, files, timeout):
    """Run ``python -m pytest <files>`` in every directory of ``works`` at once (one subprocess each)
    and return their InnerRuns in the same order. Fails the calling test when a run does not complete
    or collects nothing."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    procs = []
    for work in map(Path, works):
        out, err = open(work / "stdout.txt", "w"), open(work / "stderr.txt", "w")
        procs.append((work, out, err, time.perf_counter(),
                      subprocess.Popen(_command(work / "junit.xml", files), cwd=work, env=env, stdout=out,
                                       stderr=err, text=True)))
    deadline = time.perf_counter() + timeout
    runs = []
    try:
        for work, out, err, t0, proc in procs:
            try:
                returncode = proc.wait(timeout=max(deadline - time.perf_counter(), 0.1))
            except subprocess.TimeoutExpired:
                pytest.fail(f"inner pytest run in {work} took more than {timeout} s")
            seconds = time.perf_counter() - t0
            out.close()
            err.close()
            runs.append((work, returncode, seconds))
    finally:
        for _, out, err, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
            err.close()
    inner = []
    for work, returncode, seconds in runs:
        stdout, stderr = (work / "stdout.txt").read_text(), (work / "stderr.txt").read_text()
        if os.environ.get(KEEP_DIR_ENV):
            print(f"\ninner suite directory: {work}")
        junit = work / "junit.xml"
        if returncode not in (0, 1) or not junit.is_file():
            pytest.fail(f"inner pytest run in {work} did not complete (exit code {returncode}):\n"
                        f"{stdout[-4000:]}\n{stderr[-4000:]}")
        results = parse_junit(junit)
        if not results:
            pytest.fail(f"inner pytest run in {work} collected no tests:\n{stdout[-4000:]}\n{stderr[-4000:]}")
        inner.append(InnerRun(results, returncode, stdout, stderr, seconds, work))
    return inner


def parse_junit(path):
    """{test id: (outcome, message)} with outcome in passed / failed / error / skipped."""
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        test_id = f"{module}.py::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = child.get("message") or (child.text or "").strip()
                if child.tag != "skipped":
                    break
        # a failure in teardown after a pass is recorded as a second <error> of the same test
        if test_id in results and results[test_id][0] in ("failed", "error"):
            continue
        results[test_id] = (outcome, message)
    return results


def one_line(message, width=300):
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    return text if len(text) <= width else text[: width - 3] + "..."


def base_id(test_id):
    return test_id.split("[", 1)[0]


def canonical_ids(results, id_aliases):
    """``results`` with every ``old`` of ``id_aliases`` {old: new} replaced by ``new`` in the
    parametrization part of the test ids (pytest names a class parameter by its __name__: the
    substitute's ids name the substitute)."""
    if not id_aliases:
        return dict(results)
    out = {}
    for test_id, value in results.items():
        base, bracket, params = test_id.partition("[")
        for old, new in id_aliases.items():
            params = params.replace(old, new)
        key = base + bracket + params
        assert key not in out, f"two inner tests map to the id {key}"
        out[key] = value
    return out


def _counts(results):
    counts = {}
    for outcome, _ in results.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def check_outcomes(results, expected_failures, *, what, substitutes, baseline=None, baseline_name=None):
    """Fail listing every inner test of ``results`` that failed or errored and is not covered by
    ``expected_failures`` ({test id or test id without "[...]": reason}); warn about expected failures
    that pass or match no inner test.

    With a ``baseline`` (the results of the run with scikit-learn's own classes, ids made canonical):
    only the tests that pass in the baseline count, and each must pass in ``results`` (a failure, an
    error, a skip or a missing test is reported)."""

    def reason_for(test_id):
        return expected_failures.get(test_id, expected_failures.get(base_id(test_id)))

    if baseline is None:
        print(f"\ninner {what}: {_counts(results)}")
        considered = sorted(results)
    else:
        print(f"\ninner {what}: with {baseline_name} {_counts(baseline)}; with {substitutes} {_counts(results)}")
        considered = sorted(t for t, (outcome, _) in baseline.items() if outcome == "passed")
        for test_id in sorted(set(results) - set(baseline)):
            msg = f"inner test only in the run with {substitutes} (not in the baseline run): {test_id}"
            print(msg)
            warnings.warn(msg, UserWarning)

    unexpected, expected_seen = [], set()
    for test_id in considered:
        outcome, message = results.get(test_id, ("missing", "not run with " + substitutes))
        reason = reason_for(test_id)
        if reason is not None:
            expected_seen.add(test_id if test_id in expected_failures else base_id(test_id))
        bad = outcome in ("failed", "error") if baseline is None else outcome != "passed"
        if bad:
            if reason is None:
                unexpected.append(f"{test_id} [{outcome}]: {one_line(message)}")
            else:
                print(f"expected failure {test_id}: {one_line(message)}")
        elif outcome == "passed" and reason is not None:
            msg = f"expected failure now passes, shorten EXPECTED_FAILURES: {test_id}"
            print(msg)
            warnings.warn(msg, UserWarning)
    for key in sorted(set(expected_failures) - expected_seen):
        where = "inner test" if baseline is None else f"inner test that passes with {baseline_name}"
        msg = f"EXPECTED_FAILURES entry matches no {where} (renamed or removed upstream?): {key}"
        print(msg)
        warnings.warn(msg, UserWarning)

    if unexpected:
        if baseline is None:
            head = f"{len(unexpected)} of {len(results)} {what} failed with {substitutes}:\n"
        else:
            head = (f"{len(unexpected)} of the {len(considered)} {what} that pass with {baseline_name} do not pass "
                    f"with {substitutes}:\n")
        pytest.fail(head + "\n".join(unexpected), pytrace=False)
