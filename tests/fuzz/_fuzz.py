"""What the fuzz tests share: the hypothesis profiles and the limits every case must respect.

Profiles: ``ci`` (the default: a fixed, derandomised set of a few dozen cases per test, seconds per
estimator) and ``long`` (SK_FUZZ_PROFILE=long: 10,000 cases per test, for the robustness report;
SK_FUZZ_EXAMPLES=n sets another count, e.g. for shards of a target run in parallel processes, each
drawing its own random cases).
"""

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=int(os.environ.get("SK_FUZZ_EXAMPLES", 10_000)), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("SK_FUZZ_PROFILE", "ci")
settings.load_profile(PROFILE)

MAX_WARNINGS = 5  # more than this from one fit is a warning storm
# every fit that has a time budget gets this one: no case may run past it (a hang is a failure of
# the budget, which the engine polls); unreachable tolerances otherwise run to LIBSVM's step cap
# (the long profile's 10,000 cases per target would otherwise spend most of their time in the few
# fits that run to it)
TIME_LIMIT = 0.25 if PROFILE == "long" else 1.0

BAD = (ValueError, TypeError)

# outcome counts per fuzz target, {target: {outcome: n}}; conftest.py writes them to the file named
# by SK_FUZZ_REPORT at the end of the session (the robustness report's "cases tried")
TALLY = {}


def record(target, outcome):
    """Count one case of ``target`` that ended in ``outcome`` ('fit', 'error', ...)."""
    counts = TALLY.setdefault(target, {})
    counts[outcome] = counts.get(outcome, 0) + 1


def pick(draw, values):
    """From (valid values, invalid values): a valid one 11 times in 12, so that most cases get past
    validation and exercise the fit, and an invalid one otherwise."""
    valid, invalid = values
    return draw(st.sampled_from(invalid if rarely(draw, 12) else valid))


def rarely(draw, n):
    """True about once in ``n`` draws (a middle value: hypothesis favours the ends of a range)."""
    return draw(st.integers(0, n - 1)) == n // 2
