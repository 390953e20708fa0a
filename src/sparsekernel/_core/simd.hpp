// Portable SIMD helpers. The shipped build has no -march=native; the hot loops are compiled for
// several instruction sets with GCC's target_clones and picked at load time (ifunc).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SK_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SK_MULTIVERSION
#endif

namespace sk {

struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};
using AlignedDoubles = std::unique_ptr<double[], FreeDeleter>;

// n zeros aligned to a cache line (64 bytes), so that the vector loads of a loop over them never
// straddle two lines, whatever address malloc would have given. Measured on the block kernels
// (256 x 20,000 rbf, one core): 13-33 % slower with the block where malloc happened to put it,
// at d = 20 in one process and d = 300 in another (the heap's layout decides), none when aligned.
inline AlignedDoubles aligned_zeros(int64_t n) {
    const size_t bytes = (size_t(std::max<int64_t>(n, 1)) * sizeof(double) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return AlignedDoubles(static_cast<double*>(p));
}

// The Taylor polynomial of e^r to degree 8 (relative error ~1e-9 for |r| <= ln2/2) or 13 (~2e-16), as
// nested products that the compiler turns into a chain of multiply-adds
template <int kDegree>
inline double exp_taylor(double r);

template <>
inline double exp_taylor<8>(double r) {
    return 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 +
           r * (1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320))))))));
}

template <>
inline double exp_taylor<13>(double r) {
    return 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720 +
           r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800 + r * (1.0 / 39916800 +
           r * (1.0 / 479001600 + r * (1.0 / 6227020800.0)))))))))))));
}

// exp(x) for x <= 0: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, the degree-kDegree Taylor
// polynomial for e^r, and 2^n built in the exponent bits. Branch-free so that the loops calling it
// vectorise. Relative error about 1e-9 at the default degree 8 (ample for float32 kernel rows); to
// double precision at degree 13 (prediction's decision values).
template <int kDegree = 8>
inline double exp_nonpositive(double x) {
    constexpr double kLog2e = 1.4426950408889634;
    constexpr double kLn2Hi = 6.93147180369123816490e-01;
    constexpr double kLn2Lo = 1.90821492927058770002e-10;
    constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52: rounds to nearest integer
    x = x < -700.0 ? -700.0 : x;
    double t = x * kLog2e + kShift;
    int64_t tb;
    std::memcpy(&tb, &t, sizeof tb);
    double n = t - kShift;
    double r = (x - n * kLn2Hi) - n * kLn2Lo;
    double p = exp_taylor<kDegree>(r);
    int64_t nb;
    std::memcpy(&nb, &kShift, sizeof nb);
    int64_t e = (tb - nb + 1023) << 52;
    double scale;
    std::memcpy(&scale, &e, sizeof scale);
    return p * scale;
}

// exp_nonpositive in float32, eight lanes at once (the fused kernel-vector products of kernels.cpp):
// the same reduction, the degree-7 Taylor polynomial (relative error about 1e-7, float32's own), x
// clamped at -80 so that the result stays a normal float (e^-80 ~ 1.8e-35 stands for anything less).
typedef float Vec8f __attribute__((vector_size(32)));
typedef int32_t Vec8i __attribute__((vector_size(32)));

[[gnu::always_inline]] inline Vec8f exp8_nonpositive(Vec8f x) {
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
    constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: rounds to nearest integer
    constexpr int32_t kShiftBits = 0x4B400000;
    x = x < -80.0f ? Vec8f{} - 80.0f : x;
    const Vec8f t = x * kLog2e + kShift;
    const Vec8f n = t - kShift;
    const Vec8f r = (x - n * kLn2Hi) - n * kLn2Lo;
    const Vec8f p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                    r * (1.0f / 720 + r * (1.0f / 5040)))))));
    const Vec8i e = (reinterpret_cast<const Vec8i&>(t) - kShiftBits + 127) << 23;
    return p * reinterpret_cast<const Vec8f&>(e);
}

}  // namespace sk
