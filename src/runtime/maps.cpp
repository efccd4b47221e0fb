#include "runtime/maps.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "bpf/libbpf_bpf.h"
#include "runtime/names.h"

namespace bpfscope::runtime {

namespace {

// A value of BTF type `id` at p, as bpftrace prints structs: `{ .a = 1, .b
// = { ... } }`, char arrays as strings, other arrays as [1,2], pointers in
// hex, bitfields by their bits.
output::Value decode_btf(const bpf::Btf& btf, uint32_t id, const uint8_t* p, int depth = 0) {
  const auto t = btf.type(id);
  if (!t || depth > 16) return output::Value::of_int(0);
  switch (t->kind) {
    case bpf::BtfType::Kind::Struct:
    case bpf::BtfType::Kind::Union: {
      std::vector<std::string> names;
      std::vector<output::Value> elems;
      for (const auto& m : btf.members(t->id)) {
        names.push_back(m.name);
        const uint8_t* f = p + m.bit_offset / 8;
        if (!m.bitfield_size) {
          elems.push_back(decode_btf(btf, m.type_id, f, depth + 1));
          continue;
        }
        uint64_t bits = 0;
        std::memcpy(&bits, f, std::min<uint32_t>(8, (m.bit_offset % 8 + m.bitfield_size + 7) / 8));
        bits = (bits >> (m.bit_offset % 8)) & (m.bitfield_size >= 64 ? ~0ull : (1ull << m.bitfield_size) - 1);
        elems.push_back(output::Value::of_uint(bits));
      }
      return output::Value::of_record(std::move(names), std::move(elems));
    }
    case bpf::BtfType::Kind::Array: {
      const auto elem = btf.type(t->target);
      if (!elem) return output::Value::of_array({});
      if (elem->kind == bpf::BtfType::Kind::Int && elem->size == 1 && elem->name.find("char") != std::string::npos)
        return output::Value::of_string(
            std::string(reinterpret_cast<const char*>(p), strnlen(reinterpret_cast<const char*>(p), t->size)));
      std::vector<output::Value> elems;
      for (uint32_t i = 0; i < t->count && elem->size; ++i)
        elems.push_back(decode_btf(btf, t->target, p + i * elem->size, depth + 1));
      return output::Value::of_array(std::move(elems));
    }
    case bpf::BtfType::Kind::Pointer: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return output::Value::of_pointer(v);
    }
    case bpf::BtfType::Kind::Int:
    case bpf::BtfType::Kind::Enum: {
      uint64_t v = 0;
      const uint32_t n = std::min<uint32_t>(t->size, 8);
      std::memcpy(&v, p, n);
      if (t->is_signed && n < 8 && (v >> (8 * n - 1) & 1)) v |= ~0ull << (8 * n);
      return t->is_signed ? output::Value::of_int(static_cast<int64_t>(v)) : output::Value::of_uint(v);
    }
    default: return output::Value::of_int(0);
  }
}

}  // namespace

output::Value decode(const sema::Type& t, const uint8_t* p, const Resolver* resolver) {
  switch (t.kind) {
    case sema::TypeKind::None: return {};
    case sema::TypeKind::Record:
      // A struct copied into a variable (print($s)); maps never hold one.
      if (const bpf::Btf* btf = resolver ? resolver->btf() : nullptr) return decode_btf(*btf, t.btf_id, p);
      return {};
    case sema::TypeKind::Stack:
    case sema::TypeKind::Symbol: {
      uint64_t first, pid;
      std::memcpy(&first, p, 8);
      std::memcpy(&pid, p + 8, 8);
      if (!resolver) return output::Value::of_string("");
      if (t.kind == sema::TypeKind::Stack)
        return resolver->stack(t.user, static_cast<int64_t>(first), static_cast<uint32_t>(pid), t.size, t.stack_mode);
      return output::Value::of_string(resolver->symbol(t.user, first, static_cast<uint32_t>(pid)));
    }
    case sema::TypeKind::Inet: {
      uint64_t family;
      std::memcpy(&family, p, 8);
      // ntop(af, addr, port) sets bit 48 and puts the port in bits 32-47.
      char buf[INET6_ADDRSTRLEN] = "";
      int af = (family & 0xffff) == AF_INET6 ? AF_INET6 : AF_INET;
      if (!inet_ntop(af, p + 8, buf, sizeof buf)) return output::Value::of_string("(?)");
      if (!(family >> 48 & 1)) return output::Value::of_string(buf);
      const auto port = static_cast<unsigned>(family >> 32 & 0xffff);
      return output::Value::of_string(af == AF_INET6 ? fmt::format("[{}]:{}", buf, port) : fmt::format("{}:{}", buf, port));
    }
    case sema::TypeKind::Array: {
      std::vector<output::Value> elems;
      const sema::Type& et = t.elems[0];
      for (uint32_t i = 0; i < t.size; ++i) {
        uint64_t v = 0;
        std::memcpy(&v, p + i * et.size, et.size);
        if (et.kind == sema::TypeKind::Bool) {
          elems.push_back(output::Value::of_bool(v != 0));
        } else if (et.is_signed) {
          int shift = 64 - static_cast<int>(et.size) * 8;
          elems.push_back(output::Value::of_int(shift ? static_cast<int64_t>(v << shift) >> shift : static_cast<int64_t>(v)));
        } else {
          elems.push_back(output::Value::of_uint(v));
        }
      }
      return output::Value::of_array(std::move(elems));
    }
    case sema::TypeKind::Buffer: {
      uint64_t len;
      std::memcpy(&len, p, 8);
      len = std::min<uint64_t>(len, t.size);
      return output::Value::of_buffer(std::string(reinterpret_cast<const char*>(p + 8), len));
    }
    case sema::TypeKind::MacAddr:
      return output::Value::of_string(fmt::format("{:02X}:{:02X}:{:02X}:{:02X}:{:02X}:{:02X}", p[0], p[1], p[2], p[3], p[4], p[5]));
    case sema::TypeKind::Timestamp: {
      uint64_t format, ns;
      std::memcpy(&format, p, 8);
      std::memcpy(&ns, p + 8, 8);
      return output::Value::of_string(resolver ? resolver->timestamp(format, ns) : "");
    }
    case sema::TypeKind::Named: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return output::Value::of_string(name_of(t.table, v));
    }
    case sema::TypeKind::Bool: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return output::Value::of_bool(v != 0);
    }
    case sema::TypeKind::Int: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      if (t.is_pointer) return output::Value::of_pointer(v);
      output::Value out = t.is_signed ? output::Value::of_int(static_cast<int64_t>(v)) : output::Value::of_uint(v);
      if (t.enum_id && resolver) {
        if (auto name = resolver->enumerator(t.enum_id, static_cast<int64_t>(v))) {
          out.is_enum = true;
          out.s = std::move(*name);
        }
      }
      return out;
    }
    case sema::TypeKind::String: {
      size_t n = strnlen(reinterpret_cast<const char*>(p), t.size);
      return output::Value::of_string(std::string(reinterpret_cast<const char*>(p), n));
    }
    case sema::TypeKind::Tuple: {
      std::vector<output::Value> elems;
      for (size_t i = 0; i < t.elems.size(); ++i) {
        const sema::Type& e = t.elems[i];
        const uint8_t* f = p + t.offsets[i];
        uint8_t word[8] = {};
        if (e.is_int() && e.field_size() < 8) {
          // A narrower integer field, extended to the 8 bytes decode() reads.
          std::memcpy(word, f, e.field_size());
          if (e.kind == sema::TypeKind::Int && e.is_signed && (f[e.field_size() - 1] & 0x80))
            std::memset(word + e.field_size(), 0xff, 8 - e.field_size());
          f = word;
        }
        elems.push_back(decode(e, f, resolver));
      }
      if (t.is_named_tuple()) return output::Value::of_record(t.names, std::move(elems));
      return output::Value::of_tuple(std::move(elems));
    }
  }
  std::unreachable();
}

namespace {

int64_t i64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

output::Value number(int64_t v, bool is_signed) {
  return is_signed ? output::Value::of_int(v) : output::Value::of_uint(static_cast<uint64_t>(v));
}

// The smallest (keep_min) or largest of the CPUs' words at `off` whose word
// at `set_off` is not 0: a CPU that recorded nothing has no value, and its
// zeros must not win. Kind::None when no CPU has one.
output::Value extreme(const std::vector<uint8_t>& value, int n, uint32_t stride, uint32_t off, uint32_t set_off,
                      bool keep_min, bool is_signed) {
  std::optional<int64_t> best;
  for (int c = 0; c < n; ++c) {
    const uint8_t* p = value.data() + c * stride;
    if (!i64(p + set_off)) continue;
    const int64_t v = i64(p + off);
    if (!best) {
      best = v;
      continue;
    }
    const bool less = is_signed ? v < *best : static_cast<uint64_t>(v) < static_cast<uint64_t>(*best);
    if (less == keep_min) best = v;
  }
  return best ? number(*best, is_signed) : output::Value{};
}

output::Aggregate aggregate(const sema::MapInfo& m, const std::vector<uint8_t>& value, int ncpus,
                            const Resolver* resolver) {
  output::Aggregate a;
  uint32_t stride = m.percpu ? sema::align8(m.value_size) : 0;
  int n = m.percpu ? ncpus : 1;
  switch (m.agg) {
    case output::AggKind::Plain: a.value = decode(m.value, value.data(), resolver); break;
    case output::AggKind::Count:
    case output::AggKind::Sum: {
      int64_t total = 0;
      for (int c = 0; c < n; ++c) total = output::wrapping_add(total, i64(value.data() + c * stride));
      a.value = m.value.is_signed || m.agg == output::AggKind::Count ? output::Value::of_int(total)
                                                                     : output::Value::of_uint(static_cast<uint64_t>(total));
      if (m.agg == output::AggKind::Count) a.value = output::Value::of_uint(static_cast<uint64_t>(total));
      break;
    }
    case output::AggKind::Min:
    case output::AggKind::Max:
      // {value, set}; a map no CPU has set reads 0.
      a.value = extreme(value, n, stride, 0, 8, m.agg == output::AggKind::Min, m.value.is_signed);
      if (a.value.kind == output::Value::Kind::None) a.value = number(0, m.value.is_signed);
      break;
    case output::AggKind::Avg:
    case output::AggKind::Stats:
      // {count, total} (Stats: then {min, max}, set where count is not 0).
      for (int c = 0; c < n; ++c) {
        a.count = output::wrapping_add(a.count, i64(value.data() + c * stride));
        a.total = output::wrapping_add(a.total, i64(value.data() + c * stride + 8));
      }
      if (m.agg == output::AggKind::Stats) {
        a.min = extreme(value, n, stride, 16, 0, true, m.value.is_signed);
        a.max = extreme(value, n, stride, 24, 0, false, m.value.is_signed);
      }
      break;
    case output::AggKind::Hist:
    case output::AggKind::LHist: {
      // {buckets..., sum}
      const uint32_t buckets = m.hist_buckets();
      a.buckets.assign(buckets, 0);
      for (int c = 0; c < n; ++c) {
        const uint8_t* p = value.data() + c * stride;
        for (uint32_t b = 0; b < buckets; ++b) a.buckets[b] += static_cast<uint64_t>(i64(p + b * 8));
        a.sum = output::wrapping_add(a.sum, i64(p + 8 * buckets));
      }
      break;
    }
    case output::AggKind::TSeries:
      a.series = output::tseries_of(m.tseries, m.value.is_signed, value.data(), n, stride);
      break;
  }
  return a;
}

std::string_view as_view(const std::vector<uint8_t>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The keys present now, in the map's order. A key that a probe deletes
// while the walk stands on it restarts the walk from the first key: the
// walk goes on past the keys it has seen, 8 walks of the map at most. Entries
// that probes add meanwhile may be missed, left for next time (deleting
// until the map is empty never ends when the probes count the bpf() calls
// of this very loop, as syscount does).
std::vector<std::vector<uint8_t>> present_keys(int fd, uint32_t key_size) {
  constexpr size_t kMaxWalks = 8;
  std::vector<std::vector<uint8_t>> keys;
  // Views of the keys' bytes in `keys`: a vector's move keeps its buffer, so
  // they stay valid as `keys` grows.
  std::unordered_set<std::string_view> seen;
  std::vector<uint8_t> prev, next(key_size);
  size_t steps = 0;
  while (bpf_map_get_next_key(fd, prev.empty() ? nullptr : prev.data(), next.data()) == 0) {
    if (!seen.contains(as_view(next))) {
      keys.push_back(next);
      seen.insert(as_view(keys.back()));
    }
    if (++steps > kMaxWalks * (keys.size() + 1)) break;  // restarted again and again
    prev = next;
  }
  return keys;
}

}  // namespace

namespace {

bool has_kernel_stack(const sema::Type& t) {
  if (t.kind == sema::TypeKind::Stack) return !t.user;
  return std::any_of(t.elems.begin(), t.elems.end(), has_kernel_stack);
}

// One entry per key as printed: the kernel keeps a stack id per distinct
// frame list, and two lists that differ only in the tracer's frames print
// the same stack.
void merge_equal_keys(output::MapSnapshot& snap) {
  std::unordered_map<std::string, size_t> seen;
  std::vector<std::pair<output::Value, output::Aggregate>> kept;
  kept.reserve(snap.entries.size());
  for (auto& e : snap.entries) {
    auto [it, added] = seen.try_emplace(output::key_text(e.first), kept.size());
    if (added)
      kept.push_back(std::move(e));
    else
      output::merge_aggregate(snap.kind, kept[it->second].second, e.second);
  }
  snap.entries = std::move(kept);
}

}  // namespace

output::MapSnapshot read_map(const sema::MapInfo& m, int fd, int ncpus, const Resolver* resolver) {
  output::MapSnapshot snap;
  snap.name = m.name;
  snap.kind = m.agg;
  snap.keyed = m.keyed;
  snap.value_signed = m.value.is_signed;
  snap.hist = m.hist;
  snap.tseries = m.tseries;
  std::vector<uint8_t> value(m.percpu ? sema::align8(m.value_size) * ncpus : m.value_size);
  auto keys = present_keys(fd, m.key_size);
  // bpftrace prints a tseries() map's keys in the order of their bytes.
  if (m.agg == output::AggKind::TSeries) std::sort(keys.begin(), keys.end());
  for (const auto& key : keys) {
    if (bpf_map_lookup_elem(fd, key.data(), value.data()) != 0) continue;  // deleted by a probe meanwhile
    output::Value k = m.keyed ? decode(m.key, key.data(), resolver) : output::Value{};
    snap.entries.emplace_back(std::move(k), aggregate(m, value, ncpus, resolver));
  }
  if (m.keyed && has_kernel_stack(m.key)) merge_equal_keys(snap);
  return snap;
}

void add_zero_scalar(output::MapSnapshot& snap, const sema::MapInfo& m, int ncpus, const Resolver* resolver) {
  if (m.keyed || !snap.entries.empty() || output::is_histogram(m.agg) || m.agg == output::AggKind::TSeries ||
      m.value.kind == sema::TypeKind::None)
    return;
  const std::vector<uint8_t> zeros(m.percpu ? sema::align8(m.value_size) * ncpus : m.value_size);
  snap.entries.emplace_back(output::Value{}, aggregate(m, zeros, ncpus, resolver));
}

void clear_map(int fd, uint32_t key_size) {
  for (const auto& k : present_keys(fd, key_size)) bpf_map_delete_elem(fd, k.data());
}

void zero_map(const sema::MapInfo& m, int fd, int into_fd, int ncpus) {
  std::vector<uint8_t> zeros(m.percpu ? sema::align8(m.value_size) * ncpus : m.value_size);
  for (const auto& k : present_keys(fd, m.key_size)) {
    bpf_map_delete_elem(fd, k.data());
    bpf_map_update_elem(into_fd, k.data(), zeros.data(), BPF_NOEXIST);
  }
}

}  // namespace bpfscope::runtime
