// Read-only view of a set of points: dense row-major float64 or CSR (int64 indptr, int32 indices,
// float64 values). The arrays are owned by Python; the binding keeps them alive.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace sk {

struct Matrix {
    int64_t n = 0;  // rows (points)
    int64_t d = 0;  // columns (features)
    bool sparse = false;
    const double* dense = nullptr;    // n x d, row-major
    const int64_t* indptr = nullptr;  // n + 1
    const int32_t* indices = nullptr;
    const double* values = nullptr;
    std::vector<double> sqnorm;  // ||x_i||^2, for rbf
    std::vector<double> l1norm;  // ||x_i||_1, for laplacian

    void compute_norms() {
        sqnorm.assign(n, 0.0);
        l1norm.assign(n, 0.0);
        for (int64_t i = 0; i < n; ++i) {
            double s2 = 0, s1 = 0;
            if (sparse) {
                for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
                    s2 += values[k] * values[k];
                    s1 += std::fabs(values[k]);
                }
            } else {
                const double* r = dense + i * d;
                for (int64_t k = 0; k < d; ++k) {
                    s2 += r[k] * r[k];
                    s1 += std::fabs(r[k]);
                }
            }
            sqnorm[i] = s2;
            l1norm[i] = s1;
        }
    }
};

}  // namespace sk
