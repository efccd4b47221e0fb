// The builtin-variable and function tables. Internal to sema.
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

struct FunctionRow {
  std::string_view name;
  Function id;
  uint8_t min_args;
  uint8_t max_args;
};

const BuiltinRow* find_builtin(std::string_view name);
// N for "argN" (0-15), else -1.
int arg_index(std::string_view name);
const FunctionRow* find_function(std::string_view name);
const FunctionRow& function_row(Function f);

}  // namespace bpfscope::sema
