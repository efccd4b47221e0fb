// Kernel BTF lookups: the kernel's BTF read in place, libbpf's struct btf
// for files and for the script's own types (see btf.h).
#include "bpf/btf.h"  // also libbpf's <bpf/btf.h> (#include_next)

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bpfscope::bpf {

namespace {

constexpr int kMaxDepth = 32;  // guards against malformed (cyclic) BTF

std::string_view strip_prefix(std::string_view s, std::string_view prefix, bool& had) {
  had = s.starts_with(prefix);
  if (had) s.remove_prefix(prefix.size());
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// The name indexes (Btf::State) each cover a group of kinds.
// kIndexGroups: a kind no index covers.
enum IndexGroup { kComposite, kEnums, kNamed, kIndexGroups };

// What follows a kind's struct btf_type (a fixed part and one item per
// vlen), and its index group: a table, since the first pass over the
// kernel's ~150k types is a tight loop that a switch's branches slow down.
struct KindLayout {
  uint8_t fixed = 0, per_item = 0;
  IndexGroup group = kIndexGroups;
  bool known = false;
};
constexpr std::array<KindLayout, 32> kKindLayouts = [] {
  std::array<KindLayout, 32> k{};
  auto set = [&](int kind, size_t fixed, size_t per_item, IndexGroup g = kIndexGroups) {
    k[kind] = KindLayout{static_cast<uint8_t>(fixed), static_cast<uint8_t>(per_item), g, true};
  };
  set(BTF_KIND_INT, 4, 0, kNamed);
  set(BTF_KIND_FLOAT, 0, 0, kNamed);
  set(BTF_KIND_TYPEDEF, 0, 0, kNamed);
  set(BTF_KIND_STRUCT, 0, sizeof(struct btf_member), kComposite);
  set(BTF_KIND_UNION, 0, sizeof(struct btf_member), kComposite);
  set(BTF_KIND_ENUM, 0, sizeof(struct btf_enum), kEnums);
  set(BTF_KIND_ENUM64, 0, sizeof(struct btf_enum64), kEnums);
  set(BTF_KIND_VAR, 4, 0);
  set(BTF_KIND_DECL_TAG, 4, 0);
  set(BTF_KIND_ARRAY, sizeof(struct btf_array), 0);
  set(BTF_KIND_FUNC_PROTO, 0, sizeof(struct btf_param));
  set(BTF_KIND_DATASEC, 0, sizeof(struct btf_var_secinfo));
  for (int kind : std::array<int, 7>{BTF_KIND_PTR, BTF_KIND_FWD, BTF_KIND_VOLATILE, BTF_KIND_CONST,
                                     BTF_KIND_RESTRICT, BTF_KIND_FUNC, BTF_KIND_TYPE_TAG})
    set(kind, 0, 0);
  return k;
}();

// The name of enumerator `i` of an ENUM or ENUM64.
uint32_t enumerator_name_off(const btf_type* t, uint32_t i) {
  return btf_is_enum64(t) ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off;
}

// Read access to one BTF's types and strings. The kernel's BTF is read in
// place: /sys/kernel/btf/vmlinux is mapped (the kernel maps its own pages,
// which cost this process no resident memory; kernels before 6.15 cannot map
// it, and then it is read into one buffer). libbpf's loader would instead
// hold one or two 5.5 MB heap copies. Files given by path (tests) and BTF
// with the script's own types on top go through libbpf's struct btf.
class TypeReader {
 public:
  TypeReader() = default;
  TypeReader(const TypeReader&) = delete;
  TypeReader& operator=(const TypeReader&) = delete;
  ~TypeReader() {
    if (map_) munmap(map_, map_size_);
  }

  // The kernel's BTF, in place. false (errno set) when it cannot be read.
  bool open_vmlinux(const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st{};
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
      int err = errno ? errno : EINVAL;
      close(fd);
      errno = err;
      return false;
    }
    size_t size = static_cast<size_t>(st.st_size);
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      map_ = p;
      map_size_ = size;
    } else {
      copy_.resize(size);
      size_t got = 0;
      while (got < size) {
        ssize_t n = read(fd, copy_.data() + got, size - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      copy_.resize(got);
    }
    close(fd);
    const auto* data = map_ ? static_cast<const uint8_t*>(map_) : copy_.data();
    size_t len = map_ ? map_size_ : copy_.size();
    if (!index(data, len)) {
      errno = EINVAL;
      return false;
    }
    return true;
  }

  // Types from libbpf's object from now on: a file given by path, or the
  // split BTF with the script's types on top of the ids read so far.
  void use(struct btf* b) { lib_ = b; }
  bool ok() const { return lib_ || data_; }
  // The raw bytes (to build libbpf's object when types are added on top).
  std::pair<const void*, size_t> bytes() const { return {data_, size_}; }

  uint32_t count() const { return lib_ ? btf__type_cnt(lib_) : static_cast<uint32_t>(offs_.size()); }
  const btf_type* type(uint32_t id) const {
    if (lib_) return btf__type_by_id(lib_, id);
    if (id == 0 || id >= offs_.size()) return nullptr;
    return reinterpret_cast<const btf_type*>(types_ + offs_[id]);
  }
  const char* str(uint32_t off) const {
    if (lib_) return btf__name_by_offset(lib_, off);
    return off < str_len_ ? strs_ + off : "";
  }
  // The first type of this name and kind, or -ENOENT (a linear scan).
  int find(std::string_view name, int kind) const {
    if (lib_) return btf__find_by_name_kind(lib_, std::string(name).c_str(), kind);
    for (uint32_t id = 1; id < offs_.size(); id++) {
      const btf_type* t = type(id);
      if (static_cast<int>(btf_kind(t)) == kind && str(t->name_off) == name) return static_cast<int>(id);
    }
    return -ENOENT;
  }
  // The ids of group `g`'s types, in id order. Noted while the kernel's BTF
  // is read; types libbpf gives (files, the script's types) are classified
  // by a pass over those not seen yet, so the name indexes visit only
  // their own kinds instead of every type.
  const std::vector<uint32_t>& ids_in(IndexGroup g) {
    for (; grouped_ < count(); grouped_++) note_group(grouped_);
    return groups_[g];
  }

  // Bytes of a type, through typedefs, modifiers and arrays; -1 if none.
  long size_of(uint32_t id) const {
    if (lib_) return btf__resolve_size(lib_, id);
    uint64_t mult = 1;
    for (int depth = 0; depth < kMaxDepth; depth++) {
      const btf_type* t = type(id);
      if (!t) return -1;
      switch (btf_kind(t)) {
        case BTF_KIND_INT:
        case BTF_KIND_ENUM:
        case BTF_KIND_ENUM64:
        case BTF_KIND_STRUCT:
        case BTF_KIND_UNION:
        case BTF_KIND_FLOAT:
        case BTF_KIND_DATASEC: return static_cast<long>(mult * t->size);
        case BTF_KIND_PTR: return static_cast<long>(mult * 8);
        case BTF_KIND_ARRAY:
          mult *= btf_array(t)->nelems;
          id = btf_array(t)->type;
          break;
        case BTF_KIND_TYPEDEF:
        case BTF_KIND_VOLATILE:
        case BTF_KIND_CONST:
        case BTF_KIND_RESTRICT:
        case BTF_KIND_TYPE_TAG:
        case BTF_KIND_VAR:
        case BTF_KIND_DECL_TAG: id = t->type; break;
        default: return -1;
      }
    }
    return -1;
  }

 private:
  // Checks the header and records where each type starts.
  bool index(const uint8_t* data, size_t size) {
    if (size < sizeof(btf_header)) return false;
    btf_header h;
    std::memcpy(&h, data, sizeof h);
    if (h.magic != BTF_MAGIC || h.hdr_len < sizeof h || h.hdr_len > size) return false;
    uint64_t types_end = uint64_t{h.hdr_len} + h.type_off + h.type_len;
    uint64_t strs_end = uint64_t{h.hdr_len} + h.str_off + h.str_len;
    if (types_end > size || strs_end > size || h.str_len == 0) return false;
    types_ = data + h.hdr_len + h.type_off;
    strs_ = reinterpret_cast<const char*>(data + h.hdr_len + h.str_off);
    str_len_ = h.str_len;
    if (strs_[str_len_ - 1] != '\0') return false;
    // At most one type per 12 bytes: reserving that much address space
    // spares the copies of a growing vector; untouched pages cost nothing.
    offs_.reserve(h.type_len / sizeof(btf_type) + 1);
    offs_.assign(1, 0);  // id 0: void
    uint32_t off = 0;
    uint32_t id = 1;
    while (off + sizeof(btf_type) <= h.type_len) {
      const auto* t = reinterpret_cast<const btf_type*>(types_ + off);
      const KindLayout& k = kKindLayouts[btf_kind(t)];
      if (!k.known) return false;  // a kind this reader does not know
      offs_.push_back(off);
      if (k.group != kIndexGroups) groups_[k.group].push_back(id);
      ++id;
      off += sizeof(btf_type) + k.fixed + btf_vlen(t) * k.per_item;
    }
    grouped_ = id;
    if (off != h.type_len) return false;
    data_ = data;
    size_ = size;
    return true;
  }

  void note_group(uint32_t id) {
    if (IndexGroup g = kKindLayouts[btf_kind(type(id))].group; g != kIndexGroups) groups_[g].push_back(id);
  }

  struct btf* lib_ = nullptr;  // not owned
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<uint8_t> copy_;  // when the file cannot be mapped
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  const uint8_t* types_ = nullptr;
  const char* strs_ = nullptr;
  uint32_t str_len_ = 0;
  std::vector<uint32_t> offs_;  // type section offset by id
  std::vector<uint32_t> groups_[kIndexGroups];
  uint32_t grouped_ = 1;  // ids below have been noted in groups_
};

// A name -> type id index without a node, key copy or string length per
// entry: open addressing (linear probing) over one array of {name hash, id}.
// Names stay in the BTF string section; a hash match is confirmed by the
// caller's `names(id)`, which compares the name `id` stands for.
class NameIndex {
 public:
  // FNV-1a, over a view or up to a NUL (the string section's names: no strlen).
  static uint32_t hash(std::string_view s) {
    uint32_t h = kOffset;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * kPrime;
    return h;
  }
  static uint32_t hash(const char* s) {
    uint32_t h = kOffset;
    for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * kPrime;
    return h;
  }

  template <typename Names>
  std::optional<uint32_t> find(std::string_view key, Names&& names) const {
    if (slots_.empty()) return std::nullopt;
    const uint32_t h = hash(key);
    for (size_t i = start(h);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.id == 0) return std::nullopt;
      if (s.hash == h && names(s.id)) return s.id;
    }
  }

  // Adds `id` under hash `h`. An entry already standing for the same name
  // (`names(old)`) is kept, or replaced when `replace`.
  template <typename Names>
  void put(uint32_t h, uint32_t id, bool replace, Names&& names) {
    reserve(1);
    for (size_t i = start(h);; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.id == 0) {
        s = Slot{h, id};
        ++used_;
        return;
      }
      if (s.hash == h && names(s.id)) {
        if (replace) s.id = id;
        return;
      }
    }
  }

  // Room for `more` entries beyond those held, without growing again.
  void reserve(size_t more) {
    const size_t n = used_ + more;
    if (n * 4 <= slots_.size() * 3) return;
    size_t size = 16;
    while (size * 3 < n * 4) size *= 2;
    rehash(size);
  }

  void clear() {
    slots_ = {};
    used_ = 0;
  }

 private:
  static constexpr uint32_t kOffset = 2166136261u, kPrime = 16777619u;
  struct Slot {
    uint32_t hash;
    uint32_t id;  // 0: empty (id 0 is void, which has no name)
  };
  size_t mask() const { return slots_.size() - 1; }
  // Fibonacci hashing spreads FNV's low bits over the table.
  size_t start(uint32_t h) const { return ((h * 2654435769u) >> 8) & mask(); }
  void rehash(size_t size) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(size, Slot{0, 0});
    for (const Slot& s : old)
      if (s.id) {
        size_t i = start(s.hash);
        while (slots_[i].id) i = (i + 1) & mask();
        slots_[i] = s;
      }
  }

  std::vector<Slot> slots_;  // a power of two, at most 3/4 full
  size_t used_ = 0;
};

}  // namespace

struct Btf::State {
  bool tried = false;
  TypeReader t;                // every lookup reads through this
  struct btf* btf = nullptr;   // libbpf's: a file given by path, or the split BTF once types are added
  struct btf* base = nullptr;  // the kernel's as libbpf's object, once split
  uint32_t local_start = UINT32_MAX;  // first script-defined id
  Error error;
  // Name lookups. A script names a few types and constants (and sema asks
  // for each twice): the first kScans lookups in a group scan the group's
  // types, which costs less than hashing all their names. Past that, the
  // group's indexes are built, over the types of its group. Functions (56k
  // in a 6.18 kernel) have no index: a linear btf__find_by_name_kind costs
  // about 0.5 ms, less than indexing them.
  static constexpr unsigned kScans = 16;
  unsigned scans[kIndexGroups] = {};
  unsigned indexed = 0;  // bit g: group g's indexes are built
  NameIndex structs, unions, enums, typedefs, scalars;
  NameIndex enumerators;  // enumerator name -> its enum's id
  // Enumerator lookups answered so far (sema asks for each name more than
  // once): a script names a handful, so a list.
  using Enumerator = std::pair<uint32_t, uint32_t>;  // enum id, position
  std::vector<std::pair<std::string, std::optional<Enumerator>>> enumerators_asked;

  ~State() {
    btf__free(btf);
    btf__free(base);
  }

  std::string_view name(const btf_type* ty) const { return t.str(ty->name_off); }

  // Adds `id` under `nm` (a name in the string section). Script-defined
  // types (ids from local_start) replace an earlier entry of the same name:
  // the script's struct wins over the kernel's. `names(old)`: whether the
  // entry `old` already stands for this name.
  template <typename Names>
  void put(NameIndex& index, const char* nm, uint32_t id, Names&& names) {
    index.put(NameIndex::hash(nm), id, id >= local_start, names);
  }
  void put_type(NameIndex& index, const btf_type* ty, uint32_t id) {
    const char* nm = t.str(ty->name_off);
    put(index, nm, id, [&](uint32_t old) { return std::strcmp(t.str(t.type(old)->name_off), nm) == 0; });
  }

  // Whether the string at `off` is `nm`, without measuring the string first.
  bool str_is(uint32_t off, std::string_view nm) const {
    const char* s = t.str(off);
    return (nm.empty() || s[0] == nm[0]) && std::strncmp(s, nm.data(), nm.size()) == 0 && s[nm.size()] == '\0';
  }

  // The position of enumerator `nm` in enum `id` (ENUM or ENUM64).
  std::optional<uint32_t> enumerator_index(uint32_t id, std::string_view nm) const {
    const btf_type* ty = t.type(id);
    for (uint32_t i = 0; i < btf_vlen(ty); i++)
      if (str_is(enumerator_name_off(ty, i), nm)) return i;
    return std::nullopt;
  }

  // The table a kind's names go to (kinds of the index groups only).
  NameIndex& table_of(int kind) {
    switch (kind) {
      case BTF_KIND_STRUCT: return structs;
      case BTF_KIND_UNION: return unions;
      case BTF_KIND_TYPEDEF: return typedefs;
      case BTF_KIND_INT:
      case BTF_KIND_FLOAT: return scalars;
      default: return enums;  // ENUM, ENUM64
    }
  }

  void build_index(IndexGroup g) {
    if (indexed & (1u << g)) return;
    indexed |= 1u << g;
    const std::vector<uint32_t>& ids = t.ids_in(g);
    // Counted first, so that no table grows (and is copied) while filled.
    size_t of_kind[32] = {}, values = 0;
    for (uint32_t id : ids) {
      const btf_type* ty = t.type(id);
      of_kind[btf_kind(ty)]++;
      if (g == kEnums) values += btf_vlen(ty);
    }
    for (int kind = 0; kind < 32; kind++)
      if (of_kind[kind]) table_of(kind).reserve(of_kind[kind]);
    if (g == kEnums) enumerators.reserve(values);
    for (uint32_t id : ids) {
      const btf_type* ty = t.type(id);
      if (g == kEnums) {
        for (uint32_t i = 0; i < btf_vlen(ty); i++) {
          const char* nm = t.str(enumerator_name_off(ty, i));
          put(enumerators, nm, id, [&](uint32_t old) { return enumerator_index(old, nm).has_value(); });
        }
      }
      if (ty->name_off) put_type(table_of(btf_kind(ty)), ty, id);
    }
  }

  // Whether group g's lookups go to its indexes (else they scan its types).
  bool use_index(IndexGroup g) {
    if (!(indexed & (1u << g)) && ++scans[g] <= kScans) return false;
    build_index(g);
    return true;
  }
  // Over group g's types in id order, the answer the indexes would give of
  // those `match` accepts: the kernel's first, a script's last.
  template <typename T, typename Match>
  std::optional<T> scan(IndexGroup g, Match&& match) {
    std::optional<T> found;
    for (uint32_t id : t.ids_in(g)) {
      std::optional<T> m = match(id);
      if (!m) continue;
      if (!found || id >= local_start) found = m;
      if (local_start == UINT32_MAX) break;
    }
    return found;
  }
  // The type named `nm` among those whose names go to `index`.
  std::optional<uint32_t> lookup(IndexGroup g, const NameIndex& index, std::string_view nm) {
    if (use_index(g)) return index.find(nm, [&](uint32_t id) { return str_is(t.type(id)->name_off, nm); });
    return scan<uint32_t>(g, [&](uint32_t id) -> std::optional<uint32_t> {
      const btf_type* ty = t.type(id);
      if (&table_of(btf_kind(ty)) != &index || !ty->name_off || !str_is(ty->name_off, nm)) return std::nullopt;
      return id;
    });
  }
  // The enum declaring enumerator `nm` and the enumerator's position in it.
  std::optional<Enumerator> lookup_enumerator(std::string_view nm) {
    for (const auto& [name, found] : enumerators_asked)
      if (name == nm) return found;
    std::optional<Enumerator> found;
    if (use_index(kEnums)) {
      std::optional<uint32_t> pos;
      auto id = enumerators.find(nm, [&](uint32_t enum_id) { return (pos = enumerator_index(enum_id, nm)).has_value(); });
      if (id) found = Enumerator{*id, *pos};
    } else {
      found = scan<Enumerator>(kEnums, [&](uint32_t id) -> std::optional<Enumerator> {
        auto pos = enumerator_index(id, nm);
        if (!pos) return std::nullopt;
        return Enumerator{id, *pos};
      });
    }
    enumerators_asked.emplace_back(std::string(nm), found);
    return found;
  }

  std::optional<uint32_t> find_func(std::string_view nm) const {
    int id = t.find(nm, BTF_KIND_FUNC);
    if (id <= 0) return std::nullopt;
    return static_cast<uint32_t>(id);
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
    bool ok = false;
    if (path_.empty()) {
      ok = s.t.open_vmlinux("/sys/kernel/btf/vmlinux");
    } else if ((s.btf = btf__parse(path_.c_str(), nullptr))) {
      s.t.use(s.btf);
      ok = true;
    }
    if (!ok) {
      int err = errno ? errno : ENOENT;
      std::string what = path_.empty() ? "/sys/kernel/btf/vmlinux"
                                       : "btf__parse(" + path_ + ")";
      s.error = Error{err, what + ": " + std::strerror(err)};
    }
  }
  return s;
}

Result<void> Btf::load() const {
  State& s = state();
  if (!s.t.ok()) return std::unexpected(s.error);
  return {};
}

bool Btf::loaded() const { return st_ && st_->t.ok(); }

uint32_t Btf::type_count() const {
  State& s = state();
  return s.t.ok() ? s.t.count() : 0;
}

uint32_t Btf::resolve(uint32_t id) const {
  State& s = state();
  if (!s.t.ok()) return id;
  for (int depth = 0; id != 0 && depth < kMaxDepth; depth++) {
    const btf_type* t = s.t.type(id);
    if (!t) return id;
    if (!(btf_is_mod(t) || btf_is_typedef(t))) return id;  // btf_is_mod: volatile/const/restrict/type_tag
    id = t->type;
  }
  return id;
}

std::optional<BtfType> Btf::type(uint32_t id) const {
  State& s = state();
  if (!s.t.ok() || id >= s.t.count()) return std::nullopt;
  id = resolve(id);
  BtfType r;
  r.id = id;
  if (id == 0) return r;  // void
  const btf_type* t = s.t.type(id);
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
      long sz = s.t.size_of(id);
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
  if (!s.t.ok() || id == 0 || id >= s.t.count()) return std::nullopt;
  uint32_t r = resolve(id);
  if (r == 0) return std::nullopt;
  const btf_type* t = s.t.type(r);
  if (btf_is_func(t) || btf_is_func_proto(t) || btf_is_fwd(t)) return std::nullopt;
  long sz = s.t.size_of(r);
  if (sz < 0) return std::nullopt;
  return static_cast<uint32_t>(sz);
}

namespace {

std::string name_rec(const TypeReader& b, uint32_t id, int depth);

std::string proto_text(const TypeReader& b, const btf_type* t, std::string_view inner, int depth) {
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

std::string name_rec(const TypeReader& b, uint32_t id, int depth) {
  if (id == 0) return "void";
  if (depth > kMaxDepth) return "?";
  const btf_type* t = b.type(id);
  if (!t) return "?";
  std::string nm = b.str(t->name_off);
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
      const btf_type* pt = b.type(t->type);
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
      const btf_type* tt = t->type ? b.type(t->type) : nullptr;
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
  if (!s.t.ok()) return id == 0 ? "void" : "?";
  if (id >= s.t.count()) return "?";
  return name_rec(s.t, id, 0);
}

uint32_t Btf::next_id() const {
  State& s = state();
  return s.t.ok() ? s.t.count() : 1;
}

Result<void> Btf::add_types(const std::vector<BtfNewType>& types) {
  State& s = state();
  if (s.local_start == UINT32_MAX) {
    // libbpf builds split BTF on its own object of the kernel's types: made
    // now, from the bytes already read (only scripts with C definitions pay
    // for this copy).
    if (!s.btf && s.t.ok()) {
      auto [data, size] = s.t.bytes();
      s.btf = btf__new(data, static_cast<uint32_t>(size));
      if (!s.btf) return std::unexpected(Error{errno, std::string("btf__new: ") + std::strerror(errno)});
    }
    struct btf* split = btf__new_empty_split(s.btf);  // standalone when s.btf is null
    if (!split) return std::unexpected(Error{errno, std::string("btf__new_empty_split: ") + std::strerror(errno)});
    s.base = s.btf;
    s.btf = split;
    s.t.use(split);
    s.local_start = btf__type_cnt(split);
  }
  // Arrays need an index type; BTF convention is "int", and nothing here reads it.
  int index_type = btf__find_by_name_kind(s.btf, "int", BTF_KIND_INT);
  if (index_type < 0) index_type = 0;
  const uint32_t first = s.t.count();
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
  s.enumerators_asked.clear();
  for (NameIndex* index : {&s.structs, &s.unions, &s.enums, &s.typedefs, &s.scalars, &s.enumerators}) index->clear();
  return {};
}

std::optional<uint32_t> Btf::find_struct(std::string_view name) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  bool is_struct = false, is_union = false;
  name = strip_prefix(name, "struct ", is_struct);
  if (!is_struct) name = strip_prefix(name, "union ", is_union);
  if (!is_union)
    if (auto id = s.lookup(kComposite, s.structs, name)) return id;
  if (!is_struct) return s.lookup(kComposite, s.unions, name);
  return std::nullopt;
}

std::optional<uint32_t> Btf::find_type(std::string_view name) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  bool had = false;
  if (name.starts_with("struct ") || name.starts_with("union ")) return find_struct(name);
  std::string_view rest = strip_prefix(name, "enum ", had);
  if (had) return s.lookup(kEnums, s.enums, rest);
  if (auto id = s.lookup(kNamed, s.typedefs, name)) return id;
  if (auto id = s.lookup(kNamed, s.scalars, name)) return id;
  if (auto id = find_struct(name)) return id;
  return s.lookup(kEnums, s.enums, name);
}

namespace {

// Walks the members of `id` (resolved struct/union) into anonymous nested
// ones. `visit` returns true to stop.
template <typename F>
bool walk_members(const TypeReader& b, uint32_t id, uint32_t base, int depth, F&& visit) {
  if (depth > kMaxDepth) return false;
  const btf_type* t = b.type(id);
  if (!t || !btf_is_composite(t)) return false;
  const btf_member* m = btf_members(t);
  for (uint32_t i = 0; i < btf_vlen(t); i++) {
    uint32_t off = base + btf_member_bit_offset(t, i);
    uint32_t bits = btf_member_bitfield_size(t, i);
    std::string_view nm = b.str(m[i].name_off);
    if (nm.empty()) {
      // Anonymous: a nested struct/union (possibly behind const/typedef) is flattened.
      uint32_t r = m[i].type;
      for (int d = 0; r && d < kMaxDepth; d++) {
        const btf_type* rt = b.type(r);
        if (!rt || !(btf_is_mod(rt) || btf_is_typedef(rt))) break;
        r = rt->type;
      }
      if (r && walk_members(b, r, off, depth + 1, visit)) return true;
      continue;
    }
    if (bits == 0) {
      // Old-style bitfield (no kflag): the int type carries offset and width.
      uint32_t r = m[i].type;
      const btf_type* rt = b.type(r);
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
  if (!s.t.ok() || struct_id == 0 || struct_id >= s.t.count() || name.empty()) return std::nullopt;
  std::optional<BtfMember> found;
  walk_members(s.t, resolve(struct_id), 0, 0, [&](BtfMember&& m) {
    if (m.name != name) return false;
    found = std::move(m);
    return true;
  });
  return found;
}

std::vector<BtfMember> Btf::members(uint32_t struct_id) const {
  State& s = state();
  std::vector<BtfMember> out;
  if (!s.t.ok() || struct_id == 0 || struct_id >= s.t.count()) return out;
  walk_members(s.t, resolve(struct_id), 0, 0, [&](BtfMember&& m) {
    out.push_back(std::move(m));
    return false;
  });
  return out;
}

std::optional<int64_t> Btf::enum_value(std::string_view name) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  auto found = s.lookup_enumerator(name);
  if (!found) return std::nullopt;
  const btf_type* t = s.t.type(found->first);
  uint32_t i = found->second;
  if (btf_is_enum64(t)) return static_cast<int64_t>(btf_enum64_value(btf_enum64(t) + i));
  int32_t v = btf_enum(t)[i].val;
  // Unsigned 32-bit enums (kflag clear) keep values above INT32_MAX positive.
  if (!btf_kflag(t)) return static_cast<int64_t>(static_cast<uint32_t>(v));
  return v;
}

std::optional<uint32_t> Btf::enum_of(std::string_view name) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  auto found = s.lookup_enumerator(name);
  if (!found) return std::nullopt;
  return found->first;
}

std::optional<std::string> Btf::enumerator_name(uint32_t enum_id, int64_t value) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  const btf_type* t = s.t.type(resolve(enum_id));
  if (!t) return std::nullopt;
  if (btf_is_enum64(t)) {
    const struct btf_enum64* e = btf_enum64(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i)
      if (static_cast<int64_t>(btf_enum64_value(e + i)) == value) return std::string(s.t.str(e[i].name_off));
  } else if (btf_is_enum(t)) {
    const struct btf_enum* e = btf_enum(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      int64_t v = btf_kflag(t) ? e[i].val : static_cast<int64_t>(static_cast<uint32_t>(e[i].val));
      if (v == value || static_cast<int32_t>(v) == value) return std::string(s.t.str(e[i].name_off));
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> Btf::find_var(std::string_view name) const {
  State& s = state();
  if (!s.t.ok() || name.empty()) return std::nullopt;
  int id = s.t.find(name, BTF_KIND_VAR);
  if (id <= 0) return std::nullopt;
  return static_cast<uint32_t>(id);
}

std::optional<uint32_t> Btf::find_func(std::string_view name) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  if (name.empty()) return std::nullopt;
  return s.find_func(name);
}

namespace {

std::vector<BtfParam> params_of(const TypeReader& b, const btf_type* proto, uint32_t skip) {
  std::vector<BtfParam> out;
  const btf_param* p = btf_params(proto);
  for (uint32_t i = skip; i < btf_vlen(proto); i++) {
    if (p[i].type == 0) break;  // varargs
    std::string nm = b.str(p[i].name_off);
    if (nm.empty()) nm = "arg" + std::to_string(i - skip);
    out.push_back(BtfParam{std::move(nm), p[i].type});
  }
  return out;
}

}  // namespace

namespace {

// A FUNC's prototype, or nullptr.
const btf_type* func_proto(const TypeReader& t, uint32_t func_id) {
  if (!t.ok() || func_id == 0 || func_id >= t.count()) return nullptr;
  const btf_type* f = t.type(func_id);
  if (!btf_is_func(f)) return nullptr;
  const btf_type* proto = t.type(f->type);
  return proto && btf_is_func_proto(proto) ? proto : nullptr;
}

}  // namespace

std::optional<std::vector<BtfParam>> Btf::func_params(uint32_t func_id) const {
  State& s = state();
  const btf_type* proto = func_proto(s.t, func_id);
  if (!proto) return std::nullopt;
  return params_of(s.t, proto, 0);
}

std::optional<uint32_t> Btf::func_return(uint32_t func_id) const {
  const btf_type* proto = func_proto(state().t, func_id);
  if (!proto) return std::nullopt;
  return proto->type;
}

std::vector<std::pair<std::string, uint32_t>> Btf::funcs_matching(std::string_view glob) const {
  std::vector<std::pair<std::string, uint32_t>> out;
  State& s = state();
  if (!s.t.ok()) return out;
  const uint32_t n = s.t.count();
  for (uint32_t id = 1; id < n; ++id) {
    const btf_type* t = s.t.type(id);
    if (!btf_is_func(t)) continue;
    std::string_view name = s.t.str(t->name_off);
    if (!name.empty() && glob_match(glob, name)) out.emplace_back(std::string(name), id);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            out.end());
  return out;
}

std::optional<uint32_t> Btf::tracepoint_btf_id(std::string_view event) const {
  State& s = state();
  if (!s.t.ok()) return std::nullopt;
  if (auto colon = event.rfind(':'); colon != std::string_view::npos) event.remove_prefix(colon + 1);
  if (event.empty()) return std::nullopt;
  std::string key = "btf_trace_" + std::string(event);
  return s.lookup(kNamed, s.typedefs, key);
}

std::optional<std::vector<BtfParam>> Btf::tracepoint_args(std::string_view event) const {
  auto td = tracepoint_btf_id(event);
  if (!td) return std::nullopt;
  State& s = state();
  // typedef btf_trace_<event> -> pointer -> func proto (void *, args...).
  const btf_type* t = s.t.type(*td);
  const btf_type* ptr = s.t.type(t->type);
  if (!ptr || !btf_is_ptr(ptr)) return std::nullopt;
  const btf_type* proto = s.t.type(ptr->type);
  if (!proto || !btf_is_func_proto(proto) || btf_vlen(proto) < 1) return std::nullopt;
  std::vector<BtfParam> args = params_of(s.t, proto, 1);

  // Names: the typedef's prototype has none; __bpf_trace_<event>(void *__data, args...)
  // has them. Take them only when the types line up.
  if (auto ev = event.rfind(':'); ev != std::string_view::npos) event.remove_prefix(ev + 1);
  if (auto fid = s.find_func("__bpf_trace_" + std::string(event))) {
    const btf_type* fp = s.t.type(s.t.type(*fid)->type);
    if (fp && btf_is_func_proto(fp) && btf_vlen(fp) >= args.size() + 1) {
      const btf_param* p = btf_params(fp);
      bool same = true;
      for (size_t i = 0; i < args.size() && same; i++)
        same = resolve(p[i + 1].type) == resolve(args[i].type_id);
      if (same)
        for (size_t i = 0; i < args.size(); i++)
          if (std::string_view nm = s.t.str(p[i + 1].name_off); !nm.empty())
            args[i].name = nm;
    }
  }
  return args;
}

namespace {

// The event class an event was declared with (DEFINE_EVENT): among the
// classes whose trace_event_raw_event_<class>(void *, args...) takes the
// event's argument types (its btf_trace_<event> prototype), the only one,
// or else the only one whose name and the event's extend each other
// (block_rq for block_rq_issue, sched_wakeup_template for sched_wakeup) and
// that is not itself an event.
// nullopt when that leaves none or several: a guessed layout would read
// wrong fields.
std::optional<uint32_t> event_class_struct(const Btf& btf, std::string_view event) {
  auto args = btf.tracepoint_args(event);
  if (!args) return std::nullopt;
  std::vector<std::pair<std::string, uint32_t>> classes;
  for (const auto& [fn, id] : btf.funcs_matching("trace_event_raw_event_*")) {
    auto params = btf.func_params(id);
    if (!params || params->size() != args->size() + 1) continue;
    bool same = true;
    for (size_t i = 0; i < args->size() && same; ++i)
      same = btf.resolve((*params)[i + 1].type_id) == btf.resolve((*args)[i].type_id);
    std::string cls = fn.substr(std::string_view("trace_event_raw_event_").size());
    if (auto sid = same ? btf.find_struct("trace_event_raw_" + cls) : std::nullopt) classes.emplace_back(cls, *sid);
  }
  if (classes.size() == 1) return classes[0].second;
  std::optional<uint32_t> found;
  for (const auto& [cls, sid] : classes) {
    if (!event.starts_with(cls) && !std::string_view(cls).starts_with(event)) continue;
    // A class named like another event is that event's own (TRACE_EVENT):
    // ext4_load_inode is not the class of ext4_load_inode_bitmap.
    if (btf.tracepoint_btf_id(cls)) continue;
    if (found) return std::nullopt;
    found = sid;
  }
  return found;
}

}  // namespace

Result<TracepointFormat> tracepoint_format_from_btf(const Btf& btf, std::string_view category,
                                                   std::string_view event) {
  const std::string name = "trace_event_raw_" + std::string(event);
  auto sid = btf.find_struct(name);
  if (!sid) sid = event_class_struct(btf, event);
  if (!sid) return std::unexpected(Error{ENOENT, "kernel BTF has no struct " + name + " (nor one event class for it)"});
  TracepointFormat out;
  out.category = std::string(category);
  out.event = std::string(event);
  for (const BtfMember& m : btf.members(*sid)) {
    if (m.name == "ent" || m.name == "__data") continue;  // the common header; the dynamic area
    TracepointField f;
    f.name = m.name;
    f.offset = m.bit_offset / 8;
    auto type = btf.type(m.type_id);
    if (!type) continue;
    f.size = btf.size_of(m.type_id).value_or(0);
    f.is_signed = type->is_signed;
    f.type = btf.type_name(m.type_id);
    for (auto [prefix, rel] : {std::pair{std::string_view("__data_loc_"), false}, {"__rel_loc_", true}}) {
      if (!f.name.starts_with(prefix)) continue;
      f.name.erase(0, prefix.size());
      f.data_loc = true;
      f.rel_loc = rel;
      f.type = "char[]";  // the format file's spelling for dynamic strings and arrays
    }
    if (type->kind == BtfType::Kind::Array && !f.data_loc) {
      f.array_len = type->count;
      auto elem = btf.type(type->target);
      f.is_signed = elem && elem->is_signed;
    }
    out.fields.push_back(std::move(f));
  }
  return out;
}

}  // namespace bpfscope::bpf
