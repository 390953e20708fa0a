import json
import os

from _fuzz import TALLY


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("SK_FUZZ_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({"profile": os.environ.get("SK_FUZZ_PROFILE", "ci"), "exitstatus": int(exitstatus),
                       "cases": TALLY}, f, indent=1, sort_keys=True)
