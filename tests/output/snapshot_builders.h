// Short builders of values and map snapshots for the output tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "output/output.h"

namespace bpfscope::output::test {

inline Value I(int64_t v) { return Value::of_int(v); }
inline Value U(uint64_t v) { return Value::of_uint(v); }
inline Value S(std::string v) { return Value::of_string(std::move(v)); }
inline Value T(std::vector<Value> v) { return Value::of_tuple(std::move(v)); }
inline Value B(bool v) { return Value::of_bool(v); }

inline Aggregate val(Value v) {
  Aggregate a;
  a.value = std::move(v);
  return a;
}
inline Aggregate avg(int64_t count, int64_t total) {
  Aggregate a;
  a.count = count;
  a.total = total;
  return a;
}
// A stats() entry: its count, total, smallest and largest value.
inline Aggregate stats(int64_t count, int64_t total, Value min, Value max) {
  Aggregate a = avg(count, total);
  a.min = std::move(min);
  a.max = std::move(max);
  return a;
}
inline Aggregate buckets(std::vector<uint64_t> b, int64_t sum = 0) {
  Aggregate a;
  a.buckets = std::move(b);
  a.sum = sum;
  return a;
}

inline MapSnapshot scalar(std::string name, AggKind kind, Aggregate a, bool is_signed = true) {
  MapSnapshot m;
  m.name = std::move(name);
  m.kind = kind;
  m.value_signed = is_signed;
  m.entries.emplace_back(Value{}, std::move(a));
  return m;
}

inline MapSnapshot keyed(std::string name, AggKind kind, std::vector<std::pair<Value, Aggregate>> e,
                         bool is_signed = true) {
  MapSnapshot m;
  m.name = std::move(name);
  m.kind = kind;
  m.keyed = true;
  m.value_signed = is_signed;
  m.entries = std::move(e);
  return m;
}

// The value of attribute `name` in the SVG tag starting at `at` ("" when
// the tag has none).
inline std::string attr(const std::string& svg, size_t at, const std::string& name) {
  const size_t end = svg.find('>', at);
  const size_t p = svg.find(" " + name + "=\"", at);
  if (p == std::string::npos || p > end) return "";
  const size_t v = p + name.size() + 3;
  return svg.substr(v, svg.find('"', v) - v);
}

}  // namespace bpfscope::output::test
