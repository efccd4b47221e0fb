// Program load (with the verifier log) and BPF_PROG_TEST_RUN.
#include <bpf/btf.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "bpf/bpf.h"
#include "bpf/internal.h"
#include "bpf/libbpf_bpf.h"

namespace bpfscope::bpf {

namespace {

// The BTF that names the program's functions: `long main(void *ctx)` at
// instruction 0 and a static `long cbN(void *map, void *key, void *value,
// void *ctx)` at each callback, so the verifier checks a callback in the
// context of its bpf_for_each_map_elem call (a global function would be
// checked alone, with unknown argument types).
struct FuncBtf {
  std::unique_ptr<btf, decltype(&btf__free)> blob{nullptr, &btf__free};
  std::vector<bpf_func_info> info;
};

std::expected<FuncBtf, int> func_btf(const ProgramSpec& spec) {
  FuncBtf f;
  f.blob.reset(btf__new_empty());
  btf* b = f.blob.get();
  if (!b) return std::unexpected(ENOMEM);
  const int long_id = btf__add_int(b, "long", 8, BTF_INT_SIGNED);
  const int ptr_id = btf__add_ptr(b, 0);
  const int main_proto = btf__add_func_proto(b, long_id);
  btf__add_func_param(b, "ctx", ptr_id);
  const int main_id = btf__add_func(b, "main", BTF_FUNC_GLOBAL, main_proto);
  const int cb_proto = btf__add_func_proto(b, long_id);
  for (const char* arg : {"map", "key", "value", "ctx"}) btf__add_func_param(b, arg, ptr_id);
  if (long_id < 0 || ptr_id < 0 || main_proto < 0 || main_id < 0 || cb_proto < 0) return std::unexpected(EINVAL);
  f.info.push_back({.insn_off = 0, .type_id = static_cast<uint32_t>(main_id)});
  for (size_t k = 0; k < spec.subprograms.size(); ++k) {
    const std::string name = fmt::format("cb{}", k + 1);
    const int id = btf__add_func(b, name.c_str(), BTF_FUNC_STATIC, cb_proto);
    if (id < 0) return std::unexpected(EINVAL);
    f.info.push_back({.insn_off = spec.subprograms[k], .type_id = static_cast<uint32_t>(id)});
  }
  if (int err = btf__load_into_kernel(b); err < 0) return std::unexpected(-err);
  return f;
}

struct Attempt {
  int fd = -1;  // or -errno
  std::string log;
};

Attempt try_load(const ProgramSpec& spec, const std::string& name, uint32_t log_level) {
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = spec.expected_attach_type,
              .attach_btf_id = spec.attach_btf_id);
  FuncBtf funcs;
  if (!spec.subprograms.empty()) {
    auto f = func_btf(spec);
    if (!f) return Attempt{.fd = -f.error(), .log = "loading the BTF of the program's functions failed"};
    funcs = std::move(*f);
    opts.prog_btf_fd = static_cast<uint32_t>(btf__fd(funcs.blob.get()));
    opts.func_info = funcs.info.data();
    opts.func_info_cnt = static_cast<uint32_t>(funcs.info.size());
    opts.func_info_rec_size = sizeof(bpf_func_info);
  }
  std::unique_ptr<char[]> buf;
  const uint32_t log_size = std::max<uint32_t>(spec.log_size, 1);
  if (log_level > 0) {
    // Not value-initialized: the kernel writes a NUL-terminated string, and
    // zeroing megabytes would cost milliseconds of startup.
    buf.reset(new char[log_size]);
    buf[0] = '\0';
    opts.log_level = log_level;
    opts.log_size = log_size;
    opts.log_buf = buf.get();
  }
  Attempt a;
  a.fd = bpf_prog_load(spec.type, name.empty() ? nullptr : name.c_str(), spec.license.c_str(), spec.insns.data(),
                       spec.insns.size(), &opts);
  if (buf) {
    buf[log_size - 1] = '\0';
    a.log.assign(buf.get(), ::strnlen(buf.get(), log_size));
  }
  return a;
}

}  // namespace

std::expected<Loaded, LoadError> load_program(const ProgramSpec& spec) {
  const std::string name = detail::kernel_object_name(spec.name);
  if (spec.log_level > 0) {
    Attempt a = try_load(spec, name, spec.log_level);
    if (a.fd < 0) return std::unexpected(LoadError{-a.fd, std::move(a.log)});
    return Loaded{Fd(a.fd), std::move(a.log)};
  }

  // Fast path without a log; on failure load again with a level-1 log to
  // capture what the verifier said.
  Attempt first = try_load(spec, name, 0);
  if (first.fd >= 0) return Loaded{Fd(first.fd), {}};
  const int err = -first.fd;
  Attempt again = try_load(spec, name, 1);
  if (again.fd >= 0) return Loaded{Fd(again.fd), {}};  // a transient failure the first time
  return std::unexpected(LoadError{err, std::move(again.log)});
}

uint64_t recursion_misses(int prog_fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return 0;
  return info.recursion_misses;
}

Result<uint32_t> run_once(int prog_fd) {
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  int r = bpf_prog_test_run_opts(prog_fd, &opts);
  if (r < 0) {
    const int err = -r;  // libbpf 1.x returns -errno
    return std::unexpected(detail::make_error(err, fmt::format("BPF_PROG_TEST_RUN(prog fd {})", prog_fd)));
  }
  return opts.retval;
}

Result<RepeatedRun> run_repeated(int prog_fd, uint32_t repeat) {
  // The kernel refuses an XDP test run on less than an Ethernet header.
  uint8_t packet[14] = {};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = packet, .data_size_in = sizeof packet,
              .repeat = static_cast<int>(repeat));
  int r = bpf_prog_test_run_opts(prog_fd, &opts);
  if (r < 0) {
    const int err = -r;
    return std::unexpected(
        detail::make_error(err, fmt::format("BPF_PROG_TEST_RUN(prog fd {}, repeat {})", prog_fd, repeat)));
  }
  return RepeatedRun{.retval = opts.retval, .average_ns = opts.duration};
}

}  // namespace bpfscope::bpf
