// A small JSON reader for `bpfscope render`: one NDJSON line of a recording
// into a tree. Internal to src/output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bpfscope::output {

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool b = false;
  std::string text;  // Number: as written (read exactly by as_i64/as_u64); String: the decoded string
  std::vector<Json> items;                          // Array
  std::vector<std::pair<std::string, Json>> members;  // Object, in written order

  const Json* find(std::string_view name) const;
  bool is_int() const;  // a number without fraction or exponent
  int64_t as_i64() const;
  uint64_t as_u64() const;
  double as_double() const;
};

// Parses one JSON text (the whole of `s`); on an error, nullopt and `error`
// says what and at which column (1-based).
std::optional<Json> parse_json(std::string_view s, std::string& error);

}  // namespace bpfscope::output
