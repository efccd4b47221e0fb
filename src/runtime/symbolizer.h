// Names the stacks and symbols of decoded values: kernel frames through
// /proc/kallsyms, user frames through /proc/PID/maps and the mapped files'
// ELF symbols. Internal to the runtime.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/maps.h"
#include "symbols/symbols.h"

namespace bpfscope::runtime {

class Symbolizer : public Resolver {
 public:
  Symbolizer(int kstack_fd, int ustack_fd, int build_id_fd)
      : kstack_fd_(kstack_fd), ustack_fd_(ustack_fd), build_id_fd_(build_id_fd) {}

  output::Value stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const override;
  std::string symbol(bool user, uint64_t addr, uint32_t pid) const override;
  // Re-reads the mappings of a live process (the -c child or -p target), so
  // that its user stacks still symbolize when the maps print after it exited.
  // Keeps the previous snapshot if the process is gone.
  void refresh(uint32_t pid);
  // A process whose first user stack was just taken (ir::kUstackPidRecord):
  // its mappings are read now, while it exists, so that its stacks are named
  // when the maps print after it exited.
  void remember(uint32_t pid);

 private:
  struct Mapping {
    uint64_t start, end, offset;
    std::string path;
  };
  static std::vector<Mapping> read_maps(uint32_t pid);
  const std::vector<Mapping>& maps_of(uint32_t pid) const;
  std::string user_frame(uint32_t pid, uint64_t addr, bool with_offset, std::string* path = nullptr) const;

  output::Value build_id_stack(int64_t id, uint32_t limit) const;
  // Before the first kernel name: reads /proc/kallsyms keeping only the
  // symbols of the frames in the kernel stack map (offcputime prints its
  // stacks at exit; the whole table is ~120k symbols).
  void prepare_kernel() const;

  int kstack_fd_, ustack_fd_, build_id_fd_;
  symbols::KernelSymbols kernel_;
  mutable bool kernel_prepared_ = false;
  mutable std::map<uint32_t, std::vector<Mapping>> maps_;  // by pid, read once (or refreshed)
  mutable std::set<uint32_t> reread_;  // pids whose mappings were read again after a miss
};

}  // namespace bpfscope::runtime
