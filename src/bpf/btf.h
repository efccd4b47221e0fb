// Kernel BTF: struct layouts, enum constants, tp_btf argument types and
// function ids, read straight from the running kernel (no CO-RE, since
// bpfscope compiles on the machine it traces). /sys/kernel/btf/vmlinux is
// mapped and read in place; libbpf's struct btf is used for files given by
// path and for the script's own types (split BTF).
//
// A Btf object is cheap to create: nothing is read until the first lookup
// (or an explicit load()). The caller owns it; there is no global instance.
// Name lookups: the load notes the ids of the kinds looked up by name
// (structs/unions; enums and enumerators; typedefs and scalars). A group's
// first 16 lookups scan its types (a script names a few, and a scan that
// stops at the first match costs microseconds); later ones use flat hash
// tables of type ids, built then over the group's types. Functions are found
// by a linear scan (~0.5 ms). Measured on 6.18 (126,573 types): load ~1.4 ms
// and +0.7 MB RSS (the type offsets); each index ~0.3-1 ms, all together
// +0.5 MB; an indexed lookup ~0.15 us.
//
// Include gotcha: with -I src, `#include <bpf/btf.h>` finds this file, not
// libbpf's. So this header pulls in libbpf's <bpf/btf.h> with #include_next
// (as bpf/libbpf_bpf.h does for <bpf/bpf.h>): including either spelling gives
// both APIs. Include it through the -I src search path ("bpf/btf.h" from
// src/<dir>/ or tests/), which #include_next needs.
#pragma once

#include_next <bpf/btf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/bpf.h"

namespace bpfscope::bpf {

// One type, with typedefs and const/volatile/restrict/type tags resolved away.
struct BtfType {
  enum class Kind { Void, Int, Float, Pointer, Array, Struct, Union, Enum, Fwd, Func, FuncProto, Unknown };
  Kind kind = Kind::Void;
  uint32_t id = 0;        // the resolved id (0 for void)
  uint32_t size = 0;      // bytes: Int/Float/Enum/Struct/Union size, 8 for Pointer,
                          // count * element size for Array, 0 for Void/Func/FuncProto/Fwd
  bool is_signed = false; // Int: BTF_INT_SIGNED; Enum: signed values (kflag)
  std::string name;       // "sock" for struct sock, "unsigned int", "" when anonymous
  uint32_t target = 0;    // Pointer: pointee; Array: element; Func: its FuncProto;
                          // FuncProto: return type (all unresolved ids; 0 = void)
  uint32_t count = 0;     // Array: elements; Struct/Union: members; Enum: values;
                          // FuncProto: parameters
};

// A struct/union member. For a member found inside anonymous nested
// structs/unions, the offset is relative to the outer struct.
struct BtfMember {
  std::string name;
  uint32_t bit_offset = 0;     // from the start of the struct
  uint32_t bitfield_size = 0;  // bits; 0 if not a bitfield
  uint32_t type_id = 0;        // the member's declared (unresolved) type
};

// A type a script defines (C definitions), for Btf::add_types. References
// (target, member types) are BTF ids: kernel ids, or ids of types added by
// the same call (next_id() + index into the vector, forward references allowed).
struct BtfNewType {
  enum class Kind { Int, Pointer, Array, Struct, Union, Enum };
  Kind kind = Kind::Int;
  std::string name;        // "" when anonymous
  uint32_t size = 0;       // bytes: Int, Struct, Union, Enum
  bool is_signed = false;  // Int, Enum
  bool is_bool = false;    // Int: _Bool
  uint32_t target = 0;     // Pointer: pointee (0 = void); Array: element
  uint32_t count = 0;      // Array: elements
  std::vector<BtfMember> members;                        // Struct, Union (bit offsets laid out by the caller)
  std::vector<std::pair<std::string, int64_t>> values;  // Enum
};

// A function (or tp_btf) parameter.
struct BtfParam {
  std::string name;      // from BTF, or "arg0", "arg1", ... when BTF has none
  uint32_t type_id = 0;  // declared (unresolved) type
};

class Btf {
 public:
  // Kernel BTF (/sys/kernel/btf/vmlinux, mapped and read in place), loaded lazily.
  Btf();
  // A raw BTF or ELF file (btf__parse), loaded lazily. For tests.
  explicit Btf(std::string path);
  Btf(Btf&&) noexcept;
  Btf& operator=(Btf&&) noexcept;
  Btf(const Btf&) = delete;
  Btf& operator=(const Btf&) = delete;
  ~Btf();

  // Loads now if not yet tried. The result (and the error) is cached: a failed
  // load is not retried, and every lookup then gives nullopt.
  Result<void> load() const;
  bool loaded() const;        // whether the BTF has been read (successfully)
  uint32_t type_count() const;  // ids are 1..type_count()-1; 0 is void

  // Skips typedefs, const/volatile/restrict and type tags. 0 stays 0 (void).
  uint32_t resolve(uint32_t id) const;
  // Describes resolve(id). nullopt for an id out of range.
  std::optional<BtfType> type(uint32_t id) const;
  // The size in bytes of a type (sizeof); nullopt for void, functions, out of range.
  std::optional<uint32_t> size_of(uint32_t id) const;
  // C-ish text for the declared type: "struct sock *", "const struct sock *",
  // "unsigned int", "char[16]", "u32" (typedef names are kept).
  std::string type_name(uint32_t id) const;

  // Script-defined types (C definitions) go into a split BTF on top of the
  // kernel's (a standalone one when kernel BTF is unavailable), so every
  // lookup below sees them; by name they shadow kernel types, enums and
  // enumerators. The id the next added type gets:
  uint32_t next_id() const;
  // Adds `types` in order: types[i] gets id next_id() + i. Errors are
  // libbpf's (an invalid name or id), which the caller's checks make rare.
  Result<void> add_types(const std::vector<BtfNewType>& types);

  // A struct or union by name: "sock", "struct sock", "union bpf_attr".
  // Without a keyword, a struct is preferred over a union of the same name.
  std::optional<uint32_t> find_struct(std::string_view name) const;
  // Any named type: "struct X", "union X", "enum X", or a bare name, tried as
  // typedef, int/float, struct, union, then enum ("u32", "unsigned int", "pid_t").
  std::optional<uint32_t> find_type(std::string_view name) const;
  // A member of a struct/union (struct_id may be a typedef/const of one),
  // searching into anonymous nested structs/unions. Named nested structs are
  // not searched: sock's skc_dport is sock.__sk_common then sock_common.skc_dport.
  std::optional<BtfMember> find_member(uint32_t struct_id, std::string_view name) const;
  // All members in order, with anonymous nested structs/unions flattened.
  std::vector<BtfMember> members(uint32_t struct_id) const;
  // An enumerator of any enum (ENUM or ENUM64): "TCP_ESTABLISHED" -> 1.
  std::optional<int64_t> enum_value(std::string_view name) const;
  // The enum type declaring an enumerator.
  std::optional<uint32_t> enum_of(std::string_view name) const;
  // The name of `value` in enum `enum_id` (ENUM or ENUM64); nullopt when it
  // has none (or the id is not an enum).
  std::optional<std::string> enumerator_name(uint32_t enum_id, int64_t value) const;
  // A kernel variable's BTF_KIND_VAR id (per-CPU variables: percpu_kaddr).
  std::optional<uint32_t> find_var(std::string_view name) const;
  // A BTF_KIND_FUNC id (for fentry/fexit attach_btf_id).
  std::optional<uint32_t> find_func(std::string_view name) const;
  // A function's parameters (from its FUNC id), with names.
  std::optional<std::vector<BtfParam>> func_params(uint32_t func_id) const;
  // A function's declared return type (0: void); nullopt if not a FUNC.
  std::optional<uint32_t> func_return(uint32_t func_id) const;
  // Every FUNC whose name matches a glob (glob_match), as {name, id}, sorted
  // by name, each name once (-l fentry:*, iter:*).
  std::vector<std::pair<std::string, uint32_t>> funcs_matching(std::string_view glob) const;
  // tp_btf/raw tracepoint arguments of an event ("sched_switch", or
  // "sched:sched_switch"): the btf_trace_<event> prototype without its leading
  // `void *`. Names come from the __bpf_trace_<event> function when the kernel
  // has it (the typedef's own prototype has no names), else arg0, arg1, ...
  std::optional<std::vector<BtfParam>> tracepoint_args(std::string_view event) const;
  // The id of the btf_trace_<event> typedef: what tp_btf's attach_btf_id needs.
  std::optional<uint32_t> tracepoint_btf_id(std::string_view event) const;

 private:
  struct State;
  State& state() const;  // loads on first use
  std::string path_;     // empty: vmlinux
  mutable std::unique_ptr<State> st_;
};

// A tracepoint's record layout from the kernel's BTF (struct
// trace_event_raw_<event>) for events whose format file cannot be read.
// Fields as read_tracepoint_format gives them ("__data_loc_x" members become
// data_loc fields named x); the id is left 0. ENOENT when BTF has no such
// struct (syscall events share one generic struct and have none).
Result<TracepointFormat> tracepoint_format_from_btf(const Btf& btf, std::string_view category,
                                                   std::string_view event);

}  // namespace bpfscope::bpf
