// Kernel BTF lookups over libbpf's struct btf (see btf.h).
#include "bpf/btf.h"  // also libbpf's <bpf/btf.h> (#include_next)

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace bpfscope::bpf {

namespace {

constexpr int kMaxDepth = 32;  // guards against malformed (cyclic) BTF

std::string_view strip_prefix(std::string_view s, std::string_view prefix, bool& had) {
  had = s.starts_with(prefix);
  if (had) s.remove_prefix(prefix.size());
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

struct Btf::State {
  bool tried = false;
  struct btf* btf = nullptr;   // the kernel's, or the split BTF on top of it once types are added
  struct btf* base = nullptr;  // the kernel's, once split
  uint32_t local_start = UINT32_MAX;  // first script-defined id
  Error error;
  // Name indexes, each built on the first lookup that needs it, in one pass
  // over the types. Keys point into the BTF string section, which lives as
  // long as `btf`. Functions (56k in a 6.18 kernel) have no index: a linear
  // btf__find_by_name_kind costs about 0.5 ms, less than indexing them.
  enum Index { kComposite = 1, kEnums = 2, kNamed = 4 };
  unsigned indexed = 0;
  std::unordered_map<std::string_view, uint32_t> structs, unions, enums, typedefs, scalars;
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> enumerators;  // name -> (enum id, index)

  ~State() {
    btf__free(btf);
    btf__free(base);
  }

  // Script-defined types (ids from local_start) replace earlier entries of
  // the same name: the script's struct wins over the kernel's.
  template <typename Map, typename V>
  void put(Map& m, std::string_view key, uint32_t id, V value) {
    if (id >= local_start) m.insert_or_assign(key, value);
    else m.emplace(key, value);
  }

  std::string_view name(const btf_type* t) const { return btf__name_by_offset(btf, t->name_off); }

  void build_index(unsigned which) {
    which &= ~indexed;
    if (!which) return;
    indexed |= which;
    uint32_t n = btf__type_cnt(btf);
    for (uint32_t id = 1; id < n; id++) {
      const btf_type* t = btf__type_by_id(btf, id);
      switch (btf_kind(t)) {
        case BTF_KIND_STRUCT:
          if ((which & kComposite) && t->name_off) put(structs, name(t), id, id);
          break;
        case BTF_KIND_UNION:
          if ((which & kComposite) && t->name_off) put(unions, name(t), id, id);
          break;
        case BTF_KIND_TYPEDEF:
          if (which & kNamed) put(typedefs, name(t), id, id);
          break;
        case BTF_KIND_INT:
        case BTF_KIND_FLOAT:
          if (which & kNamed) put(scalars, name(t), id, id);
          break;
        case BTF_KIND_ENUM: {
          if (!(which & kEnums)) break;
          if (t->name_off) put(enums, name(t), id, id);
          const struct btf_enum* e = btf_enum(t);
          for (uint32_t i = 0; i < btf_vlen(t); i++)
            put(enumerators, btf__name_by_offset(btf, e[i].name_off), id, std::pair{id, i});
          break;
        }
        case BTF_KIND_ENUM64: {
          if (!(which & kEnums)) break;
          if (t->name_off) put(enums, name(t), id, id);
          const struct btf_enum64* e = btf_enum64(t);
          for (uint32_t i = 0; i < btf_vlen(t); i++)
            put(enumerators, btf__name_by_offset(btf, e[i].name_off), id, std::pair{id, i});
          break;
        }
        default:
          break;
      }
    }
  }

  std::optional<uint32_t> find_func(std::string_view nm) const {
    std::string key(nm);
    int id = btf__find_by_name_kind(btf, key.c_str(), BTF_KIND_FUNC);
    if (id <= 0) return std::nullopt;
    return static_cast<uint32_t>(id);
  }

  static std::optional<uint32_t> lookup(const std::unordered_map<std::string_view, uint32_t>& m,
                                        std::string_view key) {
    auto it = m.find(key);
    if (it == m.end()) return std::nullopt;
    return it->second;
  }
};

Btf::Btf() = default;
Btf::Btf(std::string path) : path_(std::move(path)) {}
Btf::Btf(Btf&&) noexcept = default;
Btf& Btf::operator=(Btf&&) noexcept = default;
Btf::~Btf() = default;

Btf::State& Btf::state() const {
  if (!st_) st_ = std::make_unique<State>();
  State& s = *st_;
  if (!s.tried) {
    s.tried = true;
    errno = 0;
    s.btf = path_.empty() ? btf__load_vmlinux_btf() : btf__parse(path_.c_str(), nullptr);
    if (!s.btf) {
      int err = errno ? errno : ENOENT;
      std::string what = path_.empty() ? "btf__load_vmlinux_btf (/sys/kernel/btf/vmlinux)"
                                       : "btf__parse(" + path_ + ")";
      s.error = Error{err, what + ": " + std::strerror(err)};
    }
  }
  return s;
}

Result<void> Btf::load() const {
  State& s = state();
  if (!s.btf) return std::unexpected(s.error);
  return {};
}

bool Btf::loaded() const { return st_ && st_->btf; }

const struct btf* Btf::raw() const { return state().btf; }

uint32_t Btf::type_count() const {
  State& s = state();
  return s.btf ? btf__type_cnt(s.btf) : 0;
}

uint32_t Btf::resolve(uint32_t id) const {
  State& s = state();
  if (!s.btf) return id;
  for (int depth = 0; id != 0 && depth < kMaxDepth; depth++) {
    const btf_type* t = btf__type_by_id(s.btf, id);
    if (!t) return id;
    if (!(btf_is_mod(t) || btf_is_typedef(t))) return id;  // btf_is_mod: volatile/const/restrict/type_tag
    id = t->type;
  }
  return id;
}

std::optional<BtfType> Btf::type(uint32_t id) const {
  State& s = state();
  if (!s.btf || id >= btf__type_cnt(s.btf)) return std::nullopt;
  id = resolve(id);
  BtfType r;
  r.id = id;
  if (id == 0) return r;  // void
  const btf_type* t = btf__type_by_id(s.btf, id);
  r.name = s.name(t);
  switch (btf_kind(t)) {
    case BTF_KIND_INT: {
      r.kind = BtfType::Kind::Int;
      r.size = t->size;
      r.is_signed = btf_int_encoding(t) & BTF_INT_SIGNED;
      break;
    }
    case BTF_KIND_FLOAT:
      r.kind = BtfType::Kind::Float;
      r.size = t->size;
      r.is_signed = true;
      break;
    case BTF_KIND_PTR:
      r.kind = BtfType::Kind::Pointer;
      r.size = 8;
      r.target = t->type;
      break;
    case BTF_KIND_ARRAY: {
      r.kind = BtfType::Kind::Array;
      const struct btf_array* a = btf_array(t);
      r.target = a->type;
      r.count = a->nelems;
      long sz = btf__resolve_size(s.btf, id);
      r.size = sz > 0 ? static_cast<uint32_t>(sz) : 0;
      break;
    }
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      r.kind = btf_is_struct(t) ? BtfType::Kind::Struct : BtfType::Kind::Union;
      r.size = t->size;
      r.count = btf_vlen(t);
      break;
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64:
      r.kind = BtfType::Kind::Enum;
      r.size = t->size;
      r.is_signed = btf_kflag(t);
      r.count = btf_vlen(t);
      break;
    case BTF_KIND_FWD:
      r.kind = BtfType::Kind::Fwd;
      break;
    case BTF_KIND_FUNC:
      r.kind = BtfType::Kind::Func;
      r.target = t->type;
      break;
    case BTF_KIND_FUNC_PROTO:
      r.kind = BtfType::Kind::FuncProto;
      r.target = t->type;
      r.count = btf_vlen(t);
      break;
    default:
      r.kind = BtfType::Kind::Unknown;
      break;
  }
  return r;
}

std::optional<uint32_t> Btf::size_of(uint32_t id) const {
  State& s = state();
  if (!s.btf || id == 0 || id >= btf__type_cnt(s.btf)) return std::nullopt;
  uint32_t r = resolve(id);
  if (r == 0) return std::nullopt;
  const btf_type* t = btf__type_by_id(s.btf, r);
  if (btf_is_func(t) || btf_is_func_proto(t) || btf_is_fwd(t)) return std::nullopt;
  long sz = btf__resolve_size(s.btf, r);
  if (sz < 0) return std::nullopt;
  return static_cast<uint32_t>(sz);
}

namespace {

std::string name_rec(const struct btf* b, uint32_t id, int depth);

std::string proto_text(const struct btf* b, const btf_type* t, std::string_view inner, int depth) {
  std::string s = name_rec(b, t->type, depth + 1);
  s += ' ';
  s += inner;
  s += '(';
  const btf_param* p = btf_params(t);
  for (uint32_t i = 0; i < btf_vlen(t); i++) {
    if (i) s += ", ";
    s += p[i].type ? name_rec(b, p[i].type, depth + 1) : "...";  // type 0 as a param: varargs
  }
  s += ')';
  return s;
}

// Adds a suffix that binds to the right of a declarator ("*", "const").
std::string append_ptr(std::string base, std::string_view what) {
  if (!base.empty() && base.back() == '*') base += what;
  else base += ' ', base += what;
  return base;
}

std::string name_rec(const struct btf* b, uint32_t id, int depth) {
  if (id == 0) return "void";
  if (depth > kMaxDepth) return "?";
  const btf_type* t = btf__type_by_id(b, id);
  if (!t) return "?";
  std::string nm = btf__name_by_offset(b, t->name_off);
  switch (btf_kind(t)) {
    case BTF_KIND_INT:
    case BTF_KIND_FLOAT:
    case BTF_KIND_TYPEDEF:
    case BTF_KIND_FUNC:
      return nm;
    case BTF_KIND_STRUCT:
      return "struct " + (nm.empty() ? std::string("{...}") : nm);
    case BTF_KIND_UNION:
      return "union " + (nm.empty() ? std::string("{...}") : nm);
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64:
      return "enum " + (nm.empty() ? std::string("{...}") : nm);
    case BTF_KIND_FWD:
      return (btf_kflag(t) ? "union " : "struct ") + nm;
    case BTF_KIND_PTR: {
      const btf_type* pt = btf__type_by_id(b, t->type);
      if (pt && btf_is_func_proto(pt)) return proto_text(b, pt, "(*)", depth);
      return append_ptr(name_rec(b, t->type, depth + 1), "*");
    }
    case BTF_KIND_ARRAY: {
      const struct btf_array* a = btf_array(t);
      std::string elem = name_rec(b, a->type, depth + 1);
      std::string dim = "[" + std::to_string(a->nelems) + "]";
      // int[2][3]: the outer dimension goes first.
      auto pos = elem.find('[');
      if (pos != std::string::npos) return elem.insert(pos, dim);
      return elem + dim;
    }
    case BTF_KIND_CONST:
    case BTF_KIND_VOLATILE: {
      const char* q = btf_is_const(t) ? "const" : "volatile";
      std::string inner = name_rec(b, t->type, depth + 1);
      const btf_type* tt = t->type ? btf__type_by_id(b, t->type) : nullptr;
      if (tt && btf_is_ptr(tt)) return inner + " " + q;  // char *const
      return std::string(q) + " " + inner;
    }
    case BTF_KIND_RESTRICT:
    case BTF_KIND_TYPE_TAG:
      return name_rec(b, t->type, depth + 1);
    case BTF_KIND_FUNC_PROTO:
      return proto_text(b, t, "", depth);
    default:
      return nm.empty() ? "?" : nm;
  }
}

}  // namespace

std::string Btf::type_name(uint32_t id) const {
  State& s = state();
  if (!s.btf) return id == 0 ? "void" : "?";
  if (id >= btf__type_cnt(s.btf)) return "?";
  return name_rec(s.btf, id, 0);
}

uint32_t Btf::next_id() const {
  State& s = state();
  return s.btf ? btf__type_cnt(s.btf) : 1;
}

Result<void> Btf::add_types(const std::vector<BtfNewType>& types) {
  State& s = state();
  if (s.local_start == UINT32_MAX) {
    struct btf* split = btf__new_empty_split(s.btf);  // standalone when s.btf is null
    if (!split) return std::unexpected(Error{errno, std::string("btf__new_empty_split: ") + std::strerror(errno)});
    s.base = s.btf;
    s.btf = split;
    s.local_start = btf__type_cnt(split);
  }
  // Arrays need an index type; BTF convention is "int", and nothing here reads it.
  int index_type = btf__find_by_name_kind(s.btf, "int", BTF_KIND_INT);
  if (index_type < 0) index_type = 0;
  const uint32_t first = btf__type_cnt(s.btf);
  for (size_t i = 0; i < types.size(); i++) {
    const BtfNewType& t = types[i];
    const char* name = t.name.c_str();
    int id = -EINVAL;
    using K = BtfNewType::Kind;
    switch (t.kind) {
      case K::Int:
        id = btf__add_int(s.btf, name, t.size, t.is_bool ? BTF_INT_BOOL : t.is_signed ? BTF_INT_SIGNED : 0);
        break;
      case K::Pointer: id = btf__add_ptr(s.btf, static_cast<int>(t.target)); break;
      case K::Array: id = btf__add_array(s.btf, index_type, static_cast<int>(t.target), t.count); break;
      case K::Struct:
      case K::Union:
        id = t.kind == K::Struct ? btf__add_struct(s.btf, name, t.size) : btf__add_union(s.btf, name, t.size);
        for (const BtfMember& m : t.members) {
          if (id < 0) break;
          int err = btf__add_field(s.btf, m.name.c_str(), static_cast<int>(m.type_id), m.bit_offset, m.bitfield_size);
          if (err < 0) id = err;
        }
        break;
      case K::Enum: {
        bool wide = t.size > 4;
        id = wide ? btf__add_enum64(s.btf, name, t.size, t.is_signed) : btf__add_enum(s.btf, name, t.size);
        for (const auto& [vname, value] : t.values) {
          if (id < 0) break;
          int err = wide ? btf__add_enum64_value(s.btf, vname.c_str(), static_cast<uint64_t>(value))
                         : btf__add_enum_value(s.btf, vname.c_str(), value);
          if (err < 0) id = err;
        }
        break;
      }
    }
    if (id < 0) {
      return std::unexpected(
          Error{-id, "cannot add type '" + t.name + "' to BTF: " + std::strerror(-id)});
    }
    if (static_cast<uint32_t>(id) != first + i) return std::unexpected(Error{EINVAL, "unexpected BTF id"});
  }
  // Rebuild the name indexes on the next lookup, now with the new types.
  s.indexed = 0;
  s.structs.clear(), s.unions.clear(), s.enums.clear(), s.typedefs.clear(), s.scalars.clear();
  s.enumerators.clear();
  return {};
}

std::optional<uint32_t> Btf::find_struct(std::string_view name) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  s.build_index(State::kComposite);
  bool is_struct = false, is_union = false;
  name = strip_prefix(name, "struct ", is_struct);
  if (!is_struct) name = strip_prefix(name, "union ", is_union);
  if (!is_union)
    if (auto id = State::lookup(s.structs, name)) return id;
  if (!is_struct) return State::lookup(s.unions, name);
  return std::nullopt;
}

std::optional<uint32_t> Btf::find_type(std::string_view name) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  bool had = false;
  if (name.starts_with("struct ") || name.starts_with("union ")) return find_struct(name);
  std::string_view rest = strip_prefix(name, "enum ", had);
  s.build_index(State::kNamed);
  if (had) {
    s.build_index(State::kEnums);
    return State::lookup(s.enums, rest);
  }
  if (auto id = State::lookup(s.typedefs, name)) return id;
  if (auto id = State::lookup(s.scalars, name)) return id;
  if (auto id = find_struct(name)) return id;
  s.build_index(State::kEnums);
  return State::lookup(s.enums, name);
}

namespace {

// Walks the members of `id` (resolved struct/union) into anonymous nested
// ones. `visit` returns true to stop.
template <typename F>
bool walk_members(const struct btf* b, uint32_t id, uint32_t base, int depth, F&& visit) {
  if (depth > kMaxDepth) return false;
  const btf_type* t = btf__type_by_id(b, id);
  if (!t || !btf_is_composite(t)) return false;
  const btf_member* m = btf_members(t);
  for (uint32_t i = 0; i < btf_vlen(t); i++) {
    uint32_t off = base + btf_member_bit_offset(t, i);
    uint32_t bits = btf_member_bitfield_size(t, i);
    std::string_view nm = btf__name_by_offset(b, m[i].name_off);
    if (nm.empty()) {
      // Anonymous: a nested struct/union (possibly behind const/typedef) is flattened.
      uint32_t r = m[i].type;
      for (int d = 0; r && d < kMaxDepth; d++) {
        const btf_type* rt = btf__type_by_id(b, r);
        if (!rt || !(btf_is_mod(rt) || btf_is_typedef(rt))) break;
        r = rt->type;
      }
      if (r && walk_members(b, r, off, depth + 1, visit)) return true;
      continue;
    }
    if (bits == 0) {
      // Old-style bitfield (no kflag): the int type carries offset and width.
      uint32_t r = m[i].type;
      const btf_type* rt = btf__type_by_id(b, r);
      if (rt && btf_is_int(rt) && btf_int_bits(rt) != rt->size * 8) {
        off += btf_int_offset(rt);
        bits = btf_int_bits(rt);
      }
    }
    if (visit(BtfMember{std::string(nm), off, bits, m[i].type})) return true;
  }
  return false;
}

}  // namespace

std::optional<BtfMember> Btf::find_member(uint32_t struct_id, std::string_view name) const {
  State& s = state();
  if (!s.btf || struct_id == 0 || struct_id >= btf__type_cnt(s.btf) || name.empty()) return std::nullopt;
  std::optional<BtfMember> found;
  walk_members(s.btf, resolve(struct_id), 0, 0, [&](BtfMember&& m) {
    if (m.name != name) return false;
    found = std::move(m);
    return true;
  });
  return found;
}

std::vector<BtfMember> Btf::members(uint32_t struct_id) const {
  State& s = state();
  std::vector<BtfMember> out;
  if (!s.btf || struct_id == 0 || struct_id >= btf__type_cnt(s.btf)) return out;
  walk_members(s.btf, resolve(struct_id), 0, 0, [&](BtfMember&& m) {
    out.push_back(std::move(m));
    return false;
  });
  return out;
}

std::optional<int64_t> Btf::enum_value(std::string_view name) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  s.build_index(State::kEnums);
  auto it = s.enumerators.find(name);
  if (it == s.enumerators.end()) return std::nullopt;
  const btf_type* t = btf__type_by_id(s.btf, it->second.first);
  uint32_t i = it->second.second;
  if (btf_is_enum64(t)) return static_cast<int64_t>(btf_enum64_value(btf_enum64(t) + i));
  int32_t v = btf_enum(t)[i].val;
  // Unsigned 32-bit enums (kflag clear) keep values above INT32_MAX positive.
  if (!btf_kflag(t)) return static_cast<int64_t>(static_cast<uint32_t>(v));
  return v;
}

std::optional<uint32_t> Btf::enum_of(std::string_view name) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  s.build_index(State::kEnums);
  auto it = s.enumerators.find(name);
  if (it == s.enumerators.end()) return std::nullopt;
  return it->second.first;
}

std::optional<uint32_t> Btf::find_func(std::string_view name) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  if (name.empty()) return std::nullopt;
  return s.find_func(name);
}

namespace {

std::vector<BtfParam> params_of(const struct btf* b, const btf_type* proto, uint32_t skip) {
  std::vector<BtfParam> out;
  const btf_param* p = btf_params(proto);
  for (uint32_t i = skip; i < btf_vlen(proto); i++) {
    if (p[i].type == 0) break;  // varargs
    std::string nm = btf__name_by_offset(b, p[i].name_off);
    if (nm.empty()) nm = "arg" + std::to_string(i - skip);
    out.push_back(BtfParam{std::move(nm), p[i].type});
  }
  return out;
}

}  // namespace

std::optional<std::vector<BtfParam>> Btf::func_params(uint32_t func_id) const {
  State& s = state();
  if (!s.btf || func_id == 0 || func_id >= btf__type_cnt(s.btf)) return std::nullopt;
  const btf_type* f = btf__type_by_id(s.btf, func_id);
  if (!btf_is_func(f)) return std::nullopt;
  const btf_type* proto = btf__type_by_id(s.btf, f->type);
  if (!proto || !btf_is_func_proto(proto)) return std::nullopt;
  return params_of(s.btf, proto, 0);
}

std::optional<uint32_t> Btf::func_return(uint32_t func_id) const {
  State& s = state();
  if (!s.btf || func_id == 0 || func_id >= btf__type_cnt(s.btf)) return std::nullopt;
  const btf_type* f = btf__type_by_id(s.btf, func_id);
  if (!btf_is_func(f)) return std::nullopt;
  const btf_type* proto = btf__type_by_id(s.btf, f->type);
  if (!proto || !btf_is_func_proto(proto)) return std::nullopt;
  return proto->type;
}

std::vector<std::pair<std::string, uint32_t>> Btf::funcs_matching(std::string_view glob) const {
  std::vector<std::pair<std::string, uint32_t>> out;
  State& s = state();
  if (!s.btf) return out;
  const uint32_t n = btf__type_cnt(s.btf);
  for (uint32_t id = 1; id < n; ++id) {
    const btf_type* t = btf__type_by_id(s.btf, id);
    if (!btf_is_func(t)) continue;
    std::string_view name = btf__name_by_offset(s.btf, t->name_off);
    if (!name.empty() && glob_match(glob, name)) out.emplace_back(std::string(name), id);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            out.end());
  return out;
}

std::optional<uint32_t> Btf::tracepoint_btf_id(std::string_view event) const {
  State& s = state();
  if (!s.btf) return std::nullopt;
  s.build_index(State::kNamed);
  if (auto colon = event.rfind(':'); colon != std::string_view::npos) event.remove_prefix(colon + 1);
  if (event.empty()) return std::nullopt;
  std::string key = "btf_trace_" + std::string(event);
  return State::lookup(s.typedefs, key);
}

std::optional<std::vector<BtfParam>> Btf::tracepoint_args(std::string_view event) const {
  auto td = tracepoint_btf_id(event);
  if (!td) return std::nullopt;
  State& s = state();
  // typedef btf_trace_<event> -> pointer -> func proto (void *, args...).
  const btf_type* t = btf__type_by_id(s.btf, *td);
  const btf_type* ptr = btf__type_by_id(s.btf, t->type);
  if (!ptr || !btf_is_ptr(ptr)) return std::nullopt;
  const btf_type* proto = btf__type_by_id(s.btf, ptr->type);
  if (!proto || !btf_is_func_proto(proto) || btf_vlen(proto) < 1) return std::nullopt;
  std::vector<BtfParam> args = params_of(s.btf, proto, 1);

  // Names: the typedef's prototype has none; __bpf_trace_<event>(void *__data, args...)
  // has them. Take them only when the types line up.
  if (auto ev = event.rfind(':'); ev != std::string_view::npos) event.remove_prefix(ev + 1);
  if (auto fid = s.find_func("__bpf_trace_" + std::string(event))) {
    const btf_type* fp = btf__type_by_id(s.btf, btf__type_by_id(s.btf, *fid)->type);
    if (fp && btf_is_func_proto(fp) && btf_vlen(fp) >= args.size() + 1) {
      const btf_param* p = btf_params(fp);
      bool same = true;
      for (size_t i = 0; i < args.size() && same; i++)
        same = resolve(p[i + 1].type) == resolve(args[i].type_id);
      if (same)
        for (size_t i = 0; i < args.size(); i++)
          if (std::string_view nm = btf__name_by_offset(s.btf, p[i + 1].name_off); !nm.empty())
            args[i].name = nm;
    }
  }
  return args;
}

}  // namespace bpfscope::bpf
