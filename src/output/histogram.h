// Internal to src/output: histogram helpers shared by the map renderer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "output/output.h"

namespace bpfscope::output {

// hist_text with print()'s `div` applied to each count. As in bpftrace, the
// range of printed buckets (first to last non-empty) is decided on the
// undivided counts, so a bucket that divides down to 0 still prints.
std::string hist_text_div(const std::vector<uint64_t>& buckets, int bits, uint64_t div);

// hist(n, k) label of index i (types_format.cpp hist_index_label): the
// exclusive upper bound of bucket i and the lower bound of bucket i + 1; i for
// i <= 2^(k+1), else 2^power * (2^k + interval).
uint64_t hist_label(size_t i, int k);

// lhist label of index i: min + i * step, or nullopt past max (the overflow
// bucket has no upper bound).
std::optional<int64_t> lhist_label(size_t i, int64_t min, int64_t max, int64_t step);

// The largest integer bucket i of a hist() (kind Hist, p.bits) or lhist()
// (LHist, p.min, max, step) holds: one less than its exclusive upper bound
// (bpftrace's JSON "max"), -1 for hist()'s bucket of negatives; nullopt
// where the bucket has no upper bound (lhist()'s last one) or the bound
// does not fit in an int64.
std::optional<int64_t> bucket_max(size_t i, AggKind kind, const HistParams& p);

// Bucket i of a hist() (kind Hist, p.bits) or lhist() (LHist, p.min, max,
// step) as the text labels it: `range` "[64, 128)", "[3]", "(..., 0)",
// "[1M, ...)"; `low` its lower bound "64", "1K" ("" for the underflow bucket).
struct BucketLabel {
  std::string range;
  std::string low;
};
BucketLabel bucket_label(size_t i, AggKind kind, const HistParams& p);

}  // namespace bpfscope::output
