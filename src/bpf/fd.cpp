// Fd ownership and the small helpers in internal.h.
#include <fcntl.h>
#include <linux/bpf.h>  // BPF_OBJ_NAME_LEN
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bpf/bpf.h"
#include "bpf/internal.h"

namespace bpfscope::bpf {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    int incoming = o.release();
    if (fd_ >= 0) ::close(fd_);
    fd_ = incoming;
  }
  return *this;
}

Fd::~Fd() {
  // close(2) releases the descriptor even when it reports EINTR, so no retry.
  if (fd_ >= 0) ::close(fd_);
}

namespace detail {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r: returns a pointer to the message (maybe not into buf).
  const char* s = ::strerror_r(err, buf, sizeof buf);
  return s ? std::string(s) : std::string("errno ") + std::to_string(err);
}

Error make_error(int err, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += errno_text(err);
  return Error{err, std::move(msg)};
}

Result<std::string> read_text_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(make_error(errno, "open(" + path + ")"));
  Fd owner(fd);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(make_error(errno, "read(" + path + ")"));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string kernel_object_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() >= BPF_OBJ_NAME_LEN - 1) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.';
    out += ok ? c : '_';
  }
  return out;
}

bool path_exists(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0;
}

}  // namespace detail
}  // namespace bpfscope::bpf
