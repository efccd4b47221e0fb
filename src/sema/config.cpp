// config = { key = value; ... }: bpftrace's configuration options, set from
// the script. Keys are bpftrace's names, or their environment spellings
// (BPFTRACE_MAX_STRLEN for max_strlen).
#include "sema/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace bpfscope::sema {
namespace {

// bpftrace 0.26's options. The ones bpfscope does not act on are accepted,
// as bpftrace accepts them, and change nothing here.
constexpr std::array<std::string_view, 27> kKnown = {
    "cache_user_symbols", "cpp_demangle",        "lazy_symbolication", "license",
    "log_size",           "max_bpf_progs",       "max_cat_bytes",      "max_map_keys",
    "max_probes",         "max_strlen",          "max_type_res_iterations", "missing_probes",
    "on_stack_limit",     "perf_rb_pages",       "print_maps_on_exit", "show_debug_info",
    "stack_mode",         "str_trunc_trailer",   "symbol_source",      "unstable_addr",
    "unstable_dw_ustack", "unstable_import",     "unstable_macro",     "unstable_map_decl",
    "unstable_tseries",   "unstable_typeinfo",   "use_blazesym",
};

// BPFTRACE_MAX_STRLEN -> max_strlen.
std::string canonical(std::string_view key) {
  if (key.starts_with("BPFTRACE_")) key.remove_prefix(9);
  std::string out(key);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view unquoted(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return v.substr(1, v.size() - 2);
  return v;
}

std::optional<uint64_t> number(std::string_view v) {
  uint64_t n = 0;
  int base = 10;
  if (v.starts_with("0x") || v.starts_with("0X")) {
    v.remove_prefix(2);
    base = 16;
  }
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n, base);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return n;
}

// The licenses bpftrace accepts, all GPL-compatible for the kernel, in the
// order its error lists them.
constexpr std::array<std::string_view, 6> kLicenses = {
    "Dual MIT/GPL", "Dual BSD/GPL", "Dual MPL/GPL", "GPL and additional rights", "GPL v2", "GPL",
};

bool valid_license(std::string_view v) { return std::find(kLicenses.begin(), kLicenses.end(), v) != kLicenses.end(); }

// bpftrace 0.26's words.
std::string license_error(std::string_view v) {
  std::string list;
  for (std::string_view l : kLicenses) list += fmt::format("{}{}", list.empty() ? "" : ", ", l);
  return fmt::format(
      "Invalid value for license. Found: {}. Valid values: {}. Read more about BPF programs and licensing: "
      "https://docs.kernel.org/bpf/bpf_licensing.html#using-bpf-programs-in-the-linux-kernel",
      v, list);
}

// log_size: the kernel takes up to UINT32_MAX >> 2 bytes.
std::optional<uint32_t> log_size(std::string_view v) {
  auto n = number(v);
  if (!n || *n == 0 || *n > (UINT32_MAX >> 2)) return std::nullopt;
  return static_cast<uint32_t>(*n);
}

std::optional<bool> boolean(std::string_view v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  return std::nullopt;
}

// An unstable feature's setting, in bpftrace's words: enable (or true/1),
// warn, error (or false/0).
std::optional<Unstable> unstable(std::string_view v) {
  const auto b = boolean(v);
  if (v == "enable" || (b && *b)) return Unstable::Enable;
  if (v == "warn") return Unstable::Warn;
  if (v == "error" || (b && !*b)) return Unstable::Error;
  return std::nullopt;
}

}  // namespace

bool apply_config(const lang::Program& program, Config& config, lang::Diagnostics& diags) {
  bool ok = true;
  const Config environment = config;
  for (size_t i = 0; i < program.config.size(); ++i) {
    const auto& [raw_key, raw_value] = program.config[i];
    const lang::Loc loc = i < program.config_locs.size() ? program.config_locs[i] : lang::Loc{};
    const std::string key = canonical(raw_key);
    const std::string_view value = unquoted(raw_value);
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      diags.error(loc, fmt::format("{}: not a known configuration option", raw_key));
      ok = false;
      continue;
    }
    auto bad = [&](std::string_view expected) {
      diags.error(loc, fmt::format("{}: invalid value {}: expected {}", raw_key, raw_value, expected));
      ok = false;
    };
    if (key == "max_strlen" || key == "max_map_keys") {
      auto n = number(value);
      if (!n || *n == 0 || *n > UINT32_MAX) {
        bad("a positive integer");
        continue;
      }
      (key == "max_strlen" ? config.max_strlen : config.max_map_keys) = static_cast<uint32_t>(*n);
    } else if (key == "print_maps_on_exit") {
      auto b = boolean(value);
      if (!b) {
        bad("true, false, 1 or 0");
        continue;
      }
      config.print_maps_on_exit = *b;
    } else if (key == "unstable_tseries") {
      if (auto u = unstable(value))
        config.unstable_tseries = *u;
      else
        bad("enable, warn or error");
    } else if (key == "license") {
      if (!valid_license(value)) {
        diags.error(loc, license_error(value));
        ok = false;
        continue;
      }
      config.license = std::string(value);
    } else if (key == "log_size") {
      auto n = log_size(value);
      if (!n) {
        bad("a positive integer up to 1073741823");
        continue;
      }
      config.log_size = *n;
    } else if (key == "missing_probes") {
      if (value == "error")
        config.missing_probes = MissingProbes::Error;
      else if (value == "warn")
        config.missing_probes = MissingProbes::Warn;
      else if (value == "ignore")
        config.missing_probes = MissingProbes::Ignore;
      else
        bad("error, warn or ignore");
    }
  }
  // The block's values were checked all the same.
  for (const std::string& key : environment.from_environment) {
    if (key == "max_strlen") config.max_strlen = environment.max_strlen;
    if (key == "max_map_keys") config.max_map_keys = environment.max_map_keys;
    if (key == "unstable_tseries") config.unstable_tseries = environment.unstable_tseries;
    if (key == "license") config.license = environment.license;
    if (key == "log_size") config.log_size = environment.log_size;
  }
  return ok;
}

bool config_from_environment(Config& config, lang::Diagnostics& diags) {
  bool ok = true;
  // A value that is not a positive number leaves the default, as before
  // bpftrace checked these.
  const auto count = [&](const char* key, const char* name, const char* old_name, uint32_t& to) {
    const char* v = getenv(name);
    if (!v) v = getenv(old_name);
    if (!v) return;
    uint64_t n = number(v).value_or(0);
    if (n == 0 || n > UINT32_MAX) return;
    to = static_cast<uint32_t>(n);
    config.from_environment.insert(key);
  };
  count("max_strlen", "BPFTRACE_MAX_STRLEN", "BPFTRACE_STRLEN", config.max_strlen);
  count("max_map_keys", "BPFTRACE_MAX_MAP_KEYS", "BPFTRACE_MAP_KEYS_MAX", config.max_map_keys);
  if (const char* v = getenv("BPFTRACE_LICENSE")) {
    if (valid_license(v)) {
      config.license = v;
      config.from_environment.insert("license");
    } else {
      diags.error_unlocated(license_error(v));
      ok = false;
    }
  }
  if (const char* v = getenv("BPFTRACE_UNSTABLE_TSERIES")) {
    if (auto u = unstable(v)) {
      config.unstable_tseries = *u;
      config.from_environment.insert("unstable_tseries");
    } else {
      diags.error_unlocated(fmt::format("BPFTRACE_UNSTABLE_TSERIES: invalid value {}: expected enable, warn or error", v));
      ok = false;
    }
  }
  if (const char* v = getenv("BPFTRACE_LOG_SIZE")) {
    if (auto n = log_size(v)) {
      config.log_size = *n;
      config.from_environment.insert("log_size");
    } else {
      diags.error_unlocated(
          fmt::format("BPFTRACE_LOG_SIZE: invalid value {}: expected a positive integer up to 1073741823", v));
      ok = false;
    }
  }
  return ok;
}

}  // namespace bpfscope::sema
