"""The scripts in examples/ run to completion (each in its own interpreter) and print what they
promise; CI runs them through this module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECT = {
    "probabilities.py": ["KernelLogisticRegressionCV", "log-loss", "argmax(proba) = predict"],
    "model_size.py": ["full SVC", "SLMC N_z = 20"],
    "progress_and_budget.py": ["time_limit=0.5: converged_=False", "converged"],
    "export_onnx.py": [".skm round trip identical: True"],
}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_example_runs(name, tmp_path):
    if not (EXAMPLES / name).is_file():
        pytest.skip("examples/ not present")
    args = [sys.executable, str(EXAMPLES / name)]
    if name == "probabilities.py":
        pytest.importorskip("matplotlib")
        args.append(str(tmp_path / "reliability.png"))
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    for text in EXPECT[name]:
        assert text in out.stdout, out.stdout
    if name == "probabilities.py":
        assert (tmp_path / "reliability.png").stat().st_size > 0
    if name == "export_onnx.py" and "skipped" not in out.stdout:
        assert "ONNX labels equal predict: True" in out.stdout
