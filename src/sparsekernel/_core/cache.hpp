// LRU cache of float32 rows of Q with a hard budget in bytes.
//
// Rows are addressed by the solver's *active positions* (LIBSVM's convention): when shrinking
// swaps positions, swap_indices() swaps them in the cache and inside every cached row, so a row
// computed for the first `len` active positions stays valid after the active set shrinks, and is
// extended (its tail computed) when it grows again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

namespace sk {

class RowCache {
public:
    // nthreads: for bringing a long-unread row up to date with the swap passes (catch_up)
    RowCache(int64_t n_rows, std::size_t budget_bytes, int nthreads = 1);

    // Storage for row `i` with room for `len` entries, most recently used from now on. `*valid`
    // receives how many leading entries already hold data (0 for a new row). Returns nullptr when
    // a row of that length cannot fit in the budget at all; the caller then uses its own scratch.
    float* get(int64_t i, int64_t len, int64_t* valid);

    // Row `i` when it is cached with at least `len` entries, else nullptr; leaves the LRU order as it is.
    const float* peek(int64_t i, int64_t len) {
        if (!catch_up(i)) return nullptr;
        const Entry& e = entries_[i];
        return e.len >= len && e.data ? e.data.get() : nullptr;
    }

    // A sequence of position swaps (one shrinking pass), no position in two of them (do_shrinking's
    // passes: catch_up applies a pass's swaps in parallel). The rows move with their variables at
    // once; the positions inside a cached row are swapped when the row is next read (catch_up):
    // in the final phase of a solve most cached rows are not read between two passes, and each
    // pass over every row (the eager way, LIBSVM's) cost 13 % of a search's time on magic.
    void swap_indices(const std::vector<std::pair<int64_t, int64_t>>& swaps);

    std::size_t peak_bytes() const { return peak_ * sizeof(float); }
    // How many rows of length len fit in the budget.
    int64_t capacity_rows(int64_t len) const { return len > 0 ? int64_t(budget_ / std::size_t(len)) : 0; }
    int64_t hits = 0, misses = 0;

private:
    struct Entry {
        std::unique_ptr<float[]> data;
        int64_t len = 0;  // number of valid entries
        int64_t cap = 0;  // allocated length (>= len: a spare buffer reused)
        int64_t prev = -1, next = -1;  // LRU list; -1 when not in the list
        int64_t version = 0;  // the swap passes applied to data
    };
    // Bring row i's positions up to date with the swap passes; false (and the row evicted) when a
    // pass moves a position the row lacks into one it has, or its passes are no longer logged.
    bool catch_up(int64_t i);
    void drop_oldest_pass();
    void unlink(int64_t i);
    void push_back(int64_t i);  // most recently used at the back
    void evict(int64_t i);
    // A buffer of at least len floats: a spare one of at most twice that, else a new one. Rows of
    // more than 128 KB are mmap'ed by malloc and given back on free, so every row allocated after
    // an eviction was first-touched page by page and zeroed by the kernel (16 % of a 2-thread fit
    // of dense a9a at cache_size 2000 MB, on the master thread: a serial part, bench_manycore).
    std::unique_ptr<float[]> take_buffer(int64_t len, int64_t* cap);
    void keep_spare(std::unique_ptr<float[]> data, int64_t cap);
    void make_room(std::size_t floats);  // spares freed, then least recently used rows evicted
    void copy_head(float* to, const float* from, int64_t len) const;  // in chunks on the team

    std::vector<Entry> entries_;
    int64_t head_ = -1, tail_ = -1;  // head = least recently used
    std::size_t budget_ = 0, used_ = 0, peak_ = 0;  // in floats: used_ = the rows' and the spares' capacity
    std::vector<std::pair<int64_t, std::unique_ptr<float[]>>> spares_;  // (capacity, buffer), at most kMaxSpares
    static constexpr std::size_t kMaxSpares = 8;
    int nthreads_ = 1;
    static constexpr std::size_t kMaxLoggedSwaps = std::size_t(1) << 20;
    std::deque<std::vector<std::pair<int64_t, int64_t>>> log_;  // passes log_base_, log_base_ + 1, ...
    int64_t log_base_ = 0, version_ = 0;  // the first logged pass; passes so far
    std::size_t logged_ = 0;  // swaps in log_
};

}  // namespace sk
