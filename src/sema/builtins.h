// The builtin-variable table. Internal to sema. (The functions are in
// src/builtins/.)
#pragma once

#include <cstdint>
#include <string_view>

#include "sema/sema.h"

namespace bpfscope::sema {

struct BuiltinRow {
  std::string_view name;
  Builtin id;
  TypeKind kind;
  uint32_t size;  // Int: bytes; String: capacity
  bool is_signed;
};

const BuiltinRow* find_builtin(std::string_view name);
// N for "argN" (0-15), else -1.
int arg_index(std::string_view name);

}  // namespace bpfscope::sema
