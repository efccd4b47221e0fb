#include "sema/map_decls.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace bpfscope::sema {
namespace {

// The kinds a declaration may name (bpftrace's BPF_MAP_TYPES table, in its
// alphabetical order, which the hint lists).
struct MapKindRow {
  std::string_view name;
  bool percpu;
  bool lru;
};
constexpr MapKindRow kMapKinds[] = {
    {"hash", false, false},
    {"lruhash", false, true},
    {"percpuhash", true, false},
    {"percpulruhash", true, true},
};

const MapKindRow* find_kind(std::string_view name) {
  for (const auto& k : kMapKinds)
    if (k.name == name) return &k;
  return nullptr;
}

std::string kinds_hint() {
  std::string hint = "Valid map types: ";
  for (size_t i = 0; i < std::size(kMapKinds); ++i) hint += fmt::format("{}{}", i ? ", " : "", kMapKinds[i].name);
  return hint;
}

}  // namespace

bool apply_map_decls(const lang::Program& program, TypedProgram& out, lang::Diagnostics& diags) {
  const size_t errors_before = diags.error_count();
  for (size_t i = 0; i < program.map_decls.size(); ++i) {
    const lang::MapDecl& d = program.map_decls[i];
    const bool duplicate = std::any_of(program.map_decls.begin(), program.map_decls.begin() + i,
                                       [&](const lang::MapDecl& o) { return o.name == d.name; });
    if (duplicate) {
      diags.error(d.loc, fmt::format("Map {} is already declared", d.name));
      continue;
    }
    const MapKindRow* kind = find_kind(d.kind);
    if (!kind) {
      diags.error(d.kind_loc, fmt::format("Invalid bpf map type: {}", d.kind), {kinds_hint()});
      continue;
    }
    // The kernel takes a u32 and refuses 0.
    if (d.max_entries == 0 || d.max_entries > UINT32_MAX) {
      diags.error(d.loc, fmt::format("Invalid number of entries for {}: {} (must be 1 to {})", d.name, d.max_entries,
                                     UINT32_MAX));
      continue;
    }
    auto m = std::find_if(out.maps.begin(), out.maps.end(), [&](const MapInfo& mi) { return mi.name == d.name; });
    if (m == out.maps.end()) {
      diags.warning(d.loc, fmt::format("Unused map: {}", d.name));
      continue;
    }
    // Aggregations need per-CPU values and plain values shared ones; LRU
    // eviction is the only free choice (bpftrace's bpf_map_types_compatible).
    if (kind->percpu != m->percpu) {
      diags.error(m->first_use, fmt::format("Incompatible map types. Type from declaration: {}. Type from value/key "
                                            "type: {}",
                                            d.kind, m->percpu ? "percpuhash" : "hash"));
      continue;
    }
    m->lru = kind->lru;
    m->max_entries = static_cast<uint32_t>(d.max_entries);
  }
  return diags.error_count() == errors_before;
}

}  // namespace bpfscope::sema
