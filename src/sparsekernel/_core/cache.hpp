// LRU cache of float32 rows of Q with a hard budget in bytes.
//
// Rows are addressed by the solver's *active positions* (LIBSVM's convention): when shrinking
// swaps positions, swap_indices() swaps them in the cache and inside every cached row, so a row
// computed for the first `len` active positions stays valid after the active set shrinks, and is
// extended (its tail computed) when it grows again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace sk {

class RowCache {
public:
    RowCache(int64_t n_rows, std::size_t budget_bytes);

    // Storage for row `i` with room for `len` entries, most recently used from now on. `*valid`
    // receives how many leading entries already hold data (0 for a new row). Returns nullptr when
    // a row of that length cannot fit in the budget at all; the caller then uses its own scratch.
    float* get(int64_t i, int64_t len, int64_t* valid);

    // Apply a sequence of position swaps (one shrinking pass): each cached row is visited once.
    // The rows are independent: nthreads share them.
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps, int nthreads = 1);

    std::size_t peak_bytes() const { return peak_ * sizeof(float); }
    // How many rows of length len fit in the budget.
    int64_t capacity_rows(int64_t len) const { return len > 0 ? int64_t(budget_ / std::size_t(len)) : 0; }
    int64_t hits = 0, misses = 0;

private:
    struct Entry {
        std::unique_ptr<float[]> data;
        int64_t len = 0;  // number of valid entries (== allocated length)
        int64_t prev = -1, next = -1;  // LRU list; -1 when not in the list
    };
    void unlink(int64_t i);
    void push_back(int64_t i);  // most recently used at the back
    void evict(int64_t i);

    std::vector<Entry> entries_;
    int64_t head_ = -1, tail_ = -1;  // head = least recently used
    std::size_t budget_ = 0, used_ = 0, peak_ = 0;  // in floats
};

}  // namespace sk
