// Reading bpfscope's maps back into output values. Internal to the runtime.
#pragma once

#include <string>
#include <vector>

#include "output/output.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

// Names stacks and symbols when values are decoded (the session's symbol
// caches and stack maps).
class Resolver {
 public:
  virtual ~Resolver() = default;
  // bpftrace's layout: "\n" then one "        sym+off\n" line per frame.
  virtual std::string stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const = 0;
  virtual std::string symbol(bool user, uint64_t addr, uint32_t pid) const = 0;
};

// Decodes a value of type t stored at p (the layout of sema/types.h).
output::Value decode(const sema::Type& t, const uint8_t* p, const Resolver* resolver = nullptr);

// Reads every entry of a map, summing per-CPU values.
output::MapSnapshot read_map(const sema::MapInfo& info, int fd, int ncpus, const Resolver* resolver = nullptr);

// clear(): deletes every key. zero(): sets every value to zero.
void clear_map(int fd, uint32_t key_size);
void zero_map(const sema::MapInfo& info, int fd, int ncpus);

}  // namespace bpfscope::runtime
