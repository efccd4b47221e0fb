// Map declarations (`let @m = lruhash(100);`, bpftrace 0.25). Internal to sema.
#pragma once

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "sema/sema.h"

namespace bpfscope::sema {

// Applies each declaration's kind and size to the map it names, once the maps'
// layouts are known (a declared kind must agree with the per-CPU-ness the
// values imply). Reports bad kinds, sizes, duplicates and conflicts as errors
// and unused declarations as warnings; returns false on errors.
bool apply_map_decls(const lang::Program& program, TypedProgram& out, lang::Diagnostics& diags);

}  // namespace bpfscope::sema
