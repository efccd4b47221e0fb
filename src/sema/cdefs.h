// The script's C definitions (REFERENCE 1.2): `struct`, `union` and `enum`
// written before the probes. They are parsed here and added to the BTF that
// sema reads (bpf::Btf::add_types, a split BTF on top of the kernel's), so
// casts, `->`, `.`, sizeof, offsetof and enum constants treat them exactly as
// kernel types; by name they shadow kernel types.
#pragma once

#include "bpf/btf.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace bpfscope::sema {

// Parses program.c_definitions, lays them out by the C rules of x86-64
// (alignment, padding, bitfields, packed and aligned attributes) and adds
// them to btf. Errors are located in the definitions; returns false when
// any was reported (nothing is added then).
//
// The subset: struct/union/enum definitions, nested and anonymous members,
// the C integer types (`unsigned long`, `char`, `_Bool`, ...) and common
// typedef names (u8..u64, __u32, s64, uint32_t, size_t, pid_t, ...), kernel
// types by name (`struct sock *`, `sector_t`), pointers, fixed and flexible
// arrays, function pointers, bitfields, enumerator values as constant
// expressions.
bool add_c_definitions(const lang::Program& program, bpf::Btf& btf, lang::Diagnostics& diags);

}  // namespace bpfscope::sema
