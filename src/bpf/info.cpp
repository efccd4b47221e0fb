// --info: what this kernel supports, found by trying (KERNEL.md: bpftool's
// helper lists are wrong here, so nothing is taken from tables).
#include <linux/perf_event.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>

#include "bpf/bpf.h"
#include "bpf/btf.h"
#include "bpf/internal.h"

namespace bpfscope::bpf {
namespace {

constexpr bpf_insn exit_insns[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
};

// Loads `r0 = 0; exit` as the given type. Returns "" or why not.
std::string try_load(bpf_prog_type type, bpf_attach_type attach = static_cast<bpf_attach_type>(0),
                     uint32_t btf_id = 0) {
  ProgramSpec spec;
  spec.type = type;
  spec.expected_attach_type = attach;
  spec.attach_btf_id = btf_id;
  spec.name = "probe";
  spec.insns = exit_insns;
  auto r = load_program(spec);
  if (r) return "";
  return detail::errno_text(r.error().err);
}

// Whether a program of `type` may call `helper`: the verifier names an
// unavailable helper before it looks at the arguments, so any other
// rejection means the helper exists for this type.
bool helper_available(bpf_prog_type type, int helper) {
  // R1 keeps the context, which the helpers that take one check for.
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 2, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 3, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 4, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 5, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_CALL, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = helper},
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  ProgramSpec spec;
  spec.type = type;
  spec.name = "helper";
  spec.insns = insns;
  spec.log_level = 1;
  auto r = load_program(spec);
  if (r) return true;
  const std::string& log = r.error().log;
  return log.find("unknown func") == std::string::npos && log.find("cannot use helper") == std::string::npos &&
         log.find("not supported for program type") == std::string::npos &&
         log.find("helper call is not allowed") == std::string::npos;
}

std::string yes_no(bool ok, const std::string& why = "") {
  if (ok) return "yes";
  return why.empty() ? "no" : "no (" + why + ")";
}

}  // namespace

std::string fentry_unavailable(std::string_view function, bool exit) {
  Btf btf;
  auto fn = btf.find_func(function);
  if (!fn) return fmt::format("function {} is not in the kernel's BTF", function);
  std::string why = try_load(BPF_PROG_TYPE_TRACING, exit ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY, *fn);
  if (why.empty()) return "";
  return fmt::format("this kernel refuses {} programs (BPF_PROG_LOAD: {})", exit ? "fexit" : "fentry", why);
}

std::string kernel_info() {
  std::string out;
  utsname u{};
  uname(&u);
  out += fmt::format("System\n  kernel: {} {}\n", u.sysname, u.release);
  Btf btf;
  auto btf_ok = btf.load();
  out += fmt::format("  btf: {}\n", yes_no(btf_ok.has_value(), btf_ok ? "" : btf_ok.error().message));
  auto tracefs = tracefs_root();
  out += fmt::format("  tracefs: {}\n", tracefs ? *tracefs : "no (" + tracefs.error().message + ")");
  out += fmt::format("  possible CPUs: {}, online: {}\n", possible_cpus(), online_cpus().size());

  out += "\nProbe types\n";
  struct ProgRow {
    const char* name;
    bpf_prog_type type;
  };
  constexpr std::array kProgs = {
      ProgRow{"tracepoint", BPF_PROG_TYPE_TRACEPOINT}, ProgRow{"raw_tracepoint", BPF_PROG_TYPE_RAW_TRACEPOINT},
      ProgRow{"perf_event", BPF_PROG_TYPE_PERF_EVENT}, ProgRow{"kprobe program", BPF_PROG_TYPE_KPROBE},
      ProgRow{"socket_filter", BPF_PROG_TYPE_SOCKET_FILTER}, ProgRow{"xdp", BPF_PROG_TYPE_XDP},
      ProgRow{"sched_cls", BPF_PROG_TYPE_SCHED_CLS}, ProgRow{"cgroup_skb", BPF_PROG_TYPE_CGROUP_SKB},
  };
  for (const auto& p : kProgs) {
    std::string why = try_load(p.type);
    out += fmt::format("  {}: {}\n", p.name, yes_no(why.empty(), why));
  }
  auto tp_id = btf.tracepoint_btf_id("sched_switch");
  std::string why = tp_id ? try_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, *tp_id) : "no BTF";
  out += fmt::format("  tp_btf: {}\n", yes_no(why.empty(), why));
  auto fn = btf.find_func("do_nanosleep");
  why = fn ? try_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, *fn) : "no BTF";
  out += fmt::format("  fentry: {}\n", yes_no(why.empty(), why));
  out += fmt::format("  kprobe: {}\n", yes_no(has_kprobe_support(), "no kprobe PMU, no kprobe_events"));
  out += fmt::format("  uprobe: {}\n", yes_no(detail::path_exists("/sys/bus/event_source/devices/uprobe"),
                                               "no uprobe PMU"));
  out += fmt::format("  hardware: {}\n", yes_no(detail::path_exists("/sys/bus/event_source/devices/cpu"),
                                                 "no hardware PMU"));

  out += "\nMap types\n";
  struct MapRow {
    const char* name;
    bpf_map_type type;
    uint32_t key, value, entries;
  };
  constexpr std::array kMaps = {
      MapRow{"hash", BPF_MAP_TYPE_HASH, 8, 8, 1}, MapRow{"percpu_hash", BPF_MAP_TYPE_PERCPU_HASH, 8, 8, 1},
      MapRow{"lru_hash", BPF_MAP_TYPE_LRU_HASH, 8, 8, 1}, MapRow{"array", BPF_MAP_TYPE_ARRAY, 4, 8, 1},
      MapRow{"percpu_array", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 1},
      MapRow{"stack_trace", BPF_MAP_TYPE_STACK_TRACE, 4, 8 * 127, 1},
      MapRow{"ringbuf", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096},
  };
  for (const auto& m : kMaps) {
    auto fd = create_map(m.type, "probe", m.key, m.value, m.entries);
    out += fmt::format("  {}: {}\n", m.name, yes_no(fd.has_value(), fd ? "" : detail::errno_text(fd.error().err)));
  }

  out += "\nKernel helpers (tracepoint programs)\n";
  struct HelperRow {
    const char* name;
    int id;
  };
  constexpr std::array kHelpers = {
      HelperRow{"probe_read_kernel", BPF_FUNC_probe_read_kernel},
      HelperRow{"probe_read_user_str", BPF_FUNC_probe_read_user_str},
      HelperRow{"ringbuf_output", BPF_FUNC_ringbuf_output}, HelperRow{"get_stackid", BPF_FUNC_get_stackid},
      HelperRow{"map_lookup_percpu_elem", BPF_FUNC_map_lookup_percpu_elem},
      HelperRow{"get_current_cgroup_id", BPF_FUNC_get_current_cgroup_id},
      HelperRow{"get_current_ancestor_cgroup_id", BPF_FUNC_get_current_ancestor_cgroup_id},
      HelperRow{"send_signal", BPF_FUNC_send_signal}, HelperRow{"loop", BPF_FUNC_loop},
      HelperRow{"get_func_ip", BPF_FUNC_get_func_ip}, HelperRow{"override_return", BPF_FUNC_override_return},
      HelperRow{"probe_write_user", BPF_FUNC_probe_write_user}, HelperRow{"d_path", BPF_FUNC_d_path},
  };
  for (const auto& h : kHelpers)
    out += fmt::format("  {}: {}\n", h.name, yes_no(helper_available(BPF_PROG_TYPE_TRACEPOINT, h.id)));
  return out;
}

}  // namespace bpfscope::bpf
