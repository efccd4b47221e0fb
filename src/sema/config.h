// The script's `config = { key = value; ... }` block (sema-internal).
#pragma once

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "sema/sema.h"

namespace bpfscope::sema {

// Applies the block's settings over `config`, but for the keys the
// environment set (Config::from_environment), which win as in bpftrace. A key
// that is none of bpftrace's configuration options, or a value of the
// wrong kind, is a located error; returns false after one.
bool apply_config(const lang::Program& program, Config& config, lang::Diagnostics& diags);

}  // namespace bpfscope::sema
