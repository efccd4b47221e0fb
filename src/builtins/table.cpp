#include <array>
#include <utility>

#include "builtins/builtins.h"

namespace bpfscope::builtins {

// Other spellings of a function: hist() was quantize() in bpftrace's first
// releases (2018), and is in ply.
constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kAliases = {{{"quantize", "hist"}}};

const Function* find(std::string_view name) {
  for (const auto& [alias, real] : kAliases)
    if (name == alias) name = real;
  // bpftrace 0.26 names its builtin variables __builtin_comm... (its
  // stdlib's macros wrap them).
  const bool prefixed = name.starts_with("__builtin_");
  if (prefixed) name.remove_prefix(10);
  if (arg_index(name) >= 0) name = "argN";
  for (auto group : {process, clocks, context, actions, maps, strings, net, symbols, names, kernel, options})
    for (const Function& f : group())
      if (f.name == name) return prefixed && !f.variable ? nullptr : &f;
  return nullptr;
}

int arg_index(std::string_view name) {
  if (name.size() < 4 || name.size() > 5 || !name.starts_with("arg")) return -1;
  int n = 0;
  for (char c : name.substr(3)) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  if (name.size() == 5 && name[3] == '0') return -1;
  return n < 16 ? n : -1;
}

}  // namespace bpfscope::builtins
