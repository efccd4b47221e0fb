// Internal to src/output: histogram helpers shared by the map renderer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bpfscope::output {

// hist_text with print()'s `div` applied to each count. As in bpftrace, the
// range of printed buckets (first to last non-empty) is decided on the
// undivided counts, so a bucket that divides down to 0 still prints.
std::string hist_text_div(const std::vector<uint64_t>& buckets, int bits, uint64_t div);

}  // namespace bpfscope::output
