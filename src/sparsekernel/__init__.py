"""sparsekernel: fast, scikit-learn compatible kernel machines with a C++17 core."""

from . import datasets
from ._version import __version__  # noqa: F401
from ._memory import InsufficientMemoryError
from .io import load_model, save_model
from .klr import KernelLogisticRegression, SparseKernelLogisticRegression, klr_lambda_bound
from .klr_cv import KernelLogisticRegressionCV, SparseKernelLogisticRegressionCV
from .metrics import expected_calibration_error
from .model_selection import PathSearchCV, sklr_path, svm_path
from .nssvm import NSSVC
from .slmc import SLMC, SparseKFD
from .svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

__all__ = ["SVC", "SVR", "NuSVC", "NuSVR", "OneClassSVM", "NSSVC", "SLMC", "SparseKFD", "PathSearchCV", "svm_path", "sklr_path", "KernelLogisticRegression",
           "SparseKernelLogisticRegression", "KernelLogisticRegressionCV", "SparseKernelLogisticRegressionCV",
           "klr_lambda_bound", "expected_calibration_error", "save_model", "load_model", "InsufficientMemoryError"]
