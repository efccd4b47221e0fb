// Reading bpfscope's maps back into output values. Internal to the runtime.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "output/output.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

// Names stacks, symbols and timestamps when values are decoded (the
// session's symbol caches, stack maps and strftime formats).
class Resolver {
 public:
  virtual ~Resolver() = default;
  // A stack value (output::Value::of_stack): its text in bpftrace's layout,
  // "\n" then one "        sym+off\n" line per frame, and its frames.
  virtual output::Value stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const = 0;
  virtual std::string symbol(bool user, uint64_t addr, uint32_t pid) const = 0;
  // strftime(): format `format` (an index into the program's formats) of a
  // boot-clock time.
  virtual std::string timestamp(uint64_t format, uint64_t boot_ns) const {
    (void)format;
    (void)boot_ns;
    return "";
  }
  // The enumerator of BTF enum `enum_id` with value v, if it has one.
  virtual std::optional<std::string> enumerator(uint32_t enum_id, int64_t v) const {
    (void)enum_id;
    (void)v;
    return std::nullopt;
  }
  // The program's BTF, which lays out the structs values hold (print($s)).
  virtual const bpf::Btf* btf() const { return nullptr; }
};

// Decodes a value of type t stored at p (the layout of sema/types.h).
output::Value decode(const sema::Type& t, const uint8_t* p, const Resolver* resolver = nullptr);

// Reads every entry of a map, summing per-CPU values.
output::MapSnapshot read_map(const sema::MapInfo& info, int fd, int ncpus, const Resolver* resolver = nullptr);

// print(@m) of a scalar map that holds no value yet: its zero value as the
// one entry (bpftrace 0.26 prints `@: 0`; histograms and the maps printed at
// exit stay empty).
void add_zero_scalar(output::MapSnapshot& snap, const sema::MapInfo& info, int ncpus,
                     const Resolver* resolver = nullptr);

// clear(): deletes every key.
void clear_map(int fd, uint32_t key_size);
// zero(): deletes every key of map fd and puts it in map into_fd (fd itself,
// or a swapped map's twin) with a zero value, unless a probe has put it
// there already.
void zero_map(const sema::MapInfo& info, int fd, int into_fd, int ncpus);

}  // namespace bpfscope::runtime
