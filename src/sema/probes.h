// Attach point resolution: provider names, wildcard expansion, periods.
// Internal to sema.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lang/diagnostics.h"
#include "sema/sema.h"

namespace bpfscope::sema {

struct ResolvedAttachPoint {
  ProbeKind kind;
  std::vector<AttachTarget> targets;
  ProbeKind mechanism = kind;  // see ProgramUnit::mechanism
  std::string fentry_refused;  // see ProgramUnit::fentry_refused
};

// Resolves one attach point as written. Reports errors (unknown provider,
// unknown tracepoint, bad interval) at loc and returns nullopt. pid is -p's
// process (-1: none): usdt:* searches the files it maps; child_program is
// -c's program, whose files usdt:* searches otherwise. When the point is
// well formed but matches nothing (no such tracepoint, function or
// iterator), `missing`, if given, is set to what was looked for
// ("tracepoint nonsense:nonsense"), for config's missing_probes.
std::optional<ResolvedAttachPoint> resolve_attach_point(std::string_view text, lang::Loc loc,
                                                        lang::Diagnostics& diags, int pid = -1,
                                                        std::string_view child_program = {},
                                                        std::string* missing = nullptr);

// An attach point with its positional parameters replaced by their text, as
// bpftrace does: `$N` outside double quotes takes the rest of its
// ':'-separated segment up to a quote (interval:s:$1, uprobe:$1:main,
// tracepoint:syscalls:sys_enter_$1, kprobe:$1"_x"); an unset one is empty.
// The error says what is wrong with a `$` that does not name a parameter.
// `getopt("NAME")` outside quotes takes the value of --NAME (a bpfscope
// extension, for tools: profile:hz:getopt("frequency")); its name is added
// to `used`, and an option not given is an error.
std::expected<std::string, std::string> expand_positionals(
    std::string_view text, const std::vector<std::string>& params,
    const std::map<std::string, std::optional<std::string>>& named = {}, std::set<std::string>* used = nullptr);

// x86-64 register names (USDT argument specs, reg()) as offsets in struct
// pt_regs: "rsp", "esp", "sp" and "spl" are 152.
std::optional<int32_t> pt_regs_offset(std::string_view reg);

}  // namespace bpfscope::sema
