// Names user space gives to integers sent by probes: strerror(),
// syscall_name(), signal_name() and cgroup_path() values. Internal to the
// runtime.
#pragma once

#include <cstdint>
#include <string>

#include "sema/types.h"

namespace bpfscope::runtime {

// The text of value v in table t.
std::string name_of(sema::NameTable t, uint64_t v);

// x86-64 system call name of nr ("read" for 0), or "" when unknown.
std::string_view syscall_name(int64_t nr);

// strsignal(3)'s text: "Killed" for 9, "Real-time signal 1" for 35,
// "Unknown signal 0"; "N/A" outside 0..64.
std::string signal_name(int64_t sig);

// The path of cgroup v2 id below the cgroup2 mount ("/" for the root,
// "/a/b"), or "" when no cgroup has that id.
std::string cgroup_path(uint64_t id);

}  // namespace bpfscope::runtime
