#include "sema/probes.h"

#include "symbols/symbols.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <tuple>

#include <unistd.h>

namespace bpfscope::sema {
namespace {

struct ProviderRow {
  std::string_view name;
  ProbeKind kind;
  std::string_view canonical;  // the name `probe` prints
};

// Provider names and aliases (REFERENCE.md section 2). Matched case-insensitively.
constexpr std::array kProviders = {
    ProviderRow{.name = "begin", .kind = ProbeKind::Begin, .canonical = "BEGIN"},
    ProviderRow{.name = "end", .kind = ProbeKind::End, .canonical = "END"},
    ProviderRow{.name = "tracepoint", .kind = ProbeKind::Tracepoint, .canonical = "tracepoint"},
    ProviderRow{.name = "t", .kind = ProbeKind::Tracepoint, .canonical = "tracepoint"},
    ProviderRow{.name = "rawtracepoint", .kind = ProbeKind::RawTracepoint, .canonical = "rawtracepoint"},
    ProviderRow{.name = "rt", .kind = ProbeKind::RawTracepoint, .canonical = "rawtracepoint"},
    ProviderRow{.name = "software", .kind = ProbeKind::Software, .canonical = "software"},
    ProviderRow{.name = "s", .kind = ProbeKind::Software, .canonical = "software"},
    ProviderRow{.name = "interval", .kind = ProbeKind::Interval, .canonical = "interval"},
    ProviderRow{.name = "i", .kind = ProbeKind::Interval, .canonical = "interval"},
    ProviderRow{.name = "profile", .kind = ProbeKind::Profile, .canonical = "profile"},
    ProviderRow{.name = "p", .kind = ProbeKind::Profile, .canonical = "profile"},
    ProviderRow{.name = "uprobe", .kind = ProbeKind::Uprobe, .canonical = "uprobe"},
    ProviderRow{.name = "u", .kind = ProbeKind::Uprobe, .canonical = "uprobe"},
    ProviderRow{.name = "uretprobe", .kind = ProbeKind::Uretprobe, .canonical = "uretprobe"},
    ProviderRow{.name = "ur", .kind = ProbeKind::Uretprobe, .canonical = "uretprobe"},
    ProviderRow{.name = "iter", .kind = ProbeKind::Iter, .canonical = "iter"},
    ProviderRow{.name = "it", .kind = ProbeKind::Iter, .canonical = "iter"},
    ProviderRow{.name = "usdt", .kind = ProbeKind::Usdt, .canonical = "usdt"},
    ProviderRow{.name = "U", .kind = ProbeKind::Usdt, .canonical = "usdt"},
    ProviderRow{.name = "kprobe", .kind = ProbeKind::Kprobe, .canonical = "kprobe"},
    ProviderRow{.name = "k", .kind = ProbeKind::Kprobe, .canonical = "kprobe"},
    ProviderRow{.name = "kretprobe", .kind = ProbeKind::Kretprobe, .canonical = "kretprobe"},
    ProviderRow{.name = "kr", .kind = ProbeKind::Kretprobe, .canonical = "kretprobe"},
    ProviderRow{.name = "fentry", .kind = ProbeKind::Fentry, .canonical = "fentry"},
    ProviderRow{.name = "f", .kind = ProbeKind::Fentry, .canonical = "fentry"},
    ProviderRow{.name = "kfunc", .kind = ProbeKind::Fentry, .canonical = "fentry"},
    ProviderRow{.name = "fexit", .kind = ProbeKind::Fexit, .canonical = "fexit"},
    ProviderRow{.name = "fr", .kind = ProbeKind::Fexit, .canonical = "fexit"},
    ProviderRow{.name = "kretfunc", .kind = ProbeKind::Fexit, .canonical = "fexit"},
    ProviderRow{.name = "hardware", .kind = ProbeKind::Hardware, .canonical = "hardware"},
    ProviderRow{.name = "h", .kind = ProbeKind::Hardware, .canonical = "hardware"},
    ProviderRow{.name = "bench", .kind = ProbeKind::Bench, .canonical = "bench"},
    ProviderRow{.name = "self", .kind = ProbeKind::Signal, .canonical = "self"},
};

const ProviderRow* find_provider(std::string_view name) {
  for (const auto& row : kProviders) {
    if (row.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(name[i])) == row.name[i];
    if (same) return &row;
  }
  return nullptr;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// Splits an attach point at ':' outside double quotes and drops the quotes
// of a quoted segment (uprobe:BIN:cpp:"ns::f" has four parts).
std::vector<std::string> split_attach_point(std::string_view s) {
  std::vector<std::string> parts(1);
  bool quoted = false;
  for (char c : s) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ':' && !quoted)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

std::optional<uint64_t> parse_digits(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool has_wildcard(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// A count in a probe: "1000000", or bpftrace's exponent form "1e6".
std::optional<uint64_t> parse_u64(std::string_view s) {
  const size_t e = s.find_first_of("eE");
  if (e == std::string_view::npos) return parse_digits(s);
  auto v = parse_digits(s.substr(0, e));
  const auto exp = parse_digits(s.substr(e + 1));
  if (!v || !exp) return std::nullopt;
  for (uint64_t i = 0; i < *exp; ++i) {
    if (*v > UINT64_MAX / 10) return std::nullopt;
    *v *= 10;
  }
  return v;
}

// The units of interval and profile periods (hz, a frequency, besides).
struct PeriodUnit {
  std::string_view name;
  uint64_t ns;
};
constexpr std::array kPeriodUnits = {PeriodUnit{"s", 1000000000ull}, PeriodUnit{"ms", 1000000ull},
                                     PeriodUnit{"us", 1000ull},      PeriodUnit{"ns", 1ull},
                                     PeriodUnit{"m", 60000000000ull}, PeriodUnit{"h", 3600000000000ull}};

// "s:1", "ms:100", "us:5", "hz:99", "1s", "100ms", "5000000" (ns).
// Returns {period ns or frequency, is_freq}.
std::optional<std::pair<uint64_t, bool>> parse_period(std::string_view unit, std::string_view count) {
  if (unit == "hz") {
    auto n = parse_u64(count);
    if (!n || *n == 0) return std::nullopt;
    return std::pair{*n, true};
  }
  for (const auto& u : kPeriodUnits) {
    if (u.name == unit) {
      auto n = parse_u64(count);
      // Too long a period would wrap around in nanoseconds.
      if (!n || *n == 0 || *n > UINT64_MAX / u.ns) return std::nullopt;
      return std::pair{*n * u.ns, false};
    }
  }
  return std::nullopt;
}

std::optional<std::pair<uint64_t, bool>> parse_duration(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return parse_period("ns", s);
  return parse_period(s.substr(i), s.substr(0, i));
}


// "SIZE@OPERAND": %reg, $imm or disp(%reg).
std::optional<UsdtArg> parse_usdt_arg(std::string_view spec) {
  auto at = spec.find('@');
  if (at == std::string_view::npos) return std::nullopt;
  UsdtArg a;
  int size = std::atoi(std::string(spec.substr(0, at)).c_str());
  a.is_signed = size < 0;
  a.size = static_cast<uint32_t>(size < 0 ? -size : size);
  if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8) return std::nullopt;
  std::string_view op = spec.substr(at + 1);
  if (op.starts_with("$")) {
    a.kind = UsdtArg::Kind::Constant;
    a.value = std::strtoll(std::string(op.substr(1)).c_str(), nullptr, 0);
    return a;
  }
  if (op.starts_with("%")) {
    auto reg = pt_regs_offset(op.substr(1));
    if (!reg) return std::nullopt;
    a.kind = UsdtArg::Kind::Register;
    a.reg = *reg;
    return a;
  }
  auto paren = op.find("(%");
  if (paren == std::string_view::npos || !op.ends_with(")")) return std::nullopt;
  std::string_view reg_name = op.substr(paren + 2, op.size() - paren - 3);
  if (reg_name.find(',') != std::string_view::npos) return std::nullopt;  // index forms
  auto reg = pt_regs_offset(reg_name);
  if (!reg) return std::nullopt;
  a.kind = UsdtArg::Kind::Memory;
  a.reg = *reg;
  a.value = paren == 0 ? 0 : std::strtoll(std::string(op.substr(0, paren)).c_str(), nullptr, 0);
  return a;
}

// The binary or library of a uprobe/usdt attach point (a path, a program in
// PATH or a library name through ld.so.cache) and its ELF symbols.
std::optional<std::pair<std::string, std::shared_ptr<const symbols::ElfSymbols>>> open_binary(
    std::string_view name, lang::Loc loc, lang::Diagnostics& diags) {
  auto path = symbols::resolve_binary(name);
  if (!path) {
    diags.error(loc, fmt::format("binary or library not found: {}", name));
    return std::nullopt;
  }
  auto elf = symbols::cached_elf(*path);
  if (!elf) {
    diags.error(loc, fmt::format("cannot read symbols of {}: {}", *path, elf.error()));
    return std::nullopt;
  }
  return std::pair{*path, *elf};
}

// The argument specs of a USDT note ("8@%rbp -4@%eax"), one per argument.
std::vector<std::string_view> usdt_arg_specs(std::string_view args) {
  std::vector<std::string_view> out;
  for (auto one : split(args, ' '))
    if (!one.empty()) out.push_back(one);
  return out;
}

// The files a usdt attach point or listing searches: the named binary or
// library, or for "*" every file mapped by process pid (by every process when
// there is no -p).
std::expected<std::vector<std::string>, std::string> usdt_files(std::string_view target, int pid,
                                                               std::string_view child_program = {}) {
  if (target != "*") {
    auto path = symbols::resolve_binary(target);
    if (!path) return std::unexpected(fmt::format("binary or library not found: {}", target));
    return std::vector<std::string>{*path};
  }
  // -c: the child has not run its program yet; its files are the program's
  // and its libraries'.
  if (pid <= 0 && !child_program.empty()) {
    if (auto path = symbols::resolve_binary(child_program)) return symbols::program_files(*path);
  }
  auto files = symbols::mapped_binaries(pid);
  if (files.empty() && pid > 0) return std::unexpected(fmt::format("cannot read the mappings of process {}", pid));
  return files;
}

struct SoftwareEvent {
  std::string_view name;
  std::string_view alias;
  uint64_t config;          // PERF_COUNT_SW_*
  uint64_t default_count;   // bpftrace's defaults
};

// software:EVENT[:count] (REFERENCE.md section 2).
constexpr std::array kSoftwareEvents = {
    SoftwareEvent{"cpu-clock", "cpu", 0, 1000000},
    SoftwareEvent{"task-clock", "", 1, 1000000},
    SoftwareEvent{"page-faults", "faults", 2, 100},
    SoftwareEvent{"context-switches", "cs", 3, 1000},
    SoftwareEvent{"cpu-migrations", "", 4, 1},
    SoftwareEvent{"minor-faults", "", 5, 100},
    SoftwareEvent{"major-faults", "", 6, 1},
    SoftwareEvent{"alignment-faults", "", 7, 1},
    SoftwareEvent{"emulation-faults", "", 8, 1},
    SoftwareEvent{"dummy", "", 9, 1},
    SoftwareEvent{"bpf-output", "", 10, 1},
};

// hardware:EVENT[:count]: the kernel's generic hardware events
// (PERF_TYPE_HARDWARE, PERF_COUNT_HW_*), by the names bpftrace gives them.
constexpr std::array kHardwareEvents = {
    SoftwareEvent{"backend-stalls", "", 8, 1000000},    SoftwareEvent{"branch-instructions", "branches", 4, 100000},
    SoftwareEvent{"branch-misses", "", 5, 100000},      SoftwareEvent{"bus-cycles", "", 6, 100000},
    SoftwareEvent{"cache-misses", "", 3, 1000000},      SoftwareEvent{"cache-references", "", 2, 1000000},
    SoftwareEvent{"cpu-cycles", "cycles", 0, 1000000},  SoftwareEvent{"frontend-stalls", "", 7, 1000000},
    SoftwareEvent{"instructions", "", 1, 1000000},      SoftwareEvent{"ref-cycles", "", 9, 1000000},
};

}  // namespace

// x86-64 register names (in USDT argument specs and reg()), as offsets in
// struct pt_regs.
std::optional<int32_t> pt_regs_offset(std::string_view reg) {
  struct Reg {
    std::string_view names[4];
    int32_t offset;
  };
  constexpr Reg kRegs[] = {
      {{"rax", "eax", "ax", "al"}, 80}, {{"rbx", "ebx", "bx", "bl"}, 40}, {{"rcx", "ecx", "cx", "cl"}, 88},
      {{"rdx", "edx", "dx", "dl"}, 96}, {{"rsi", "esi", "si", "sil"}, 104}, {{"rdi", "edi", "di", "dil"}, 112},
      {{"rbp", "ebp", "bp", "bpl"}, 32}, {{"rsp", "esp", "sp", "spl"}, 152}, {{"r8", "r8d", "r8w", "r8b"}, 72},
      {{"r9", "r9d", "r9w", "r9b"}, 64}, {{"r10", "r10d", "r10w", "r10b"}, 56}, {{"r11", "r11d", "r11w", "r11b"}, 48},
      {{"r12", "r12d", "r12w", "r12b"}, 24}, {{"r13", "r13d", "r13w", "r13b"}, 16},
      {{"r14", "r14d", "r14w", "r14b"}, 8}, {{"r15", "r15d", "r15w", "r15b"}, 0}, {{"rip", "eip", "ip", ""}, 128},
      {{"orig_ax", "orig_rax", "", ""}, 120}, {{"cs", "", "", ""}, 136}, {{"flags", "eflags", "", ""}, 144},
      {{"ss", "", "", ""}, 160},
  };
  for (const auto& r : kRegs)
    for (auto n : r.names)
      if (!n.empty() && n == reg) return r.offset;
  return std::nullopt;
}

namespace {

// The kinds a listing of every provider ("-l", "-l '*ware:*'") shows:
// bpftrace's kernel list. Return probes, user-space probes (they need a
// binary), interval and profile are listed only when named.
constexpr ProbeKind kListedKinds[] = {ProbeKind::Fentry,        ProbeKind::Hardware, ProbeKind::Iter,
                                      ProbeKind::Kprobe,        ProbeKind::RawTracepoint,
                                      ProbeKind::Software,      ProbeKind::Tracepoint};

std::expected<std::string, std::string> list_kind(const ProviderRow* row, std::span<const std::string_view> parts,
                                                  bool verbose, int pid);

// -l PROVIDER[:...]: one provider's probes; a provider with wildcards
// ("*", "*ware") lists each listed kind whose name it matches.
std::expected<std::string, std::string> list_provider(std::string_view pattern, bool verbose, int pid) {
  std::string pat = pattern.empty() ? "*" : std::string(pattern);
  auto parts = split(pat, ':');
  std::string_view provider = parts[0];
  if (provider.find_first_of("*?[") == std::string_view::npos) {
    const ProviderRow* row = find_provider(provider);
    if (!row) return std::unexpected(fmt::format("Invalid probe type: {}", provider));
    return list_kind(row, parts, verbose, pid);
  }
  std::string out;
  for (ProbeKind kind : kListedKinds) {
    const auto* row = std::find_if(std::begin(kProviders), std::end(kProviders),
                                   [&](const ProviderRow& r) { return r.kind == kind && r.name == r.canonical; });
    if (!bpf::glob_match(provider, row->canonical)) continue;
    auto one = list_kind(row, parts, verbose, pid);
    if (!one) return one;
    out += *one;
  }
  return out;
}

// One kind's probes matching parts (after the provider).
std::expected<std::string, std::string> list_kind(const ProviderRow* row, std::span<const std::string_view> parts,
                                                  bool verbose, int pid) {
  auto part = [&](size_t i) { return i < parts.size() ? parts[i] : std::string_view("*"); };
  // "type name" as the -lv lines print it ("const char *filename", "int dfd").
  auto typed_name = [](std::string type, std::string_view name) {
    auto bracket = type.find('[');
    std::string suffix = bracket == std::string::npos ? "" : type.substr(bracket);
    if (bracket != std::string::npos) type.erase(bracket);
    return fmt::format("    {}{}{}{}\n", type, type.ends_with("*") ? "" : " ", name, suffix);
  };
  std::string out;
  bpf::Btf btf;
  // The software and hardware events, and their aliases, by name.
  auto events = [&](std::span<const SoftwareEvent> table) {
    for (const auto& e : table) {
      if (bpf::glob_match(part(1), e.name)) out += fmt::format("{}:{}:\n", row->canonical, e.name);
      if (!e.alias.empty() && bpf::glob_match(part(1), e.alias))
        out += fmt::format("{}:{}:\n", row->canonical, e.alias);
    }
    return out;
  };
  switch (row->kind) {
    case ProbeKind::Tracepoint: {
      auto names = bpf::list_tracepoints(part(1), part(2));
      if (!names) return std::unexpected(names.error().message);
      for (const auto& n : *names) {
        out += "tracepoint:" + n + "\n";
        if (!verbose) continue;
        auto colon = n.find(':');
        if (auto f = bpf::read_tracepoint_format(n.substr(0, colon), n.substr(colon + 1)))
          for (const auto& field : f->fields) out += typed_name(field.type, field.name);
      }
      return out;
    }
    case ProbeKind::RawTracepoint: {
      auto names = bpf::list_tracepoints("*", part(parts.size() > 2 ? 2 : 1));
      if (!names) return std::unexpected(names.error().message);
      std::vector<std::string> evs;
      for (const auto& n : *names) evs.push_back(n.substr(n.find(':') + 1));
      std::sort(evs.begin(), evs.end());
      evs.erase(std::unique(evs.begin(), evs.end()), evs.end());
      for (const auto& ev : evs) {
        out += "rawtracepoint:" + ev + "\n";
        if (!verbose) continue;
        if (auto params = btf.tracepoint_args(ev))
          for (const auto& p : *params) out += typed_name(btf.type_name(p.type_id), p.name);
      }
      return out;
    }
    case ProbeKind::Software: return events(kSoftwareEvents);
    case ProbeKind::Hardware: return events(kHardwareEvents);
    case ProbeKind::Interval:
    case ProbeKind::Profile:
      if (bpf::glob_match(part(1), "hz")) out += fmt::format("{}:hz:\n", row->canonical);
      for (const auto& u : kPeriodUnits)
        if (bpf::glob_match(part(1), u.name)) out += fmt::format("{}:{}:\n", row->canonical, u.name);
      return out;
    case ProbeKind::Uprobe:
    case ProbeKind::Uretprobe: {
      if (parts.size() < 2) return std::unexpected("list uprobes of a binary: -l 'uprobe:BINARY:*'");
      auto path = symbols::resolve_binary(parts[1]);
      if (!path) return std::unexpected(fmt::format("binary or library not found: {}", parts[1]));
      auto elf = symbols::cached_elf(*path);
      if (!elf) return std::unexpected(elf.error());
      for (const auto& f : (*elf)->match(part(2))) out += fmt::format("{}:{}:{}\n", row->canonical, *path, f);
      return out;
    }
    case ProbeKind::Usdt: {
      // usdt:BIN[:PROVIDER]:NAME; BIN "*" lists the files of the -p process
      // (of every process without -p). -lv adds each argument's type and spec.
      auto files = usdt_files(part(1), pid);
      if (!files) return std::unexpected(files.error());
      std::string_view prov = parts.size() >= 4 ? parts[2] : "*";
      std::string_view name = parts.size() >= 4 ? parts[3] : part(2);
      for (const auto& path : *files) {
        auto elf = symbols::cached_elf(path);
        if (!elf) {
          if (part(1) == "*") continue;
          return std::unexpected(elf.error());
        }
        std::vector<const symbols::UsdtProbe*> notes;
        for (const auto& note : (*elf)->usdt())
          if (bpf::glob_match(prov, note.provider) && bpf::glob_match(name, note.name)) notes.push_back(&note);
        // A probe placed at several sites is listed once.
        std::stable_sort(notes.begin(), notes.end(), [](const auto* x, const auto* y) {
          return std::tie(x->provider, x->name) < std::tie(y->provider, y->name);
        });
        for (size_t i = 0; i < notes.size(); ++i) {
          const auto& note = *notes[i];
          if (i > 0 && notes[i - 1]->provider == note.provider && notes[i - 1]->name == note.name) continue;
          out += fmt::format("usdt:{}:{}:{}\n", path, note.provider, note.name);
          if (!verbose) continue;
          auto specs = usdt_arg_specs(note.args);
          for (size_t k = 0; k < specs.size(); ++k) {
            auto arg = parse_usdt_arg(specs[k]);
            std::string type = arg ? fmt::format("{}int{}", arg->is_signed ? "" : "u", arg->size * 8) : "int64";
            out += fmt::format("    {} arg{} ({})\n", type, k, specs[k]);
          }
        }
      }
      return out;
    }
    case ProbeKind::Iter: {
      // The kernel's iterators: bpf_iter_NAME functions with a bpf_iter__NAME
      // context; -lv adds the context's fields (ctx.task, ...).
      for (const auto& [fn, id] : btf.funcs_matching(fmt::format("bpf_iter_{}", part(1)))) {
        std::string iter = fn.substr(std::string_view("bpf_iter_").size());
        if (iter.empty() || iter.starts_with("_")) continue;
        auto ctx = btf.find_struct(fmt::format("bpf_iter__{}", iter));
        if (!ctx) continue;
        out += fmt::format("iter:{}\n", iter);
        if (!verbose) continue;
        for (const auto& m : btf.members(*ctx))
          if (m.name != "meta") out += typed_name(btf.type_name(m.type_id), m.name);
      }
      return out;
    }
    case ProbeKind::Kprobe:
    case ProbeKind::Kretprobe: {
      // Kernel text symbols. They list here although this kernel cannot
      // attach kprobes (KERNEL.md 2.2); the run reports why.
      // -lv adds the parameters (and a kretprobe's return value) of the
      // functions the kernel's BTF describes.
      static const symbols::KernelSymbols kernel;
      if (parts.size() > 2) return out;  // module:function: vmlinux symbols only
      std::map<std::string, uint32_t, std::less<>> typed;
      if (verbose)
        for (auto& [fn, id] : btf.funcs_matching(part(1))) typed.emplace(std::move(fn), id);
      for (const auto& f : kernel.match(part(1))) {
        out += fmt::format("{}:{}\n", row->canonical, f);
        auto it = typed.find(f);
        if (it == typed.end()) continue;
        if (auto params = btf.func_params(it->second))
          for (const auto& p : *params) out += typed_name(btf.type_name(p.type_id), p.name);
        if (auto ret = btf.func_return(it->second); row->kind == ProbeKind::Kretprobe && ret && *ret != 0)
          out += typed_name(btf.type_name(*ret), "retval");
      }
      return out;
    }
    case ProbeKind::Fentry:
    case ProbeKind::Fexit: {
      // fentry:vmlinux:FUNC from the kernel's BTF; -lv adds the parameters
      // and the return value.
      std::string_view module = parts.size() > 2 ? parts[1] : "*";
      std::string_view func = parts.size() > 2 ? parts[2] : part(1);
      if (!bpf::glob_match(module, "vmlinux")) return out;
      for (const auto& [fn, id] : btf.funcs_matching(func)) {
        out += fmt::format("{}:vmlinux:{}\n", row->canonical, fn);
        if (!verbose) continue;
        if (auto params = btf.func_params(id))
          for (const auto& p : *params) out += typed_name(btf.type_name(p.type_id), p.name);
        if (auto ret = btf.func_return(id); ret && *ret != 0) out += typed_name(btf.type_name(*ret), "retval");
      }
      return out;
    }
    case ProbeKind::Signal:
      if (bpf::glob_match(part(1), "signal") && bpf::glob_match(part(2), "SIGUSR1")) out += "self:signal:SIGUSR1\n";
      return out;
    case ProbeKind::Begin:
    case ProbeKind::End:
    case ProbeKind::Bench: break;
  }
  return std::unexpected(fmt::format("listing {} probes is not supported", row->canonical));
}

// -l 'struct NAME': the kernel's struct of that name; -lv its definition.
std::string list_struct(std::string_view name, bool verbose) {
  bpf::Btf btf;
  auto id = btf.find_struct(fmt::format("struct {}", name));
  if (!id) return "";
  if (!verbose) return fmt::format("struct {}\n", name);
  std::string out = fmt::format("vmlinux: struct {} {{\n", name);
  for (const auto& m : btf.members(*id)) {
    std::string type = btf.type_name(m.type_id);
    auto bracket = type.find('[');
    std::string suffix = bracket == std::string::npos ? "" : type.substr(bracket);
    if (bracket != std::string::npos) type.erase(bracket);
    out += fmt::format("    {}{}{}{};\n", type, type.ends_with("*") || m.name.empty() ? "" : " ", m.name, suffix);
  }
  return out + "};\n";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::expected<std::string, std::string> list_one(std::string_view pattern, bool verbose, int pid) {
  if (pattern.starts_with("struct ")) return list_struct(trim(pattern.substr(7)), verbose);
  if (pattern.empty() || pattern == "*" || pattern.find(':') != std::string_view::npos)
    return list_provider(pattern, verbose, pid);
  // No provider: the pattern matches what follows the provider
  // ("*do_nanosleep*", "kprobe*"), or the whole name.
  auto all = list_provider("*", false, pid);
  if (!all) return all;
  std::string out;
  for (auto line : split(*all, '\n')) {
    if (line.empty()) continue;
    if (!bpf::glob_match(pattern, line.substr(line.find(':') + 1)) && !bpf::glob_match(pattern, line)) continue;
    if (!verbose) {
      out += fmt::format("{}\n", line);
      continue;
    }
    auto one = list_provider(line, true, pid);
    if (!one) return one;
    out += *one;
  }
  return out;
}

}  // namespace

std::expected<std::string, std::string> list_probes(std::string_view pattern, bool verbose, int pid) {
  std::string out;
  for (auto item : split(pattern, ',')) {
    auto one = list_one(trim(item), verbose, pid);
    if (!one) return one;
    out += *one;
  }
  return out;
}

std::expected<std::string, std::string> list_script_probes(const lang::Program& program, bool verbose, int pid) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& probe : program.probes) {
    for (const auto& point : probe.points) {
      const auto* row = find_provider(split_attach_point(point.text)[0]);
      if (row && (row->kind == ProbeKind::Begin || row->kind == ProbeKind::End || row->kind == ProbeKind::Signal ||
                  row->kind == ProbeKind::Bench))
        continue;
      if (!seen.insert(point.text).second) continue;
      auto one = list_provider(point.text, verbose, pid);
      if (!one) return one;
      out += *one;
    }
  }
  return out;
}

std::optional<ProbeKind> probe_kind_from_name(std::string_view provider) {
  if (const auto* row = find_provider(provider)) return row->kind;
  return std::nullopt;
}

std::expected<std::string, std::string> expand_positionals(
    std::string_view text, const std::vector<std::string>& params,
    const std::map<std::string, std::optional<std::string>>& named, std::set<std::string>* used) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!quoted && text.substr(i).starts_with("getopt(\"")) {
      const size_t from = i + 8, to = text.find("\")", from);
      if (to == std::string_view::npos) return std::unexpected("getopt() in an attach point: use getopt(\"NAME\")");
      const std::string name(text.substr(from, to - from));
      const auto it = named.find(name);
      if (it == named.end() || !it->second)
        return std::unexpected(fmt::format("getopt(\"{}\") in an attach point needs a value: --{}=VALUE", name, name));
      if (used) used->insert(name);
      out += *it->second;
      i = to + 1;
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c != '$' || quoted) {
      out += c;
      continue;
    }
    size_t end = text.find_first_of(":\"", i + 1);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view index = text.substr(i + 1, end - i - 1);
    size_t digits = 0;
    while (digits < index.size() && std::isdigit(static_cast<unsigned char>(index[digits]))) ++digits;
    auto n = parse_u64(index.substr(0, digits));
    if (!n || *n == 0)
      return std::unexpected(fmt::format("'${}' is not a positional parameter: use $1, $2, ...", index));
    if (digits != index.size())
      return std::unexpected(fmt::format(
          "Found trailing text '{}' in positional parameter index. Try quoting the trailing text.",
          index.substr(digits)));
    if (*n <= params.size()) out += params[*n - 1];
    i = end - 1;
  }
  return out;
}

std::optional<ResolvedAttachPoint> resolve_attach_point(std::string_view text, lang::Loc loc,
                                                        lang::Diagnostics& diags, int pid,
                                                        std::string_view child_program, std::string* missing) {
  auto owned_parts = split_attach_point(text);
  std::vector<std::string_view> parts(owned_parts.begin(), owned_parts.end());
  const ProviderRow* row = find_provider(parts[0]);
  if (!row) {
    diags.error(loc, fmt::format("Invalid probe type: {}", parts[0]));
    return std::nullopt;
  }
  ResolvedAttachPoint out{row->kind, {}};
  auto rest = parts.size() > 1 ? text.substr(parts[0].size() + 1) : std::string_view{};
  auto nothing_matched = [&] {
    if (missing) *missing = fmt::format("{} {}", row->canonical, rest);
  };
  switch (row->kind) {
    case ProbeKind::Begin:
    case ProbeKind::End:
      if (parts.size() != 1) {
        diags.error(loc, fmt::format("{} probes take no arguments", row->canonical));
        return std::nullopt;
      }
      out.targets.push_back({.name = std::string(parts[0]), .format = {}, .loc = loc});
      return out;
    case ProbeKind::Bench:
      // bench:NAME, run by --mode bench (BPF_PROG_TEST_RUN, repeated).
      if (parts.size() != 2 || parts[1].empty()) {
        diags.error(loc, "bench probes must have a name: bench:NAME");
        return std::nullopt;
      }
      out.targets.push_back(
          {.name = fmt::format("bench:{}", parts[1]), .format = {}, .func = std::string(parts[1]), .loc = loc});
      return out;
    case ProbeKind::Signal:
      // self:signal:SIGUSR1: run by bpfscope each time it receives the
      // signal. bpftrace supports SIGUSR1 alone.
      if (parts.size() != 3) {
        diags.error(loc, "self probes must have 2 arguments: self:signal:SIGUSR1");
        return std::nullopt;
      }
      if (parts[1] != "signal") {
        diags.error(loc, fmt::format("{} is not a supported trigger (self:signal:SIGUSR1)", parts[1]));
        return std::nullopt;
      }
      if (parts[2] != "SIGUSR1") {
        diags.error(loc, fmt::format("{} is not a supported signal (self:signal:SIGUSR1)", parts[2]));
        return std::nullopt;
      }
      out.targets.push_back({.name = "self:signal:SIGUSR1", .format = {}, .func = "SIGUSR1", .loc = loc});
      return out;
    case ProbeKind::Tracepoint: {
      if (parts.size() != 3 || parts[1].empty() || parts[2].empty()) {
        diags.error(loc, "tracepoint probe must have 2 arguments: tracepoint:category:event");
        return std::nullopt;
      }
      auto names = bpf::list_tracepoints(parts[1], parts[2]);
      if (!names) {
        diags.error(loc, fmt::format("cannot list tracepoints: {}", names.error().message));
        return std::nullopt;
      }
      if (names->empty()) {
        // As bpftrace: a pattern that matches nothing leaves the probe
        // without this attach point (analyse() reports a probe left with
        // none); a name that matches nothing is an error.
        if (has_wildcard(parts[1]) || has_wildcard(parts[2])) return out;
        diags.error(loc, fmt::format("No matches for tracepoint {}:{}.", parts[1], parts[2]));
        nothing_matched();
        return std::nullopt;
      }
      for (const auto& name : *names) {
        auto colon = name.find(':');
        auto format = bpf::read_tracepoint_format(name.substr(0, colon), name.substr(colon + 1));
        if (!format) {
          diags.error(loc, fmt::format("tracepoint {}: {}", name, format.error().message));
          return std::nullopt;
        }
        out.targets.push_back({.name = "tracepoint:" + name, .format = std::move(*format), .loc = loc});
      }
      return out;
    }
    case ProbeKind::RawTracepoint: {
      // rawtracepoint:event or rawtracepoint:module:event (vmlinux only here).
      std::string_view event = parts.size() == 2 ? parts[1] : parts.size() == 3 ? parts[2] : std::string_view{};
      if (event.empty()) {
        diags.error(loc, "rawtracepoint probe must name an event: rawtracepoint:event");
        return std::nullopt;
      }
      // A module other than vmlinux must be loaded with BTF of its own.
      std::string_view module = parts.size() == 3 ? parts[1] : std::string_view{};
      const bool module_ok = module.empty() || module == "vmlinux" || has_wildcard(module) ||
                             access(fmt::format("/sys/kernel/btf/{}", module).c_str(), F_OK) == 0;
      bpf::Result<std::vector<std::string>> names = std::vector<std::string>{};
      if (module_ok) names = bpf::list_tracepoints("*", event);
      if (!names || names->empty()) {
        // Without a module, bpftrace searches every module (a pattern, which
        // leaves the probe without this attach point when nothing matches).
        if (module.empty() || has_wildcard(module) || has_wildcard(event)) return out;
        diags.error(loc, fmt::format("No matches for rawtracepoint {}:{}.", module, event));
        nothing_matched();
        return std::nullopt;
      }
      // The kernel attaches raw tracepoints by event name alone.
      std::vector<std::string> events;
      for (const auto& n : *names) {
        std::string ev = n.substr(n.find(':') + 1);
        if (std::find(events.begin(), events.end(), ev) == events.end()) events.push_back(ev);
      }
      for (const auto& ev : events) {
        AttachTarget t{.name = "rawtracepoint:" + ev, .format = {}, .loc = loc};
        t.format.event = ev;
        out.targets.push_back(std::move(t));
      }
      return out;
    }
    case ProbeKind::Uprobe:
    case ProbeKind::Uretprobe: {
      // uprobe:BIN:FUNC, uprobe:BIN:FUNC+OFF, uprobe:BIN:0xOFF,
      // uprobe:BIN:cpp:"ns::f" (C++ functions by demangled name, every
      // overload); BIN may be a library name (libc) resolved through
      // ld.so.cache; FUNC may have *.
      const bool cpp = parts.size() == 4 && parts[2] == "cpp";
      if ((parts.size() != 3 && !cpp) || parts[1].empty() || parts.back().empty()) {
        diags.error(loc, fmt::format("{} probe must be {}:BINARY:FUNCTION or {}:BINARY:cpp:\"NAMESPACE::FUNCTION\"",
                                     row->canonical, row->canonical, row->canonical));
        return std::nullopt;
      }
      auto binary = open_binary(parts[1], loc, diags);
      if (!binary) return std::nullopt;
      const auto& [path, elf] = *binary;
      std::string_view spec = parts.back();
      auto add = [&](std::string func, uint64_t offset, std::string name) {
        out.targets.push_back({.name = std::move(name), .format = {}, .path = path, .offset = offset,
                               .func = std::move(func), .loc = loc});
      };
      if (!cpp && !spec.empty() && std::isdigit(static_cast<unsigned char>(spec[0]))) {
        // An address in the file's virtual address space (decimal or 0x
        // hex), which must fall inside a function, as in bpftrace's safe
        // mode.
        uint64_t addr = 0;
        const bool hex = spec.starts_with("0x") || spec.starts_with("0X");
        auto digits = hex ? spec.substr(2) : spec;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), addr, hex ? 16 : 10);
        if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) {
          diags.error(loc, fmt::format("invalid address in {}: {}", row->canonical, spec));
          return std::nullopt;
        }
        auto func = elf->name_at(addr);
        auto off = elf->vaddr_to_offset(addr);
        if (!func || !off) {
          // bpftrace finds this out as it attaches, and says it unlocated.
          diags.error_unlocated(fmt::format("Could not resolve address: {}:{:#x}", path, addr),
                                {fmt::format("no function of {} holds that address ({})", path, text)});
          return std::nullopt;
        }
        const uint64_t in_func = addr - *elf->vaddr(*func);
        if (row->kind == ProbeKind::Uretprobe && in_func != 0) {
          diags.error(loc, fmt::format("uretprobes cannot be attached at function offset. (address resolved to: {}+{})",
                                       *func, in_func));
          return std::nullopt;
        }
        add(*func, *off, fmt::format("{}:{}:{}", row->canonical, path, spec));
        return out;
      }
      uint64_t extra = 0;
      std::string_view plus_text;
      if (auto plus = spec.find('+'); plus != std::string_view::npos && !cpp) {
        auto n = parse_u64(spec.substr(plus + 1));
        if (!n) {
          diags.error(loc, fmt::format("invalid offset in {}", spec));
          return std::nullopt;
        }
        extra = *n;
        plus_text = spec.substr(plus);
        spec = spec.substr(0, plus);
      }
      if (cpp) {
        // `func` and `probe` name the demangled function, parameters included.
        for (const auto& [mangled, demangled] : elf->match_cpp(spec)) {
          auto off = elf->file_offset(mangled);
          if (off) add(demangled, *off, fmt::format("{}:{}:cpp:{}", row->canonical, path, demangled));
        }
        if (out.targets.empty()) {
          diags.error(loc, fmt::format("no C++ function in {} matches {}", path, spec));
          return std::nullopt;
        }
        return out;
      }
      std::vector<std::string> funcs;
      if (spec.find_first_of("*?") != std::string_view::npos)
        funcs = elf->match(spec);
      else
        funcs.push_back(std::string(spec));
      for (const auto& f : funcs) {
        auto off = elf->file_offset(f);
        if (!off) {
          diags.error(loc, fmt::format("function {} not found in {}", f, path));
          nothing_matched();
          return std::nullopt;
        }
        if (auto sym = elf->symbol(f); extra && sym && sym->size && extra >= sym->size) {
          diags.error(loc, fmt::format("Offset outside the function bounds ('{}' size is {})", f, sym->size));
          return std::nullopt;
        }
        add(f, *off + extra, fmt::format("{}:{}:{}{}", row->canonical, path, f, plus_text));
      }
      if (out.targets.empty()) {
        diags.error(loc, fmt::format("no function in {} matches {}", path, spec));
        nothing_matched();
        return std::nullopt;
      }
      return out;
    }
    case ProbeKind::Iter: {
      // iter:NAME runs the kernel's bpf_iter_NAME over its objects once.
      if (parts.size() != 2 || parts[1].empty()) {
        diags.error(loc, "iter probe must be iter:NAME, e.g. iter:task");
        return std::nullopt;
      }
      bpf::Btf btf;
      auto fn = btf.find_func(fmt::format("bpf_iter_{}", parts[1]));
      if (!fn || !btf.find_struct(fmt::format("bpf_iter__{}", parts[1]))) {
        diags.error(loc, fmt::format("iterator not found in the kernel's BTF: {}", parts[1]));
        nothing_matched();
        return std::nullopt;
      }
      AttachTarget t{.name = fmt::format("iter:{}", parts[1]), .format = {}, .btf_id = *fn, .loc = loc};
      t.format.event = std::string(parts[1]);
      out.targets.push_back(std::move(t));
      return out;
    }
    case ProbeKind::Usdt: {
      // usdt:BIN:[PROVIDER:]NAME, with * in provider and name; BIN "*" means
      // every file the -p process maps.
      if (parts.size() != 3 && parts.size() != 4) {
        diags.error(loc, "usdt probe must be usdt:BINARY:[PROVIDER:]NAME");
        return std::nullopt;
      }
      auto files = usdt_files(parts[1], pid, child_program);
      if (!files) {
        diags.error(loc, files.error());
        return std::nullopt;
      }
      std::string_view provider = parts.size() == 4 ? parts[2] : "*";
      std::string_view name = parts.back();
      for (const auto& path : *files) {
        auto elf = symbols::cached_elf(path);
        if (!elf) {
          // A file of a process may be unreadable; a named one must not be.
          if (parts[1] == "*") continue;
          diags.error(loc, fmt::format("cannot read symbols of {}: {}", path, elf.error()));
          return std::nullopt;
        }
        for (const auto& note : (*elf)->usdt()) {
          if (!bpf::glob_match(provider, note.provider) || !bpf::glob_match(name, note.name)) continue;
          AttachTarget t{.name = fmt::format("usdt:{}:{}:{}", path, note.provider, note.name), .format = {},
                         .path = path, .offset = note.pc, .func = note.provider + ":" + note.name,
                         .ref_ctr = note.semaphore, .loc = loc};
          for (auto one : usdt_arg_specs(note.args)) {
            auto a = parse_usdt_arg(one);
            if (!a) {
              diags.error(loc,
                          fmt::format("usdt {}:{}: argument spec {} is not supported", note.provider, note.name, one));
              return std::nullopt;
            }
            t.usdt_args.push_back(*a);
          }
          out.targets.push_back(std::move(t));
        }
      }
      if (out.targets.empty()) {
        std::string where = parts[1] != "*" ? (*files)[0]
                            : pid > 0      ? fmt::format("the files mapped by process {}", pid)
                                           : std::string("the files mapped by any process");
        diags.error(loc, fmt::format("no USDT probe {}:{} in {}", provider, name, where));
        return std::nullopt;
      }
      return out;
    }
    case ProbeKind::Software:
    case ProbeKind::Hardware: {
      // software:EVENT[:COUNT], hardware:EVENT[:COUNT]
      const auto kind = row->canonical;
      if (parts.size() < 2 || parts.size() > 3) {
        diags.error(loc, fmt::format("{} probe must be {}:EVENT or {}:EVENT:COUNT", kind, kind, kind));
        return std::nullopt;
      }
      const SoftwareEvent* ev = nullptr;
      std::span<const SoftwareEvent> table = row->kind == ProbeKind::Software ? std::span<const SoftwareEvent>(kSoftwareEvents)
                                                                             : kHardwareEvents;
      for (const auto& e : table)
        if (e.name == parts[1] || (!e.alias.empty() && e.alias == parts[1])) ev = &e;
      if (!ev) {
        diags.error(loc, fmt::format("unknown {} event: {}", kind, parts[1]));
        return std::nullopt;
      }
      uint64_t count = ev->default_count;
      if (parts.size() == 3) {
        auto n = parse_u64(parts[2]);
        if (!n || *n == 0) {
          diags.error(loc, fmt::format("{} probe count must be a positive integer, not \"{}\"", kind, parts[2]));
          return std::nullopt;
        }
        count = *n;
      }
      out.targets.push_back({.name = fmt::format("{}:{}:{}", kind, parts[1], count),
                             .format = {},
                             .period = count,
                             .freq = false,
                             .perf_config = ev->config,
                             .loc = loc});
      return out;
    }
    case ProbeKind::Interval:
    case ProbeKind::Profile: {
      std::optional<std::pair<uint64_t, bool>> period;
      if (parts.size() == 3)
        period = parse_period(parts[1], parts[2]);
      else if (parts.size() == 2)
        period = parse_duration(parts[1]);
      if (!period && parts.size() == 3 && parse_period(parts[1], "1") && parse_u64(parts[2]).value_or(0) > 0) {
        diags.error(loc, fmt::format("{} probe period is too long: {} {} is more than 2^64 nanoseconds",
                                     row->canonical, parts[2], parts[1]));
        return std::nullopt;
      }
      if (!period && parts.size() == 3 && parse_period(parts[1], "1")) {
        diags.error(loc, fmt::format("{} probe count must be a positive integer, not \"{}\"", row->canonical,
                                     parts[2]));
        return std::nullopt;
      }
      if (!period) {
        diags.error(loc, fmt::format("{} probe must have a unit and a count, e.g. {}:s:1 or {}:hz:99",
                                     row->canonical, row->canonical, row->canonical));
        return std::nullopt;
      }
      out.targets.push_back({.name = fmt::format("{}:{}", row->canonical, rest),
                             .format = {},
                             .period = period->first,
                             .freq = period->second,
                             .loc = loc});
      return out;
    }
    case ProbeKind::Kprobe:
    case ProbeKind::Kretprobe:
    case ProbeKind::Fentry:
    case ProbeKind::Fexit:
      if (parts.size() < 2 || rest.empty()) {
        diags.error(loc, fmt::format("{} probe needs a target, e.g. {}:NAME", row->canonical, row->canonical));
        return std::nullopt;
      }
      // These compile; the runtime reports at attach time why this kernel
      // cannot run them (KERNEL.md 2.2). `func` is the function (after an
      // optional module: kprobe:mod:fn, fentry:vmlinux:fn).
      out.targets.push_back({.name = fmt::format("{}:{}", row->canonical, rest), .format = {},
                             .func = std::string(parts.back()), .loc = loc});
      return out;
  }
  std::unreachable();
}

std::optional<std::vector<bpf::BtfParam>> btf_args(const bpf::Btf& btf, ProbeKind kind, const AttachTarget& t) {
  if (kind == ProbeKind::RawTracepoint) return btf.tracepoint_args(t.format.event);
  if ((kind == ProbeKind::Fentry || kind == ProbeKind::Fexit) && t.btf_id) return btf.func_params(t.btf_id);
  return std::nullopt;
}

}  // namespace bpfscope::sema
