"""A benchmark's worker subprocess: one JSON object per line, ``{"ready": ...}`` first, then one
answer per command (bench_dropin and bench_overhead time one revision of sparsekernel each in one)."""

from __future__ import annotations

import json
import subprocess
import sys


class LineWorker:
    """``python -c code *args`` in a subprocess (cwd /, so that the checkout is not imported by
    accident; ``python``: another interpreter, e.g. a virtual environment with an earlier revision
    installed); ``module`` is what it reported when ready."""

    def __init__(self, code: str, *args: str, env: dict | None = None, python: str | None = None):
        self.proc = subprocess.Popen([python or sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        self.module = json.loads(self.proc.stdout.readline())["ready"]

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
