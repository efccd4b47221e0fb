// Map creation through libbpf's bpf_map_create.
#include <fmt/format.h>

#include "bpf/bpf.h"
#include "bpf/internal.h"
#include "bpf/libbpf_bpf.h"

namespace bpfscope::bpf {

namespace {

std::string map_type_name(bpf_map_type type) {
  const char* s = libbpf_bpf_map_type_str(type);
  return s ? std::string(s) : fmt::format("type {}", static_cast<int>(type));
}

}  // namespace

Result<Fd> create_map(bpf_map_type type, std::string_view name, uint32_t key_size, uint32_t value_size,
                      uint32_t max_entries, uint32_t flags) {
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
  const std::string kname = detail::kernel_object_name(name);
  int fd = bpf_map_create(type, kname.empty() ? nullptr : kname.c_str(), key_size, value_size, max_entries, &opts);
  if (fd < 0) {
    int err = -fd;
    return std::unexpected(detail::make_error(
        err, fmt::format("bpf_map_create({} map '{}', key_size {}, value_size {}, max_entries {}, flags {:#x})",
                         map_type_name(type), name, key_size, value_size, max_entries, flags)));
  }
  return Fd(fd);
}

}  // namespace bpfscope::bpf
