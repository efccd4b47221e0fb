// The symbols stage; see symbols.h. Shared helpers and demangling.
#include "symbols/symbols.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>

namespace bpfscope::symbols {

std::string hex_address(uint64_t addr) {
  if (addr == 0) return "0";
  return fmt::format("{:#x}", addr);
}

std::string demangle(std::string_view name) {
  // Itanium mangled names start with _Z (also __Z on some platforms).
  if (!name.starts_with("_Z") && !name.starts_with("__Z")) return std::string(name);
  std::string input(name);
  int status = 0;
  char* out = abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return input;
  }
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace bpfscope::symbols
