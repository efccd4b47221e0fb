#include <fmt/format.h>

#include <algorithm>

#include "sema/sema.h"

namespace bpfscope::sema {

const char* probe_kind_name(ProbeKind k) {
  switch (k) {
    case ProbeKind::Begin: return "begin";
    case ProbeKind::End: return "end";
    case ProbeKind::Tracepoint: return "tracepoint";
    case ProbeKind::RawTracepoint: return "rawtracepoint";
    case ProbeKind::Software: return "software";
    case ProbeKind::Uprobe: return "uprobe";
    case ProbeKind::Uretprobe: return "uretprobe";
    case ProbeKind::Usdt: return "usdt";
    case ProbeKind::Iter: return "iter";
    case ProbeKind::Interval: return "interval";
    case ProbeKind::Profile: return "profile";
    case ProbeKind::Kprobe: return "kprobe";
    case ProbeKind::Kretprobe: return "kretprobe";
    case ProbeKind::Fentry: return "fentry";
    case ProbeKind::Fexit: return "fexit";
    case ProbeKind::Hardware: return "hardware";
    case ProbeKind::Bench: return "bench";
    case ProbeKind::Signal: return "self";
  }
  std::unreachable();
}

static const char* action_name(ActionKind k) {
  switch (k) {
    case ActionKind::Printf: return "printf";
    case ActionKind::Exit: return "exit";
    case ActionKind::Print: return "print";
    case ActionKind::PrintValue: return "print_value";
    case ActionKind::Table: return "table";
    case ActionKind::Clear: return "clear";
    case ActionKind::Zero: return "zero";
    case ActionKind::Time: return "time";
    case ActionKind::Join: return "join";
    case ActionKind::Cat: return "cat";
    case ActionKind::System: return "system";
    case ActionKind::Errorf: return "errorf";
    case ActionKind::Warnf: return "warnf";
  }
  std::unreachable();
}

std::string dump(const TypedProgram& p) {
  std::string out;
  for (size_t i = 0; i < p.maps.size(); ++i) {
    const auto& m = p.maps[i];
    out += fmt::format("map {} {}: key {} ({} bytes), value {} ({} bytes{}), kind {}, {}{} entries\n", i, m.name,
                       m.keyed ? m.key.name() : "none", m.key_size, m.value.name(), m.value_size,
                       m.percpu ? ", per-CPU" : "", static_cast<int>(m.agg), m.lru ? "LRU, " : "", m.max_entries);
  }
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const auto& a = p.actions[i];
    out += fmt::format("action {} {}: record {} bytes", i, action_name(a.kind), a.record_size);
    for (size_t j = 0; j < a.args.size(); ++j) out += fmt::format(", {}@{}", a.args[j].name(), a.offsets[j]);
    if (!a.format.empty()) {
      std::string f;
      for (char c : a.format) f += c == '\n' ? std::string("\\n") : std::string(1, c);
      out += fmt::format(", format \"{}\"", f);
    }
    for (int32_t m : a.taken)
      out += (std::find(a.zeroed.begin(), a.zeroed.end(), m) != a.zeroed.end() ? ", zeroes " : ", takes ") +
             p.maps[m].name;
    if (a.folded) out += ", folded into the print before it";
    out += "\n";
  }
  for (size_t i = 0; i < p.var_types.size(); ++i) out += fmt::format("var {}: {}\n", i, p.var_types[i].name());
  for (const auto& u : p.units) {
    out += fmt::format("program {} ({}, probe {}):", u.name, probe_kind_name(u.kind), u.probe_index);
    for (const auto& t : u.targets) out += " " + t.name;
    out += "\n";
  }
  return out;
}

}  // namespace bpfscope::sema
