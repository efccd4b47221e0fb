#include "sema/types.h"

#include <fmt/format.h>

#include <algorithm>

#include "sema/sema.h"

namespace bpfscope::sema {

namespace {

// An enum value (printed by name) or a struct (printed field by field):
// user space reads the BTF to print it.
bool has_enum(const Type& t) {
  if (t.enum_id || t.kind == TypeKind::Record) return true;
  for (const auto& e : t.elems)
    if (!t.is_pointer && has_enum(e)) return true;
  return false;
}

}  // namespace

bool prints_enums(const TypedProgram& program) {
  for (const auto& a : program.actions)
    for (const auto& t : a.args)
      if (has_enum(t)) return true;
  for (const auto& m : program.maps)
    if (has_enum(m.key) || has_enum(m.value)) return true;
  return false;
}

Type Type::tuple(std::vector<Type> elems, std::vector<std::string> names) {
  Type t;
  t.kind = TypeKind::Tuple;
  t.names = std::move(names);
  uint32_t off = 0, align = 1;
  for (const auto& e : elems) {
    const uint32_t a = e.field_align();
    off = (off + a - 1) / a * a;
    t.offsets.push_back(off);
    off += e.field_size();
    align = std::max(align, a);
  }
  t.size = (off + align - 1) / align * align;
  t.elems = std::move(elems);
  return t;
}

uint32_t Type::field_size() const {
  switch (kind) {
    case TypeKind::Int: return is_pointer ? 8 : size;
    case TypeKind::Bool: return 1;
    case TypeKind::String:
    case TypeKind::Tuple:
    case TypeKind::Record: return size;
    case TypeKind::Array: return size * elems[0].size;
    default: return mem_size();
  }
}

uint32_t Type::field_align() const {
  switch (kind) {
    case TypeKind::Int:
    case TypeKind::Bool: return field_size();
    case TypeKind::String: return 1;
    case TypeKind::Array: return std::max<uint32_t>(elems[0].size, 1);
    case TypeKind::Tuple: {
      uint32_t a = 1;
      for (const auto& e : elems) a = std::max(a, e.field_align());
      return a;
    }
    default: return 8;  // records (their BTF alignment is not kept), and bpfscope's 8-byte words
  }
}

bool Type::has_holes() const {
  if (kind != TypeKind::Tuple) return false;
  uint32_t used = 0;
  for (const auto& e : elems) {
    if (e.has_holes()) return true;
    used += e.field_size();
  }
  return used != mem_size();
}

uint32_t Type::mem_size() const {
  switch (kind) {
    case TypeKind::None: return 0;
    case TypeKind::Int:
    case TypeKind::Bool: return 8;
    case TypeKind::String: return align8(size);
    case TypeKind::Tuple: return align8(size);
    case TypeKind::Record: return align8(size);  // a struct copied into a variable
    case TypeKind::Inet: return 24;
    case TypeKind::Stack:
    case TypeKind::Symbol: return 16;
    case TypeKind::Array: return align8(size * elems[0].size);
    case TypeKind::Buffer: return 8 + align8(size);
    case TypeKind::MacAddr:
    case TypeKind::Named: return 8;
    case TypeKind::Timestamp: return 16;
  }
  std::unreachable();
}

int Type::field_index(std::string_view field) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == field) return static_cast<int>(i);
  return -1;
}

uint32_t Type::pointee_size() const {
  const Type* p = pointee();
  if (!p) return 1;
  return p->is_pointer ? 8 : p->size ? p->size : 1;
}

std::string Type::name() const {
  switch (kind) {
    case TypeKind::None: return "none";
    case TypeKind::Bool: return "bool";
    case TypeKind::Int:
      if (is_pointer) {
        if (!pointee()) return "void *";
        return pointee()->name() + (pointee()->is_pointer ? "*" : " *");
      }
      return fmt::format("{}int{}", is_signed ? "" : "u", size * 8);
    case TypeKind::String: return fmt::format("string[{}]", size);
    case TypeKind::Record: return fmt::format("struct#{}", btf_id);
    case TypeKind::Inet: return "inet";
    case TypeKind::Stack: return user ? "ustack" : "kstack";
    case TypeKind::Symbol: return user ? "usym" : "ksym";
    case TypeKind::Array: return fmt::format("{}[{}]", elems[0].name(), size);
    case TypeKind::Buffer: return fmt::format("buffer[{}]", size);
    case TypeKind::MacAddr: return "mac_address";
    case TypeKind::Timestamp: return "timestamp";
    case TypeKind::Named:
      switch (table) {
        case NameTable::Errno: return "strerror_t";
        case NameTable::Syscall: return "syscall_name_t";
        case NameTable::Signal: return "signal_name_t";
        case NameTable::CgroupPath: return "cgroup_path_t";
        case NameTable::User: return "username";
      }
      std::unreachable();
    case TypeKind::Tuple: {
      // bpftrace's spelling: "(int8,string[3])", "record { .a = int8, .b = string[2] }".
      if (names.empty()) {
        std::string s = "(";
        for (size_t i = 0; i < elems.size(); ++i) s += (i ? "," : "") + elems[i].name();
        return s + ")";
      }
      std::string s = "record { ";
      for (size_t i = 0; i < elems.size(); ++i)
        s += fmt::format("{}.{} = {}", i ? ", " : "", names[i], elems[i].name());
      return s + " }";
    }
  }
  std::unreachable();
}

bool operator==(const Type& a, const Type& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case TypeKind::None:
    case TypeKind::Bool: return true;
    case TypeKind::Int: return a.size == b.size && a.is_signed == b.is_signed;
    case TypeKind::String: return a.size == b.size;
    case TypeKind::Tuple: return a.elems == b.elems && a.names == b.names;
    case TypeKind::Record: return a.btf_id == b.btf_id;
    case TypeKind::Inet:
    case TypeKind::MacAddr:
    case TypeKind::Timestamp: return true;
    case TypeKind::Array: return a.size == b.size && a.elems == b.elems;
    case TypeKind::Buffer: return a.size == b.size;
    case TypeKind::Stack: return a.user == b.user && a.stack_mode == b.stack_mode;
    case TypeKind::Symbol: return a.user == b.user;
    case TypeKind::Named: return a.table == b.table;
  }
  std::unreachable();
}

bool unify(const Type& a, const Type& b, Type& out) {
  if (a.is_int() && b.is_int()) {
    if (a.is_pointer && b.is_pointer && a.btf_id == b.btf_id && a.elems == b.elems && a.addr_space == b.addr_space) {
      out = a;
      return true;
    }
    if (a.kind == TypeKind::Bool && b.kind == TypeKind::Bool) {
      out = a;
      return true;
    }
    // One integer type stays itself (a tuple of int8 keeps its layout).
    if (a == b && !a.is_pointer && !b.is_pointer && a.enum_id == b.enum_id) {
      out = a;
      return true;
    }
    out = Type::integer(8, a.is_signed || b.is_signed);
    // Values of one enum keep printing by name.
    if (a.enum_id == b.enum_id) out.enum_id = a.enum_id;
    return true;
  }
  if (a.kind != b.kind) return false;
  if (a.is_string()) {
    out = Type::string(std::max(a.size, b.size));
    return true;
  }
  if (a.kind == TypeKind::Buffer) {
    out = Type::buffer(std::max(a.size, b.size));
    return true;
  }
  if (a.kind == TypeKind::Array && !(a == b)) return false;
  if (a.is_tuple()) {
    if (a.elems.size() != b.elems.size() || a.names.empty() != b.names.empty()) return false;
    std::vector<Type> elems;
    for (size_t i = 0; i < a.elems.size(); ++i) {
      // A record's fields pair up by name.
      const int j = a.names.empty() ? static_cast<int>(i) : b.field_index(a.names[i]);
      Type e;
      if (j < 0 || !unify(a.elems[i], b.elems[j], e)) return false;
      elems.push_back(e);
    }
    out = Type::tuple(std::move(elems), a.names);
    return true;
  }
  out = a;
  return true;
}

}  // namespace bpfscope::sema
