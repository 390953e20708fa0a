"""
Export to ONNX and .skm model files
===================================

Export a fitted model to ONNX in float64 and check onnxruntime against the library, save it as
a .skm model file (no pickle inside) and load it back.

    pip install "sparsekernel[export]" && python examples/export_onnx.py
"""

import os
import tempfile

import numpy as np
from sklearn.datasets import load_iris

from sparsekernel import KernelLogisticRegression, load_model, save_model

X, y = load_iris(return_X_y=True)
model = KernelLogisticRegression(C=10.0).fit(X, y)

try:
    import onnxruntime as ort

    from sparsekernel.export import to_onnx
except ImportError:
    print("ONNX part skipped: pip install 'sparsekernel[export]'")
else:
    onx = to_onnx(model, X)  # float64 by default
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    labels, probabilities = session.run(None, {session.get_inputs()[0].name: X})
    print("ONNX labels equal predict:", bool(np.array_equal(labels, model.predict(X))),
          "| largest probability difference:", float(np.max(np.abs(probabilities - model.predict_proba(X)))))

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "klr.skm")
    save_model(model, path)
    again = load_model(path)
    print(".skm round trip identical:", bool(np.array_equal(again.predict_proba(X), model.predict_proba(X))),
          f"({os.path.getsize(path)} bytes)")
