// Program load (with the verifier log) and BPF_PROG_TEST_RUN.
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "bpf/bpf.h"
#include "bpf/internal.h"
#include "bpf/libbpf_bpf.h"

namespace bpfscope::bpf {

namespace {

// The verifier log buffer: large enough for level-1 logs of big programs.
constexpr uint32_t kLogSize = 16u << 20;

struct Attempt {
  int fd = -1;  // or -errno
  std::string log;
};

Attempt try_load(const ProgramSpec& spec, const std::string& name, uint32_t log_level) {
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = spec.expected_attach_type,
              .attach_btf_id = spec.attach_btf_id);
  std::unique_ptr<char[]> buf;
  if (log_level > 0) {
    // Not value-initialized: the kernel writes a NUL-terminated string, and
    // zeroing 16 MB would cost milliseconds of startup.
    buf.reset(new char[kLogSize]);
    buf[0] = '\0';
    opts.log_level = log_level;
    opts.log_size = kLogSize;
    opts.log_buf = buf.get();
  }
  Attempt a;
  a.fd = bpf_prog_load(spec.type, name.empty() ? nullptr : name.c_str(), "GPL", spec.insns.data(),
                       spec.insns.size(), &opts);
  if (buf) {
    buf[kLogSize - 1] = '\0';
    a.log.assign(buf.get(), ::strnlen(buf.get(), kLogSize));
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

Result<uint32_t> run_once(int prog_fd) {
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  int r = bpf_prog_test_run_opts(prog_fd, &opts);
  if (r < 0) {
    const int err = -r;  // libbpf 1.x returns -errno
    return std::unexpected(detail::make_error(err, fmt::format("BPF_PROG_TEST_RUN(prog fd {})", prog_fd)));
  }
  return opts.retval;
}

}  // namespace bpfscope::bpf
