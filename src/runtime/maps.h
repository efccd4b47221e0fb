// Reading bpfscope's maps back into output values. Internal to the runtime.
#pragma once

#include <string>
#include <vector>

#include "output/output.h"
#include "sema/sema.h"

namespace bpfscope::runtime {

// Decodes a value of type t stored at p (the layout of sema/types.h).
output::Value decode(const sema::Type& t, const uint8_t* p);

// Reads every entry of a map, summing per-CPU values.
output::MapSnapshot read_map(const sema::MapInfo& info, int fd, int ncpus);

// clear(): deletes every key. zero(): sets every value to zero.
void clear_map(int fd, uint32_t key_size);
void zero_map(const sema::MapInfo& info, int fd, int ncpus);

}  // namespace bpfscope::runtime
