// Parallel loops that stay fast on a busy machine.
//
// A plain `omp parallel for` ends with a barrier: when another process holds a core, the thread
// descheduled there makes every kernel row wait a full scheduler time slice (measured: a 2-thread
// fit 15x slower than 1 thread while another process ran). The solver therefore runs inside one
// parallel region (`ParallelSolve`) and hands out work as OpenMP tasks: the thread that waits
// for a loop executes the pending chunks itself, so a loop never waits for a thread that has not
// started, only for chunks already under way.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace sk {

// fn(c) for c in [0, n_chunks), in parallel when called inside a parallel region (as tasks) or when
// nthreads > 1 outside one (a parallel for, e.g. prediction).
template <class Fn>
void for_chunks(int64_t n_chunks, int nthreads, Fn&& fn) {
    if (n_chunks <= 1 || nthreads <= 1) {
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    } else if (omp_in_parallel()) {
#pragma omp taskloop grainsize(1)
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    } else {
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
        for (int64_t c = 0; c < n_chunks; ++c) fn(c);
    }
}

// Chunk count for n items of `cost` operations each: two chunks per thread (some balance when a
// core is busy elsewhere, few task hand-offs otherwise), none below ~20k operations (a task costs
// a microsecond or two).
inline int64_t chunks_for(int64_t n, double cost, int nthreads) {
    if (nthreads <= 1 || n <= 0) return 1;
    const double total = double(n) * cost;
    const int64_t by_work = int64_t(total / 20000.0);
    return std::max<int64_t>(1, std::min<int64_t>({by_work, int64_t(2) * nthreads, n}));
}

// Runs body() on the calling thread (the master: Python's signal checks need it) within a team of
// nthreads whose other members wait at the region's end barrier, executing the tasks that body()
// spawns through for_chunks.
template <class Body>
void run_in_team(int nthreads, Body&& body) {
    if (nthreads <= 1) {
        body();
        return;
    }
#pragma omp parallel num_threads(nthreads)
    {
#pragma omp master
        body();
    }
}

}  // namespace sk
