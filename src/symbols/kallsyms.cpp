// KernelSymbols: text symbols of /proc/kallsyms.
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <fstream>
#include <string>

#include "symbols/symbols.h"

namespace bpfscope::symbols {

namespace {

struct KallsymsLine {
  uint64_t addr;
  char type;
  std::string_view name;
};

// "ffffffff8226ce00 t do_nanosleep" or "... t name\t[module]"; nullopt for a
// malformed line or an address hidden by kptr_restrict (0).
std::optional<KallsymsLine> parse_kallsyms_line(std::string_view line) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 + 3 >= line.size() || line[sp1 + 2] != ' ') return std::nullopt;
  size_t start = sp1 + 3;
  size_t end = line.find_first_of(" \t", start);
  std::string_view name = line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  uint64_t addr = 0;
  auto [p, ec] = std::from_chars(line.data(), line.data() + sp1, addr, 16);
  if (ec != std::errc() || p != line.data() + sp1 || addr == 0 || name.empty()) return std::nullopt;
  return KallsymsLine{addr, line[sp1 + 1], name};
}

}  // namespace

KernelSymbols::KernelSymbols(std::string path) : path_(std::move(path)) {}

void KernelSymbols::load() const {
  std::call_once(once_, [this] {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      auto l = parse_kallsyms_line(line);
      if (l && (l->type == 't' || l->type == 'T')) syms_.push_back({l->addr, std::string(l->name)});
    }
    std::stable_sort(syms_.begin(), syms_.end(),
                     [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
    by_name_.reserve(syms_.size());
    for (const Sym& s : syms_) by_name_.emplace(s.name, s.addr);  // keeps the first
  });
}

const KernelSymbols::Sym* KernelSymbols::find(uint64_t addr) const {
  load();
  auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                             [](uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return nullptr;
  --it;
  // No sizes in kallsyms: the last symbol covers only its own address.
  if (it + 1 == syms_.end() && addr != it->addr) return nullptr;
  // Of several symbols at one address, take the first listed.
  uint64_t a = it->addr;
  while (it != syms_.begin() && (it - 1)->addr == a) --it;
  return &*it;
}

std::optional<std::string> KernelSymbols::name(uint64_t addr) const {
  const Sym* s = find(addr);
  if (!s) return std::nullopt;
  return s->name;
}

std::string KernelSymbols::with_offset(uint64_t addr) const {
  const Sym* s = find(addr);
  if (!s) return hex_address(addr);
  return fmt::format("{}+{}", s->name, addr - s->addr);
}

std::optional<uint64_t> KernelSymbols::address(std::string_view name) const {
  load();
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

size_t KernelSymbols::size() const {
  load();
  return syms_.size();
}

std::optional<uint64_t> kernel_symbol_address(std::string_view name, const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto l = parse_kallsyms_line(line);
    if (l && l->name == name) return l->addr;
  }
  return std::nullopt;
}

std::vector<std::string> KernelSymbols::match(std::string_view glob) const {
  load();
  std::string pattern(glob);
  std::vector<std::string> out;
  for (const auto& [name, addr] : by_name_)
    if (!name.starts_with("__pfx_") && fnmatch(pattern.c_str(), std::string(name).c_str(), 0) == 0)
      out.emplace_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace bpfscope::symbols
