"""sparsekernel: fast, scikit-learn compatible kernel machines with a C++17 core."""

from .klr import KernelLogisticRegression, SparseKernelLogisticRegression, klr_lambda_bound
from .svm import SVC

__all__ = ["SVC", "KernelLogisticRegression", "SparseKernelLogisticRegression", "klr_lambda_bound"]
__version__ = "0.1.0"
