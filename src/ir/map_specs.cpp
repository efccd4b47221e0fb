#include "ir/ir.h"

#include <algorithm>

#include <fmt/format.h>

#include "bpf/bpf.h"

namespace bpfscope::ir {

std::vector<MapSpec> map_specs(const sema::TypedProgram& p, const Module& m, uint32_t ringbuf_bytes) {
  std::vector<MapSpec> specs;
  for (const auto& info : p.maps) {
    bpf_map_type type = info.percpu ? (info.lru ? BPF_MAP_TYPE_LRU_PERCPU_HASH : BPF_MAP_TYPE_PERCPU_HASH)
                                    : (info.lru ? BPF_MAP_TYPE_LRU_HASH : BPF_MAP_TYPE_HASH);
    specs.push_back({type, info.name.substr(1), info.key_size, info.value_size, info.max_entries});
  }
  specs.resize(m.support.skb_output + 1, MapSpec{BPF_MAP_TYPE_UNSPEC, "", 0, 0, 0});
  specs[m.support.ringbuf] = {BPF_MAP_TYPE_RINGBUF, "ringbuf", 0, 0, ringbuf_bytes};
  // One entry per program (Lowerer::enter_scratch).
  specs[m.support.scratch] = {BPF_MAP_TYPE_PERCPU_ARRAY, "scratch", 4, m.scratch_size,
                              std::max<uint32_t>(1, static_cast<uint32_t>(m.functions.size()))};
  specs[m.support.zero] = {BPF_MAP_TYPE_ARRAY, "zero", 4, m.zero_size, 1};
  specs[m.support.lost] = {BPF_MAP_TYPE_ARRAY, "lost", 4, 8, 1, BPF_F_MMAPABLE};
  specs[m.support.failed] = {BPF_MAP_TYPE_PERCPU_ARRAY, "failed", 4, 8,
                             std::max<uint32_t>(1, static_cast<uint32_t>(p.maps.size()))};
  specs[m.support.control] = {BPF_MAP_TYPE_ARRAY, "control", 4,
                              static_cast<uint32_t>(Module::generation_offset(m.swapped.size())), 1};
  // Stack maps stay tiny unless the program takes stacks.
  specs[m.support.kstacks] = {BPF_MAP_TYPE_STACK_TRACE, "kstacks", 4, 8 * kMaxStackFrames,
                              p.uses_kstack ? p.config.max_map_keys : 1};
  specs[m.support.ustacks] = {BPF_MAP_TYPE_STACK_TRACE, "ustacks", 4, 8 * kMaxStackFrames,
                              p.uses_ustack ? p.config.max_map_keys : 1};
  // struct bpf_stack_build_id per frame: s32 status, u8 build_id[20], u64 offset or ip.
  specs[m.support.build_id_stacks] = {BPF_MAP_TYPE_STACK_TRACE, "bidstacks", 4, kBuildIdFrameSize * kMaxStackFrames,
                                      p.uses_build_id_stack ? p.config.max_map_keys : 1, BPF_F_STACK_BUILD_ID};
  // LRU: past its size, a process forgotten and seen again is noted again.
  specs[m.support.ustack_pids] = {BPF_MAP_TYPE_LRU_HASH, "ustack_pids", 4, 4,
                                  p.uses_ustack ? p.config.max_map_keys : 1};
  // One slot per possible CPU, which the runtime fills in; not created
  // (UNSPEC) without skboutput().
  if (!p.skboutputs.empty())
    specs[m.support.skb_output] = {BPF_MAP_TYPE_PERF_EVENT_ARRAY, "skb_output", 4, 4,
                                   static_cast<uint32_t>(std::max(1, bpf::possible_cpus()))};
  for (uint32_t map : m.swapped) specs.push_back(specs[map]);
  return specs;
}

std::expected<std::vector<bpf::Fd>, std::string> create_maps(const std::vector<MapSpec>& specs) {
  std::vector<bpf::Fd> fds;
  for (const auto& spec : specs) {
    if (spec.type == BPF_MAP_TYPE_UNSPEC) {
      fds.emplace_back();
      continue;
    }
    auto fd = bpf::create_map(spec.type, spec.name, spec.key_size, spec.value_size, spec.max_entries, spec.flags);
    if (!fd) return std::unexpected(fmt::format("creating map {}: {}", spec.name, fd.error().message));
    fds.push_back(std::move(*fd));
  }
  return fds;
}

}  // namespace bpfscope::ir
