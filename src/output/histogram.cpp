// hist() and lhist(): the bucket index functions the BPF code computes, and the
// bucket lines bpftrace 0.26 prints (types_format.cpp build_histogram /
// build_linear_histogram, output/text.cpp TextEmitter<Histogram>).
#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "output/histogram.h"
#include "output/output.h"

namespace bpfscope::output {

namespace {

constexpr int kMaxHistBits = 5;
constexpr int kBarWidth = 52;

int clamp_bits(int bits) { return std::clamp(bits, 0, kMaxHistBits); }

// A bucket boundary as bpftrace keeps it: a plain integer, or "symbolic" text
// with a K/M/... suffix. Only two plain integers that differ by one make a
// single-value bucket "[3]"; a symbolic boundary never does.
struct Bound {
  std::string text;
  std::optional<int64_t> plain;
};

Bound plain_bound(int64_t v) { return Bound{fmt::format("{}", v), v}; }

bool single_value(const Bound& lo, const Bound& hi) {
  return lo.plain && hi.plain && *lo.plain != INT64_MAX && *lo.plain + 1 == *hi.plain;
}

// One line: label left-aligned in 16 columns (never cut), count right-aligned
// in 8, " |", the bar padded to 52, "|". The bar length is computed in float,
// exactly as bpftrace does: (count / (float)max) * 52, truncated.
void append_line(std::string& out, const std::string& label, uint64_t count, uint64_t max_count) {
  int bar = 0;
  if (max_count > 0) {
    const float ratio = static_cast<float>(count) / static_cast<float>(max_count);
    bar = static_cast<int>(ratio * kBarWidth);
    bar = std::clamp(bar, 0, kBarWidth);
  }
  fmt::format_to(std::back_inserter(out), "{:<16}{:>8} |{:<52}|\n", label, count,
                 std::string(static_cast<size_t>(bar), '@'));
}

// Bucket i's labels, given `upper(i)`: bucket i's exclusive upper bound, or
// nullopt for an overflow bucket; bucket 0 is the underflow bucket
// "(..., upper(0))".
template <typename Upper>
BucketLabel range_label(size_t i, Upper upper) {
  if (i == 0) return BucketLabel{"(..., " + upper(0)->text + ")", ""};
  const Bound lo = *upper(i - 1);
  const std::optional<Bound> hi = upper(i);
  if (!hi) return BucketLabel{"[" + lo.text + ", ...)", lo.text};
  if (single_value(lo, *hi)) return BucketLabel{"[" + lo.text + "]", lo.text};
  return BucketLabel{"[" + lo.text + ", " + hi->text + ")", lo.text};
}

// Prints buckets [first, last] where first/last are the first and last
// non-empty buckets of `raw` (bpftrace decides the range before `div` is
// applied). `upper(i)` is bucket i's exclusive upper bound, or nullopt for an
// overflow bucket; bucket 0 is the underflow bucket "(..., upper(0))".
template <typename Upper>
std::string render(const std::vector<uint64_t>& raw, size_t nbuckets, uint64_t div, Upper upper) {
  const size_t n = std::min(raw.size(), nbuckets);
  size_t first = n;
  size_t last = 0;
  for (size_t i = 0; i < n; i++) {
    if (raw[i] > 0) {
      first = std::min(first, i);
      last = i;
    }
  }
  if (first == n) return "";
  if (div == 0) div = 1;
  uint64_t max_count = 0;
  for (size_t i = first; i <= last; i++) max_count = std::max(max_count, raw[i] / div);

  std::string out;
  for (size_t i = first; i <= last; i++) {
    const std::string label = range_label(i, upper).range;
    append_line(out, label, raw[i] / div, max_count);
  }
  return out;
}

// hist(): the upper bound of bucket `index`. Indexes up to 2^(k+1) hold one
// value each (index i holds i-1), so their bound is the plain integer i. Above
// that, index = ((p - k + 1) << k) + x + 1 for values in
// [2^p + x*2^(p-k), 2^p + (x+1)*2^(p-k)); its upper bound is
// 2^(p-k) * (2^k + x + 1) = 2^power * (2^k + interval) with
// power = (index >> k) - 1 and interval = index & (2^k - 1), printed with the
// largest 1024-power suffix that divides 2^power (bpftrace hist_index_label).
Bound hist_upper(uint32_t index, int k) {
  if (index <= (2u << k)) return plain_bound(index);
  const uint64_t n = uint64_t{1} << k;
  const uint64_t interval = index & (n - 1);
  uint32_t power = (index >> k) - 1;
  const uint32_t decade = std::min<uint32_t>(power / 10, 6);
  power -= 10 * decade;
  static constexpr char kSuffix[] = "\0KMGTPE";
  std::string text = fmt::format("{}", (uint64_t{1} << power) * (n + interval));
  if (decade > 0) text += kSuffix[decade];
  return Bound{std::move(text), std::nullopt};
}

// lhist(): K/M suffixes only when step is a multiple of 1024 (0.24+); 0 stays
// "0". Otherwise the bound is a plain integer, so step-1 buckets print "[3]".
Bound lhist_bound(int64_t number, int64_t step) {
  constexpr int64_t kKilo = 1024;
  constexpr int64_t kMega = 1024 * 1024;
  if (step % kKilo != 0) return plain_bound(number);
  // (Built with fmt::format in every branch: assigning a literal here trips a
  // GCC 12 -Wrestrict false positive under -fsanitize.)
  if (number != 0 && number % kMega == 0) {
    return Bound{fmt::format("{}M", number / kMega), std::nullopt};
  }
  if (number != 0 && number % kKilo == 0) {
    return Bound{fmt::format("{}K", number / kKilo), std::nullopt};
  }
  return Bound{fmt::format("{}", number), std::nullopt};
}

// lhist(): bucket i's upper bound (the lower bound of bucket i + 1), or
// nullopt past max: the open-ended last bucket "[a, ...)".
auto lhist_upper(int64_t min, int64_t max, int64_t step) {
  return [=](size_t i) -> std::optional<Bound> {
    int64_t offset = 0;
    int64_t bound = 0;
    if (__builtin_mul_overflow(static_cast<int64_t>(i), step, &offset) ||
        __builtin_add_overflow(min, offset, &bound) || bound > max) {
      return std::nullopt;
    }
    return lhist_bound(bound, step);
  };
}

}  // namespace

// The bpftrace 0.26 log2 helper (codegen_llvm.cpp createLog2Function):
//   n < 0          -> 0
//   n < 2^k        -> n + 1                       (one value per bucket)
//   otherwise, with p = floor(log2(n)) >= k, l = p - k and x = the k bits of n
//   after its leading 1, (n >> l) & (2^k - 1):
//                  -> ((l + 1) << k) + x + 1
// For k = 0 this is: 0 negatives, 1 the value 0, 2 the value 1, and
// [2^j, 2^(j+1)) -> j + 2. With k > 0, indexes 1..2^(k+1) are single values
// (0 .. 2^(k+1)-1) and each later power of two splits into 2^k buckets.
std::string log2_table(const std::vector<uint64_t>& buckets, std::string_view unit) {
  // bpftrace's buckets (bits 0): 0 negatives, 1 the value 0, 2 the value 1,
  // i >= 3 [2^(i-2), 2^(i-1)).
  auto at = [&](size_t i) { return i < buckets.size() ? buckets[i] : 0; };
  std::vector<uint64_t> slots = {at(0) + at(1) + at(2)};
  for (size_t i = 3; i < buckets.size() && slots.size() < 64; ++i) slots.push_back(buckets[i]);
  int last = -1;
  uint64_t max_count = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] > 0) last = static_cast<int>(i);
    max_count = std::max(max_count, slots[i]);
  }
  if (last < 0) return "";
  // Past 2^32 the columns widen and the bar halves, as libbpf-tools do.
  const bool wide = last > 32;
  const int width = wide ? 20 : 10;
  const int bar_width = wide ? 20 : 40;
  std::string out = fmt::format("{:{}}{:<{}} : count    distribution\n", "", wide ? 15 : 5, unit, wide ? 29 : 19);
  for (int i = 0; i <= last; ++i) {
    const uint64_t low = i == 0 ? 0 : uint64_t{1} << i;
    const uint64_t high = i == 63 ? UINT64_MAX : (uint64_t{1} << (i + 1)) - 1;
    const auto stars = static_cast<size_t>(static_cast<unsigned __int128>(slots[i]) * bar_width / max_count);
    fmt::format_to(std::back_inserter(out), "{:>{}} -> {:<{}} : {:<8} |{:<{}}|\n", low, width, high, width, slots[i],
                   std::string(stars, '*'), bar_width);
  }
  return out;
}

// libbpf-tools' print_linear_hist (runqlen): the non-empty buckets from the
// first to the last one, each by its lower bound; ours also has the buckets
// below min and from max on, which read "<MIN" and ">=MAX".
std::string linear_table(const std::vector<uint64_t>& buckets, int64_t min, int64_t max, int64_t step,
                         std::string_view unit) {
  if (step <= 0) step = 1;
  uint64_t max_count = 0;
  for (uint64_t c : buckets) max_count = std::max(max_count, c);
  if (max_count == 0) return "";
  const size_t last = buckets.size() - 1;
  std::string out = fmt::format("     {:<13} : count     distribution\n", unit);
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] == 0) continue;
    std::string label;
    if (i == 0) {
      label = fmt::format("<{}", min);
    } else {
      const int64_t low = min + static_cast<int64_t>(i - 1) * step;
      label = i == last && low >= max ? fmt::format(">={}", low) : fmt::format("{}", low);
    }
    const auto stars = static_cast<size_t>(static_cast<unsigned __int128>(buckets[i]) * 40 / max_count);
    fmt::format_to(std::back_inserter(out), "        {:<10} : {:<8} |{:<40}|\n", label, buckets[i],
                   std::string(stars, '*'));
  }
  return out;
}

uint64_t hist_label(size_t i, int k) {
  const uint64_t n = uint64_t{1} << k;
  if (i <= 2 * n) return i;
  const uint64_t interval = i & (n - 1);
  const uint64_t power = (i >> k) - 1;
  if (power >= 64) return UINT64_MAX;
  const unsigned __int128 v = (static_cast<unsigned __int128>(1) << power) * (n + interval);
  return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v);
}

std::optional<int64_t> lhist_label(size_t i, int64_t min, int64_t max, int64_t step) {
  int64_t offset = 0;
  int64_t bound = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(i), step, &offset) ||
      __builtin_add_overflow(min, offset, &bound) || bound > max) {
    return std::nullopt;
  }
  return bound;
}

uint32_t hist_index(int64_t value, int bits) {
  const int k = clamp_bits(bits);
  if (value < 0) return 0;
  const uint64_t n = static_cast<uint64_t>(value);
  const uint64_t mask = (uint64_t{1} << k) - 1;
  if (n <= mask) return static_cast<uint32_t>(n + 1);
  const int p = 63 - __builtin_clzll(n);
  const int l = p - k;
  const uint64_t x = (n >> l) & mask;
  return static_cast<uint32_t>((static_cast<uint64_t>(l + 1) << k) + x + 1);
}

// Enough buckets for any 64-bit value: the largest index, for p = 63 (a value
// of 2^63 or more if it were unsigned), is ((64 - k) << k) + 2^k - 1 + 1 =
// (65 - k) << k, so the count is that plus one (66 for k = 0). A signed value
// never reaches the top power (its largest index is (64 - k) << k).
uint32_t hist_bucket_count(int bits) {
  const int k = clamp_bits(bits);
  return (static_cast<uint32_t>(65 - k) << k) + 1;
}

// The bpftrace 0.26 linear helper (codegen_llvm.cpp createLinearFunction):
//   n < min  -> 0;  n > max -> 1 + (max - min) / step;  else 1 + (n - min) / step.
// When (max - min) is a multiple of step, n == max lands in the overflow bucket
// as well. When it is not, the division rounds down: the last bucket
// 1 + (max - min) / step starts at min + ((max - min) / step) * step and holds
// everything from there up, including values above max (lhist(n, 0, 10, 3):
// 9, 10 and 11 all land in bucket 4, printed "[9, ...)"). Both cases are
// min(1 + (n - min) / step, 1 + (max - min) / step) for n >= min.
uint32_t lhist_index(int64_t value, int64_t min, int64_t max, int64_t step) {
  if (value < min) return 0;
  if (step <= 0 || max < min) return 1;
  const uint64_t last = 1 + (static_cast<uint64_t>(max) - static_cast<uint64_t>(min)) /
                                static_cast<uint64_t>(step);
  const uint64_t idx = 1 + (static_cast<uint64_t>(value) - static_cast<uint64_t>(min)) /
                               static_cast<uint64_t>(step);
  return static_cast<uint32_t>(std::min(idx, last));
}

// Underflow bucket, (max - min) / step (rounded down) in-range buckets, and the
// last bucket (see lhist_index).
uint32_t lhist_bucket_count(int64_t min, int64_t max, int64_t step) {
  if (step <= 0 || max < min) return 2;
  return static_cast<uint32_t>(
      (static_cast<uint64_t>(max) - static_cast<uint64_t>(min)) / static_cast<uint64_t>(step) + 2);
}

std::string hist_text_div(const std::vector<uint64_t>& buckets, int bits, uint64_t div) {
  const int k = clamp_bits(bits);
  return render(buckets, hist_bucket_count(k), div,
                [k](size_t i) -> std::optional<Bound> {
                  return hist_upper(static_cast<uint32_t>(i), k);
                });
}

std::string hist_text(const std::vector<uint64_t>& buckets, int bits) {
  return hist_text_div(buckets, bits, 1);
}

std::string lhist_text(const std::vector<uint64_t>& buckets, int64_t min, int64_t max,
                       int64_t step) {
  // Sema guarantees min < max and step >= 1; keep bad parameters from
  // leaving a bucket without its lower bound.
  if (step <= 0) step = 1;
  if (max < min) max = min;
  return render(buckets, lhist_bucket_count(min, max, step), 1, lhist_upper(min, max, step));
}

std::optional<int64_t> bucket_max(size_t i, AggKind kind, const HistParams& p) {
  if (kind == AggKind::LHist) {
    const auto hi = lhist_label(i, p.min, std::max(p.max, p.min), std::max<int64_t>(p.step, 1));
    int64_t max = 0;
    if (!hi || __builtin_sub_overflow(*hi, 1, &max)) return std::nullopt;
    return max;
  }
  // Index 0's label is 0: the negatives end at -1.
  const uint64_t label = i == 0 ? 0 : hist_label(i, clamp_bits(p.bits));
  if (label > static_cast<uint64_t>(INT64_MAX) + 1) return std::nullopt;
  return static_cast<int64_t>(label - 1);
}

BucketLabel bucket_label(size_t i, AggKind kind, const HistParams& p) {
  if (kind == AggKind::LHist) {
    const int64_t step = std::max<int64_t>(p.step, 1);
    return range_label(i, lhist_upper(p.min, std::max(p.max, p.min), step));
  }
  const int k = clamp_bits(p.bits);
  return range_label(i, [k](size_t j) -> std::optional<Bound> { return hist_upper(static_cast<uint32_t>(j), k); });
}

}  // namespace bpfscope::output
