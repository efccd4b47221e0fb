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
  for (auto group : {actions, maps, strings, net, symbols, names, kernel, options})
    for (const Function& f : group())
      if (f.name == name) return &f;
  return nullptr;
}

}  // namespace bpfscope::builtins
