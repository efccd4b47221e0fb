// KernelSymbols: text symbols of /proc/kallsyms.
#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cstring>
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
    loaded_ = true;
    only_addrs_ = {};
    only_syms_ = {};
    std::ifstream in(path_);
    std::string line;
    uint32_t used = 1u << kChunkBits;  // in the last chunk: none yet
    while (std::getline(in, line)) {
      auto l = parse_kallsyms_line(line);
      if (!l || (l->type != 't' && l->type != 'T') || l->name.starts_with("__pfx_")) continue;
      const size_t need = std::min<size_t>(l->name.size(), (1u << kChunkBits) - 1) + 1;
      if (used + need > (1u << kChunkBits)) {
        chunks_.push_back(std::make_unique_for_overwrite<char[]>(1u << kChunkBits));
        used = 0;
      }
      char* at = chunks_.back().get() + used;
      memcpy(at, l->name.data(), need - 1);
      at[need - 1] = '\0';
      syms_.push_back({l->addr, static_cast<uint32_t>((chunks_.size() - 1) << kChunkBits | used)});
      used += static_cast<uint32_t>(need);
    }
    // By address; of several at one address, the first listed first (names
    // are stored in file order, so their offsets keep it).
    std::sort(syms_.begin(), syms_.end(),
              [](const Sym& a, const Sym& b) { return a.addr != b.addr ? a.addr < b.addr : a.name < b.name; });
  });
}

std::string_view KernelSymbols::name_of(const Sym& s) const {
  return chunks_[s.name >> kChunkBits].get() + (s.name & ((1u << kChunkBits) - 1));
}

void KernelSymbols::index_names() const {
  load();
  std::call_once(names_once_, [this] {
    by_name_.resize(syms_.size());
    for (uint32_t i = 0; i < syms_.size(); ++i) by_name_[i] = i;
    std::sort(by_name_.begin(), by_name_.end(), [this](uint32_t a, uint32_t b) {
      const auto na = name_of(syms_[a]), nb = name_of(syms_[b]);
      return na != nb ? na < nb : a < b;
    });
  });
}

bool KernelSymbols::load_only(std::vector<uint64_t> addrs) const {
  if (loaded_) return false;
  std::sort(addrs.begin(), addrs.end());
  addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
  std::vector<std::pair<uint64_t, std::string>> found(addrs.size());
  std::ifstream in(path_);
  std::string line, prev_name;
  uint64_t prev = 0;
  size_t next = 0;  // the first address not yet placed
  // Text symbols come in address order: the addresses from one symbol's up
  // to the next one's are in it. Of several at one address, the first listed
  // is kept.
  auto place = [&](uint64_t end) {
    for (; next < addrs.size() && addrs[next] < end; ++next)
      if (prev != 0 && addrs[next] >= prev) found[next] = {prev, prev_name};
  };
  // BPF programs and trampolines come last, out of order: those (and the
  // last ordered symbol) are kept apart and decided at the end.
  bool ordered = true;
  std::vector<std::pair<uint64_t, std::string>> rest;
  while (std::getline(in, line)) {
    auto l = parse_kallsyms_line(line);
    if (!l || (l->type != 't' && l->type != 'T') || l->name.starts_with("__pfx_")) continue;
    if (ordered && l->addr < prev) ordered = false;
    if (!ordered) {
      rest.emplace_back(l->addr, std::string(l->name));
      if (rest.size() > 100000) return false;  // not the short tail expected
      continue;
    }
    if (l->addr == prev) continue;
    place(l->addr);
    prev = l->addr;
    prev_name.assign(l->name);
  }
  if (prev == 0) return false;
  // The last ordered symbol and the rest: each address's symbol is the
  // highest at or below it; the very last symbol covers only its own address
  // (as find() does).
  rest.emplace_back(prev, prev_name);
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < addrs.size(); ++i) {
    auto it = std::upper_bound(rest.begin(), rest.end(), addrs[i],
                               [](uint64_t a, const auto& r) { return a < r.first; });
    if (it == rest.begin()) continue;
    --it;
    while (it != rest.begin() && (it - 1)->first == it->first) --it;
    if (it->first > found[i].first) found[i] = *it;
  }
  const uint64_t last = rest.back().first;
  for (size_t i = 0; i < addrs.size(); ++i)
    if (found[i].first == last && addrs[i] != last) found[i] = {0, ""};
  only_addrs_ = std::move(addrs);
  only_syms_ = std::move(found);
  return true;
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
  if (!loaded_) {
    auto it = std::lower_bound(only_addrs_.begin(), only_addrs_.end(), addr);
    if (it != only_addrs_.end() && *it == addr) {
      const auto& [at, n] = only_syms_[it - only_addrs_.begin()];
      if (at == 0) return std::nullopt;
      return n;
    }
  }
  const Sym* s = find(addr);
  if (!s) return std::nullopt;
  return std::string(name_of(*s));
}

std::string KernelSymbols::with_offset(uint64_t addr) const {
  if (!loaded_) {
    auto it = std::lower_bound(only_addrs_.begin(), only_addrs_.end(), addr);
    if (it != only_addrs_.end() && *it == addr) {
      const auto& [at, n] = only_syms_[it - only_addrs_.begin()];
      if (at == 0) return hex_address(addr);
      return fmt::format("{}+{}", n, addr - at);
    }
  }
  const Sym* s = find(addr);
  if (!s) return hex_address(addr);
  return fmt::format("{}+{}", name_of(*s), addr - s->addr);
}

std::optional<uint64_t> KernelSymbols::address(std::string_view name) const {
  index_names();
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [this](uint32_t i, std::string_view n) { return name_of(syms_[i]) < n; });
  if (it == by_name_.end() || name_of(syms_[*it]) != name) return std::nullopt;
  return uint64_t{syms_[*it].addr};
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
  index_names();
  std::string pattern(glob);
  std::vector<std::string> out;
  for (uint32_t i : by_name_) {
    const char* name = name_of(syms_[i]).data();  // NUL-terminated
    if (fnmatch(pattern.c_str(), name, 0) == 0 && (out.empty() || out.back() != name)) out.emplace_back(name);
  }
  return out;
}

}  // namespace bpfscope::symbols
