// The type checker's kernel types: BTF structs and members, pointers and
// casts, tracepoint and raw tracepoint arguments, and the C constants BTF
// lacks.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include <ranges>

#include "builtins/builtins.h"
#include "sema/checker.h"

namespace bpfscope::sema::detail {

// The type of a tracepoint field as bpfscope sees it.
Type field_type(const bpf::TracepointField& f, std::string_view category, uint32_t max_strlen) {
  if (f.data_loc) return Type::string(max_strlen);
  // char[N] is a string; other byte arrays (__u8 saddr[4], daddr_v6[16])
  // are kept as N raw bytes too, for ntop() and comparisons.
  bool byte_elems = f.array_len > 0 && f.size == f.array_len;
  if (f.array_len > 0 && (f.is_char() || byte_elems)) return Type::string(f.array_len);
  // Syscall formats store every argument in 8 bytes and say signed:0; the C
  // type name gives the real width and signedness (an `int dfd` of -100).
  struct CType {
    std::string_view name;
    uint32_t size;
    bool is_signed;
  };
  constexpr CType kCTypes[] = {
      {"int", 4, true},          {"unsigned int", 4, false}, {"long", 8, true},          {"unsigned long", 8, false},
      {"short", 2, true},        {"unsigned short", 2, false}, {"s8", 1, true},          {"u8", 1, false},
      {"s16", 2, true},          {"u16", 2, false},           {"s32", 4, true},          {"u32", 4, false},
      {"s64", 8, true},          {"u64", 8, false},           {"pid_t", 4, true},        {"uid_t", 4, false},
      {"gid_t", 4, false},       {"size_t", 8, false},        {"ssize_t", 8, true},      {"off_t", 8, true},
      {"loff_t", 8, true},       {"clockid_t", 4, true},      {"key_serial_t", 4, true}, {"umode_t", 2, false},
      {"__s32", 4, true},        {"__u32", 4, false},         {"__s64", 8, true},        {"__u64", 8, false},
      {"bool", 1, false},        {"timer_t", 4, true},        {"qid_t", 4, false},       {"rwf_t", 4, true},
  };
  auto c_type = [&](std::string_view name) -> const CType* {
    for (const auto& c : kCTypes)
      if (c.name == name) return &c;
    return nullptr;
  };
  // Pointers: "const char *const *" is a pointer to a pointer to int8.
  if (size_t star = f.type.find('*'); star != std::string::npos) {
    std::string base;
    for (std::string_view word : std::views::split(std::string_view(f.type).substr(0, star), ' ') |
                                     std::views::transform([](auto r) { return std::string_view(r.begin(), r.end()); }))
      if (!word.empty() && word != "const" && word != "volatile") base += (base.empty() ? "" : " ") + std::string(word);
    Type t = Type::none();
    if (base == "char" || base == "signed char") t = Type::integer(1, true);
    else if (base == "unsigned char") t = Type::integer(1, false);
    else if (const CType* c = c_type(base)) t = Type::integer(c->size, c->is_signed);
    AddrSpace space = category == "syscalls" ? AddrSpace::User : AddrSpace::Kernel;
    for (char ch : std::string_view(f.type).substr(star))
      if (ch == '*') t = Type::pointer(std::move(t), space);
    return t;
  }
  std::string_view type = f.type;
  if (type.rfind("const ", 0) == 0) type.remove_prefix(6);
  uint32_t size = f.size == 1 || f.size == 2 || f.size == 4 ? f.size : 8;
  bool is_signed = f.is_signed;
  if (const CType* c = c_type(type); c && c->size <= f.size) {
    size = c->size;
    is_signed = c->is_signed;
  }
  return Type::integer(size, is_signed);
}

// Constants from C headers that kernel BTF does not carry (they are
// #defines there). Scripts use them without #include; a #define wins.
struct NamedConstant {
  std::string_view name;
  int64_t value;
};
constexpr NamedConstant kKnownConstants[] = {
    {"AF_UNSPEC", 0},     {"AF_UNIX", 1},         {"AF_LOCAL", 1},      {"AF_INET", 2},
    {"AF_INET6", 10},     {"AF_NETLINK", 16},     {"AF_PACKET", 17},    {"SOCK_STREAM", 1},
    {"SOCK_DGRAM", 2},    {"SOCK_RAW", 3},        {"SOCK_SEQPACKET", 5}, {"ETH_P_IP", 0x0800},
    {"ETH_P_ARP", 0x0806}, {"ETH_P_IPV6", 0x86DD}, {"ETH_P_8021Q", 0x8100}, {"ICMP_ECHOREPLY", 0},
    {"ICMP_DEST_UNREACH", 3}, {"ICMP_ECHO", 8},   {"ICMP_TIME_EXCEEDED", 11}, {"ICMPV6_ECHO_REQUEST", 128},
    {"ICMPV6_ECHO_REPLY", 129}, {"TCPHDR_FIN", 0x01}, {"TCPHDR_SYN", 0x02}, {"TCPHDR_RST", 0x04},
    {"TCPHDR_PSH", 0x08}, {"TCPHDR_ACK", 0x10},   {"TCPHDR_URG", 0x20}, {"TCPHDR_ECE", 0x40},
    {"TCPHDR_CWR", 0x80}, {"INET_ECN_MASK", 3},   {"INET_ECN_CE", 3},   {"O_RDONLY", 0},
    {"O_WRONLY", 1},      {"O_RDWR", 2},          {"O_CREAT", 0100},    {"O_TRUNC", 01000},
    {"O_APPEND", 02000},  {"O_EXCL", 0200},       {"O_NONBLOCK", 04000}, {"O_DIRECTORY", 0200000},
    {"O_CLOEXEC", 02000000}, {"TASK_RUNNING", 0}, {"TASK_INTERRUPTIBLE", 1}, {"TASK_UNINTERRUPTIBLE", 2},
    {"__TASK_STOPPED", 4}, {"__TASK_TRACED", 8},  {"EXIT_DEAD", 16},    {"EXIT_ZOMBIE", 32},
    {"TASK_PARKED", 0x40}, {"TASK_DEAD", 0x80},   {"TASK_WAKEKILL", 0x100}, {"TASK_WAKING", 0x200},
    {"TASK_NOLOAD", 0x400}, {"TASK_NEW", 0x800},  {"IFNAMSIZ", 16},     {"TASK_COMM_LEN", 16},
    {"MSG_PEEK", 2},      {"MSG_DONTWAIT", 0x40}, {"MSG_WAITALL", 0x100}, {"MSG_NOSIGNAL", 0x4000},
    {"EWOULDBLOCK", 11},  {"EDEADLOCK", 35},     {"ENOTSUP", 95},      {"ERESTARTSYS", 512}, {"ERESTARTNOINTR", 513}, {"ERESTARTNOHAND", 514}, {"ENOIOCTLCMD", 515},
};

std::optional<int64_t> known_constant(std::string_view name) {
  for (const auto& c : kKnownConstants)
    if (c.name == name) return c.value;
  // errno names and signal names, as the C library spells them.
  if (name.starts_with("E"))
    for (int i = 1; i < 256; ++i)
      if (const char* n = strerrorname_np(i); n && name == n) return i;
  if (name.starts_with("SIG"))
    for (int i = 1; i < 32; ++i)
      if (const char* n = sigabbrev_np(i); n && name.substr(3) == n) return i;
  return std::nullopt;
}

const bpf::TracepointField* Checker::find_field(const bpf::TracepointFormat& f, std::string_view name) {
  for (const auto& field : f.fields)
    if (field.name == name) return &field;
  return nullptr;
}

Type Checker::args_field(const Expr& e) {
  target_specific_ = true;
  std::optional<Type> result;
  for (const auto& point : *points_) {
    if (point.kind == ProbeKind::RawTracepoint || point.kind == ProbeKind::Fentry ||
        point.kind == ProbeKind::Fexit) {
      // Typed from the kernel's BTF prototype of the event or function.
      for (const auto& t : point.targets) {
        auto params = btf_args(*out_.btf, point.kind, t);
        const bpf::BtfParam* param = nullptr;
        if (params)
          for (const auto& p : *params)
            if (p.name == e.name) param = &p;
        if (!param) {
          if (point.kind == ProbeKind::RawTracepoint)
            error(e.loc, fmt::format("Can't find argument '{}' of raw tracepoint {} in the kernel's BTF", e.name,
                                     t.format.event));
          else
            error(e.loc, fmt::format("Can't find argument '{}' of function {} in the kernel's BTF", e.name, t.func));
          return Type::none();
        }
        // fentry through its kprobe fallback reads the argument registers.
        if ((point.mechanism == ProbeKind::Kprobe || point.mechanism == ProbeKind::Kretprobe) &&
            param - params->data() >= 6) {
          error(e.loc, fmt::format("argument '{}' of {} is passed on the stack, which the kprobe this fentry "
                                   "probe runs as here cannot read",
                                   e.name, t.func));
          return Type::none();
        }
        auto ft = btf_value_type(param->type_id);
        if (!ft || ft->is_string() || ft->is_record()) {
          error(e.loc, fmt::format("argument '{}' has a type bpfscope cannot read yet: {}", e.name,
                                   out_.btf->type_name(param->type_id)));
          return Type::none();
        }
        Type u;
        if (!result)
          result = *ft;
        else if (!unify(*result, *ft, u)) {
          error(e.loc, fmt::format("argument '{}' has different types in the attach points of this probe", e.name));
          return Type::none();
        }
      }
      continue;
    }
    if (point.kind != ProbeKind::Tracepoint) {
      error(e.loc, "The args builtin can only be used with tracepoint, rawtracepoint and fentry/fexit probes");
      return Type::none();
    }
    for (const auto& t : point.targets) {
      const auto* field = find_field(t.format, e.name);
      if (!field) {
        error(e.loc, fmt::format("Can't find field '{}' in tracepoint {}:{}", e.name, t.format.category,
                                 t.format.event));
        return Type::none();
      }
      Type ft = field_type(*field, t.format.category, out_.config.max_strlen);
      struct_pointee(*field, ft);
      if (!result) {
        result = ft;
      } else {
        Type u;
        if (!unify(*result, ft, u)) {
          error(e.loc, fmt::format("field '{}' has different types in the attach points of this probe", e.name));
          return Type::none();
        }
        if (!(*result == ft)) result = u;
      }
    }
  }
  return result.value_or(Type::none());
}

// A tracepoint field `struct sockaddr *uservaddr` points to the BTF struct.
void Checker::struct_pointee(const bpf::TracepointField& f, Type& t) {
  // An `enum skb_drop_reason reason` field prints by name.
  if (t.kind == TypeKind::Int && !t.is_pointer && f.type.starts_with("enum ")) {
    if (auto id = out_.btf->find_type(f.type)) t.enum_id = *id;
    return;
  }
  if (!t.is_pointer || t.pointee()) return;
  std::string_view type = f.type;
  if (type.starts_with("const ")) type.remove_prefix(6);
  if (!type.starts_with("struct ") || std::count(type.begin(), type.end(), '*') != 1) return;
  std::string_view name = type.substr(0, type.find('*'));
  while (name.ends_with(' ')) name.remove_suffix(1);
  auto sid = out_.btf->find_struct(name);
  if (!sid) return;
  AddrSpace space = t.addr_space;
  t = Type::pointer(record(*sid), space);
}

// What `*p` and `p[i]` read: the pointee of a pointer.
Type Checker::element_of(const Type& p, lang::Loc loc) {
  if (p.kind == TypeKind::None) return Type::none();
  // An integer used as an address reads an integer of its own size, as
  // bpftrace does (`*kaddr("sym")`).
  if (p.kind == TypeKind::Int && !p.is_pointer) return Type::integer(p.size, p.is_signed);
  if (!p.is_pointer) {
    error(loc, fmt::format("Can only dereference pointers, not {}", p.name()));
    return Type::none();
  }
  const Type* elem = p.pointee();
  if (!elem) {
    error(loc, fmt::format("Can not dereference a pointer to an unknown type ({}): cast it first, e.g. "
                           "*(uint64 *)p",
                           p.name()));
    return Type::none();
  }
  Type t = *elem;
  // The element lives where the pointer points.
  t.addr_space = p.addr_space;
  retarget(t, p.addr_space);
  return t;
}

// `&s->f`: the address of a struct member, without reading it. `&$x`: the
// address of a variable's copy in scratch memory (0.26).
Type Checker::address_of(const Expr& e) {
  const Expr& target = ast_.expr(e.args[0]);
  const Type& t = out_.expr_types[e.args[0]];
  if (target.kind == ExprKind::Variable && out_.var_of[e.args[0]] >= 0 && t.kind != TypeKind::None) {
    out_.addressed_vars.insert(out_.var_of[e.args[0]]);
    return Type::pointer(t, AddrSpace::Kernel);
  }
  bool member = false;
  const builtins::Function* base_fn = target.kind == ExprKind::Field ? out_.function_of[target.args[0]] : nullptr;
  if (target.kind == ExprKind::Field && !(base_fn && base_fn->fields)) {
    const Type& base = out_.expr_types[target.args[0]];
    member = base.is_record() || (base.is_pointer && base.btf_id != 0);
  }
  if (!member || t.kind == TypeKind::None) {
    if (t.kind != TypeKind::None)
      error(e.loc, "& takes the address of a variable or a kernel struct member only, as in &$x or "
                   "&$sk->sk_receive_queue");
    return Type::none();
  }
  if (out_.field_of[e.args[0]].bits) {
    error(e.loc, "cannot take the address of a bitfield");
    return Type::none();
  }
  Type elem = t.is_string() ? Type::integer(1, true) : t;
  return Type::pointer(std::move(elem), AddrSpace::Kernel);
}

// `struct NAME *` as a type.
Type Checker::pointer_to(std::string_view name, lang::Loc loc) {
  auto sid = out_.btf->find_struct(name);
  if (!sid) {
    if (auto err = out_.btf->load(); !err)
      error(loc, fmt::format("Cannot resolve struct {}: kernel BTF is unavailable ({})", name, err.error().message));
    else
      error(loc, fmt::format("Cannot resolve unknown type \"{}{}\"",
                             name.starts_with("struct ") || name.starts_with("union ") ? "" : "struct ", name));
    return Type::none();
  }
  return Type::pointer(record(*sid), AddrSpace::Kernel);
}

Type Checker::record(uint32_t btf_id) {
  Type t;
  t.kind = TypeKind::Record;
  t.btf_id = btf_id;
  t.size = out_.btf->size_of(btf_id).value_or(0);
  return t;
}

// The type of a BTF member as a bpfscope value.
std::optional<Type> Checker::btf_value_type(uint32_t type_id) {
  auto bt = out_.btf->type(type_id);
  if (!bt) return std::nullopt;
  using K = bpf::BtfType::Kind;
  switch (bt->kind) {
    case K::Int:
    case K::Enum:
      if (bt->size == 1 || bt->size == 2 || bt->size == 4 || bt->size == 8) {
        Type t = Type::integer(bt->size, bt->is_signed);
        if (bt->kind == K::Enum) t.enum_id = bt->id;
        return t;
      }
      return std::nullopt;
    case K::Pointer: {
      // char * points to int8 (not a char array); void * to nothing.
      std::optional<Type> target = bt->target ? btf_value_type(bt->target) : std::nullopt;
      if (target && target->is_string()) target = Type::integer(1, true);
      return Type::pointer(target.value_or(Type::none()), AddrSpace::Kernel);
    }
    case K::Array: {
      auto elem = out_.btf->type(bt->target);
      if (elem && elem->kind == K::Int && elem->size == 1 && bt->count > 0) return Type::string(bt->count);
      // Other arrays are read an element at a time: a[i].
      Type t = record(bt->id);
      t.size = bt->size;
      return t;
    }
    case K::Struct:
    case K::Union: return record(bt->id);
    default: return std::nullopt;
  }
}

Type Checker::btf_field(ExprId id, const Expr& e, const Type& base) {
  uint32_t sid = base.btf_id;
  auto m = out_.btf->find_member(sid, e.name);
  if (!m) {
    error(e.loc, fmt::format("Struct/union of type '{}' does not contain a field named '{}'",
                             out_.btf->type_name(sid), e.name));
    return Type::none();
  }
  auto t = btf_value_type(m->type_id);
  if (!t) {
    error(e.loc, fmt::format("field '{}' has a type bpfscope cannot read yet: {}", e.name,
                             out_.btf->type_name(m->type_id)));
    return Type::none();
  }
  // Members of a struct in user memory are in user memory too.
  if (base.addr_space == AddrSpace::User) {
    t->addr_space = AddrSpace::User;
    retarget(*t, AddrSpace::User);
  }
  FieldAccess f;
  f.offset = m->bit_offset / 8;
  if (m->bitfield_size) {
    f.bits = m->bitfield_size;
    f.shift = m->bit_offset % 8;
  }
  out_.field_of[id] = f;
  return *t;
}

std::optional<Type> Checker::int_type(std::string_view name) {
  struct Row {
    std::string_view name;
    uint32_t size;
    bool is_signed;
  };
  constexpr std::array kInts = {Row{"int8", 1, true},   Row{"int16", 2, true},  Row{"int32", 4, true},
                                Row{"int64", 8, true},  Row{"uint8", 1, false}, Row{"uint16", 2, false},
                                Row{"uint32", 4, false}, Row{"uint64", 8, false}};
  for (const auto& r : kInts)
    if (r.name == name) return Type::integer(r.size, r.is_signed);
  if (name == "bool") return Type::boolean();
  return std::nullopt;
}

// A type as a cast or sizeof writes it: "uint32", "struct sock", "int8 **",
// "struct sock *", "void *". Pointers point into kernel memory. Reports
// unknown names.
std::optional<Type> Checker::type_of_name(std::string_view name, lang::Loc loc) {
  size_t stars = 0;
  while (name.ends_with("*")) {
    name.remove_suffix(1);
    while (name.ends_with(" ")) name.remove_suffix(1);
    ++stars;
  }
  Type t;
  if (auto i = int_type(name)) {
    t = *i;
  } else if (name == "void" && stars > 0) {
    t = Type::none();
  } else if (name.starts_with("struct ") || name.starts_with("union ")) {
    Type p = pointer_to(name, loc);
    if (p.kind == TypeKind::None) return std::nullopt;
    t = p.elems[0];
  } else if (auto id = name.starts_with("enum ") ? out_.btf->find_type(name) : std::nullopt) {
    // (enum skb_drop_reason)x: an integer of the enum's size, printed by name.
    auto bt = out_.btf->type(*id);
    t = Type::integer(bt && bt->size ? bt->size : 4, bt && bt->is_signed);
    t.enum_id = *id;
  } else if (name == "char") {
    t = Type::integer(1, true);  // signed, as C's char is on the targets bpftrace supports
  } else if (auto vt = kernel_type(name)) {
    // A C or kernel type name: char, unsigned long, size_t, u32 (0.26).
    t = *vt;
  } else {
    error(loc, fmt::format("Cannot resolve unknown type \"{}\"", name));
    return std::nullopt;
  }
  for (size_t i = 0; i < stars; ++i) t = Type::pointer(std::move(t), AddrSpace::Kernel);
  return t;
}

// A type of the kernel's BTF by name (a typedef, a C integer type) as an
// integer, pointer or struct; nullopt for other kinds and unknown names.
std::optional<Type> Checker::kernel_type(std::string_view name) {
  if (name.empty() || name.find_first_of("*[") != std::string_view::npos) return std::nullopt;
  auto id = out_.btf->find_type(name);
  if (!id) return std::nullopt;
  auto t = btf_value_type(*id);
  if (!t || t->is_string()) return std::nullopt;
  return t;
}

std::optional<Type> Checker::typeof_type(ExprId type_of, std::string_view suffix, lang::Loc loc) {
  Type t = expr(type_of);
  if (t.kind == TypeKind::None) {
    if (!diags_.has_errors()) error(loc, "typeof: the expression has no value");
    return std::nullopt;
  }
  // A literal's type is that of the value it gives (an int64).
  if (ast_.expr(type_of).kind == ExprKind::Integer && t.is_int() && !t.is_pointer && t.kind != TypeKind::Bool)
    t = Type::integer(8, t.is_signed);
  while (!suffix.empty()) {
    if (suffix.front() == ' ') {
      suffix.remove_prefix(1);
    } else if (suffix.front() == '*') {
      t = Type::pointer(std::move(t), AddrSpace::Kernel);
      suffix.remove_prefix(1);
    } else {
      // [N]; [] takes its size from what is cast, which a typeof base does not support.
      const size_t close = suffix.find(']');
      uint32_t n = 0;
      auto [p, ec] = std::from_chars(suffix.data() + 1, suffix.data() + std::min(close, suffix.size()), n);
      if (close == std::string_view::npos || ec != std::errc() || p != suffix.data() + close || n == 0) {
        error(loc, fmt::format("Cannot resolve the array type typeof(...){}", suffix));
        return std::nullopt;
      }
      t = Type::array(std::move(t), n);
      suffix.remove_prefix(close + 1);
    }
  }
  return t;
}

// Marks a pointer, and the pointers it leads to, as pointing into `space`.
void Checker::retarget(Type& t, AddrSpace space) {
  for (Type* p = &t; p && p->is_pointer; p = p->elems.empty() ? nullptr : &p->elems[0]) p->addr_space = space;
}

}  // namespace bpfscope::sema::detail
