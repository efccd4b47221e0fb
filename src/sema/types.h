// Types of expressions, map keys and values, and their memory layout.
//
// Layout rule: an integer on its own occupies 8 bytes in memory (map keys,
// map values, event records, variables), sign- or zero-extended; registers
// always hold the 64-bit extended value. Strings on their own occupy their
// declared size N (NUL included) rounded up to 8. Tuples and records are C
// structs, as in bpftrace: each field at its natural alignment with its own
// size (int8 1 byte, string[N] N bytes), the size padded to the largest
// alignment; a tuple on its own occupies that size rounded up to 8. A tuple
// with holes is zeroed before its fields are written, so keys hash alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bpfscope::sema {

enum class TypeKind {
  None,    // no value (statements, void calls)
  Int,     // size 1/2/4/8 and signedness as declared; 8 bytes in memory (size bytes in a tuple)
  Bool,    // comparisons, logical operators, true/false; 8 bytes in memory (1 in a tuple)
  String,  // fixed capacity `size` bytes including the NUL
  Tuple,   // elems, each at offsets[i] (C layout); a record (a=1, b="x") when `names` is set
  Record,  // a kernel struct or union (btf_id) at an address: a base for field access; a variable
           // holds a copy of its `size` bytes
  Inet,    // ntop(): u64 address family, then 16 address bytes; printed as text
  Stack,   // kstack/ustack (user): u64 stack id, u64 pid; size = frame limit
  Symbol,  // ksym/usym (user): u64 address, u64 pid; printed as the symbol name
  Array,   // pton(): `size` elements of elems[0] (uint8), packed; printed [1,2,3]
  Buffer,  // buf(): u64 length, then `size` bytes; printed with \xNN escapes
  MacAddr, // macaddr(): 6 bytes (8 in memory); printed AA:BB:CC:DD:EE:FF
  Timestamp,  // strftime(): u64 index into TypedProgram::strftime_formats, u64 boot-clock ns
  Named,   // strerror(), syscall_name(), signal_name(), cgroup_path(), username: a u64 that user space
           // names from `table` when it prints
};

// The table a Named value is printed from.
enum class NameTable : uint8_t { Errno, Syscall, Signal, CgroupPath, User };

// How a stack prints: bpftrace's `sym+off` lines, perf's `\taddr sym`, bare
// addresses, (user stacks) each frame's ELF build id and file offset, or as
// bcc's tools print them (`    sym` lines, no offsets, no leading newline).
enum class StackMode : uint8_t { Bpftrace, Perf, Raw, BuildId, Bcc };

// Where a pointer-valued integer points, which decides the probe_read helper.
enum class AddrSpace { None, Kernel, User };

struct Type {
  TypeKind kind = TypeKind::None;
  uint32_t size = 0;  // Int: 1, 2, 4 or 8 (the C type's size); String: capacity
  bool is_signed = false;
  bool is_pointer = false;  // Int holding an address (tracepoint `const char *`)
  AddrSpace addr_space = AddrSpace::None;
  uint32_t btf_id = 0;  // Int pointer: the BTF type pointed to (0: unknown); Record: the struct
  uint32_t enum_id = 0;  // Int: the BTF enum whose values it holds (printed by name, 0.22)
  bool user = false;    // Stack, Symbol: user space rather than the kernel
  StackMode stack_mode = StackMode::Bpftrace;  // Stack
  NameTable table = NameTable::Errno;          // Named
  std::vector<Type> elems;
  std::vector<uint32_t> offsets;
  std::vector<std::string> names;  // Tuple: a record's field names, one per elem (empty: a plain tuple)

  static Type none() { return {}; }
  static Type integer(uint32_t size, bool is_signed) {
    Type t;
    t.kind = TypeKind::Int;
    t.size = size;
    t.is_signed = is_signed;
    return t;
  }
  static Type boolean() {
    Type t;
    t.kind = TypeKind::Bool;
    t.size = 1;
    return t;
  }
  static Type string(uint32_t capacity) {
    Type t;
    t.kind = TypeKind::String;
    t.size = capacity;
    return t;
  }
  static Type tuple(std::vector<Type> elems, std::vector<std::string> names = {});
  static Type stack(bool user, uint32_t limit, StackMode mode = StackMode::Bpftrace) {
    Type t;
    t.kind = TypeKind::Stack;
    t.user = user;
    t.size = limit;
    t.stack_mode = mode;
    return t;
  }
  static Type symbol(bool user) {
    Type t;
    t.kind = TypeKind::Symbol;
    t.user = user;
    t.size = 16;
    return t;
  }
  // A pointer-valued integer. `pointee` is what `*p`, `p[i]` and `p + n`
  // see (kept in elems[0]); none() for void and unknown targets.
  static Type pointer(Type pointee, AddrSpace space) {
    Type t = integer(8, false);
    t.is_pointer = true;
    t.addr_space = space;
    if (pointee.kind == TypeKind::Record) t.btf_id = pointee.btf_id;
    if (pointee.kind != TypeKind::None) t.elems.push_back(std::move(pointee));
    return t;
  }
  static Type array(Type elem, uint32_t count) {
    Type t;
    t.kind = TypeKind::Array;
    t.size = count;
    t.elems = {std::move(elem)};
    return t;
  }
  static Type buffer(uint32_t capacity) {
    Type t;
    t.kind = TypeKind::Buffer;
    t.size = capacity;
    return t;
  }
  static Type mac_addr() {
    Type t;
    t.kind = TypeKind::MacAddr;
    t.size = 6;
    return t;
  }
  static Type timestamp() {
    Type t;
    t.kind = TypeKind::Timestamp;
    t.size = 16;
    return t;
  }
  static Type named(NameTable table) {
    Type t;
    t.kind = TypeKind::Named;
    t.size = 8;
    t.table = table;
    return t;
  }
  static Type inet() {
    Type t;
    t.kind = TypeKind::Inet;
    t.size = 24;
    return t;
  }

  bool is_int() const { return kind == TypeKind::Int || kind == TypeKind::Bool; }
  bool is_string() const { return kind == TypeKind::String; }
  bool is_tuple() const { return kind == TypeKind::Tuple; }
  bool is_record() const { return kind == TypeKind::Record; }
  bool is_named_tuple() const { return kind == TypeKind::Tuple && !names.empty(); }
  // A record's field index by name, or -1.
  int field_index(std::string_view field) const;
  // The type a pointer points to, or nullptr (not a pointer, void, unknown).
  const Type* pointee() const { return is_pointer && !elems.empty() ? &elems[0] : nullptr; }
  // Bytes one element occupies in the kernel or user memory a pointer points
  // into: what `p + 1` advances by (1 for void and unknown targets).
  uint32_t pointee_size() const;
  // Bytes in memory that a byte-wise comparison or ntop() may read: strings
  // (tracepoint byte arrays are strings too) and uint8 arrays.
  bool is_bytes() const { return kind == TypeKind::String || (kind == TypeKind::Array && elems[0].size == 1); }

  // Bytes this value occupies in memory (keys, values, events).
  uint32_t mem_size() const;
  // Bytes and alignment of this value as a tuple field (C's sizeof and
  // alignof; sizeof() reports field_size()).
  uint32_t field_size() const;
  uint32_t field_align() const;
  // A tuple whose fields leave bytes of its mem_size() unwritten.
  bool has_holes() const;
  std::string name() const;  // bpftrace's spelling: "uint32", "string[16]", "(int64,string[16])"
};

bool operator==(const Type& a, const Type& b);

// A type both may be stored as (strings widen to the larger capacity, ints of
// two types to int64/uint64); false when they cannot share a slot. Records unify when they
// have the same field names in any order; the result keeps a's order.
bool unify(const Type& a, const Type& b, Type& out);

inline uint32_t align8(uint32_t n) { return (n + 7) & ~7u; }

}  // namespace bpfscope::sema
