// Packed relative relocations. A PIE's 5,000 R_X86_64_RELATIVE entries (one
// per pointer in a vtable or a table of names) took 120 kB of .rela.dyn,
// which ld.so reads at every start; as DT_RELR (ld.lld
// --pack-dyn-relocs=relr) they take about 1 kB. glibc (2.36 and later) loads
// a binary with DT_RELR only if it requires the version GLIBC_ABI_DT_RELR,
// which GNU ld's -z pack-relative-relocs adds and ld.lld 14 does not: this
// reference to the symbol of that name makes the link record it. Linked only
// where the build checked that such a binary runs (CMakeLists.txt).
extern "C" const char GLIBC_ABI_DT_RELR[];

[[gnu::used, gnu::retain]] const void* const bpfscope_dt_relr_reference = GLIBC_ABI_DT_RELR;
