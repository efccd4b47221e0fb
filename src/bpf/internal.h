// Helpers shared by the kernel-interface sources (not part of the public API).
#pragma once

#include <string>
#include <string_view>

#include "bpf/bpf.h"

namespace bpfscope::bpf::detail {

// The text of an errno value ("No such file or directory").
std::string errno_text(int err);

// An Error whose message is "WHAT: <errno text>".
Error make_error(int err, std::string_view what);

// Reads a whole file (works for sysfs/tracefs files, whose stat size is 0).
Result<std::string> read_text_file(const std::string& path);

// Kernel object names (programs, maps) accept only [A-Za-z0-9_.] and at most
// 15 characters; anything else makes BPF_PROG_LOAD / BPF_MAP_CREATE fail with
// EINVAL. Replaces other characters with '_' and truncates.
std::string kernel_object_name(std::string_view name);

// Whether a path exists (any file type).
bool path_exists(const char* path);

}  // namespace bpfscope::bpf::detail
