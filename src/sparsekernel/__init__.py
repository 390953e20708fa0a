"""sparsekernel: fast, scikit-learn compatible kernel machines with a C++17 core."""

from .svm import SVC

__all__ = ["SVC"]
__version__ = "0.1.0"
