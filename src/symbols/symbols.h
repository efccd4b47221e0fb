// Symbols: kernel symbols from /proc/kallsyms, ELF symbol tables of binaries
// and libraries (uprobe offsets, user stacks), library name resolution
// through ld.so.cache. Depends on no other bpfscope stage.
#pragma once

namespace bpfscope::symbols {}  // namespace bpfscope::symbols
