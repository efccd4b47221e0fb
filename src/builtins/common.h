// Internal to builtins: what the entries' rules use, the checker's and the
// lowerer's classes.
#pragma once

#include <fmt/format.h>

#include "builtins/builtins.h"
#include "ir/lowerer.h"
#include "sema/checker.h"

namespace bpfscope::builtins {

using ir::AluOp;
using ir::BlockId;
using ir::kMaxStackFrames;
using ir::kNoVreg;
using ir::VregId;
using lang::Expr;
using lang::ExprId;
using lang::ExprKind;
using sema::ActionKind;
using sema::AddrSpace;
using sema::MapInfo;
using sema::NameTable;
using sema::ProbeKind;
using sema::pt_regs_offset;
using sema::StackMode;
using sema::Type;
using sema::TypedProgram;
using sema::TypeKind;
using sema::UaddrSite;
using sema::detail::parse_int_param;
using Arg = Lowerer::Arg;

// A value a helper returns, of type t.
inline Val helper_value(Lowerer& l, int helper, const Type& t) { return l.int_val(l.b_.call(helper, {}), t); }

}  // namespace bpfscope::builtins
