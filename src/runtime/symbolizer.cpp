#include "runtime/symbolizer.h"

#include <algorithm>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bpf/libbpf_bpf.h"
#include "ir/ir.h"

namespace bpfscope::runtime {

output::Value Symbolizer::stack(bool user, int64_t id, uint32_t pid, uint32_t limit, sema::StackMode mode) const {
  const auto of = user ? output::Value::StackOf::User : output::Value::StackOf::Kernel;
  // bcc's layout: "    name" lines, no leading newline (an empty stack is empty).
  const bool bcc = mode == sema::StackMode::Bcc;
  const std::string empty = bcc ? "" : "\n";
  if (id < 0) return output::Value::of_stack(of, empty, {});  // the kernel could not take the stack (bpf_get_stackid failed)
  if (mode == sema::StackMode::BuildId) return build_id_stack(id, limit);
  if (!user && mode != sema::StackMode::Raw) prepare_kernel();
  uint64_t frames[ir::kMaxStackFrames] = {};
  uint32_t key = static_cast<uint32_t>(id);
  if (bpf_map_lookup_elem(user ? ustack_fd_ : kstack_fd_, &key, frames) != 0) return output::Value::of_stack(of, empty, {});
  std::string out = empty;
  std::vector<std::string> names;
  uint32_t n = 0;
  while (n < ir::kMaxStackFrames && n < limit && frames[n] != 0) ++n;
  // A kernel stack taken in a probe starts with the tracer's own frames (its
  // BPF program, the kernel's call into it), whose number depends on how
  // many programs share the event: left out, a stack reads the same however
  // many tracers run, and a map keyed by it has one entry per real stack.
  uint32_t first = 0;
  if (!user && mode != sema::StackMode::Raw)
    while (first < n && output::tracer_frame(symbol(false, frames[first], pid))) ++first;
  for (uint32_t i = first; i < n; ++i) {
    uint64_t addr = frames[i];
    if (mode == sema::StackMode::Raw) {
      out += fmt::format("{:x}\n", addr);
      names.push_back(fmt::format("{:x}", addr));
      continue;
    }
    names.push_back(symbol(user, addr, pid));
    if (bcc) {
      out += fmt::format("    {}\n", names.back());
      continue;
    }
    std::string path;
    std::string name = user ? user_frame(pid, addr, true, &path) : kernel_.with_offset(addr);
    if (mode == sema::StackMode::Bpftrace)
      out += fmt::format("        {}\n", name);
    else if (user && !path.empty())
      out += fmt::format("\t{:x} {} ({})\n", addr, name, path);
    else
      out += fmt::format("\t{:x} {}\n", addr, name);
  }
  return output::Value::of_stack(of, std::move(out), std::move(names));
}

void Symbolizer::prepare_kernel() const {
  if (kernel_prepared_ || kstack_fd_ < 0) return;
  kernel_prepared_ = true;
  std::vector<uint64_t> addrs;
  uint32_t key = 0, next = 0;
  uint64_t frames[ir::kMaxStackFrames] = {};
  bool first = true;
  while (bpf_map_get_next_key(kstack_fd_, first ? nullptr : &key, &next) == 0) {
    first = false;
    key = next;
    if (bpf_map_lookup_elem(kstack_fd_, &key, frames) != 0) continue;
    for (uint64_t a : frames) {
      if (a == 0) break;
      addrs.push_back(a);
    }
  }
  if (!addrs.empty()) kernel_.load_only(std::move(addrs));
}

std::string Symbolizer::symbol(bool user, uint64_t addr, uint32_t pid) const {
  if (!user) return kernel_.name(addr).value_or(symbols::hex_address(addr));
  return user_frame(pid, addr, false);
}

std::vector<Symbolizer::Mapping> Symbolizer::read_maps(uint32_t pid) {
  std::vector<Mapping> maps;
  std::ifstream f(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(f, line)) {
    // start-end perms offset dev inode path
    Mapping m{};
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %*s %*s %n", &m.start, &m.end, perms, &m.offset, &path_at) < 4)
      continue;
    if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) m.path = line.substr(path_at);
    if (perms[2] == 'x' && m.path.starts_with("/")) maps.push_back(std::move(m));
  }
  return maps;
}

const std::vector<Symbolizer::Mapping>& Symbolizer::maps_of(uint32_t pid) const {
  auto it = maps_.find(pid);
  if (it != maps_.end()) return it->second;
  return maps_[pid] = read_maps(pid);
}

void Symbolizer::refresh(uint32_t pid) {
  auto maps = read_maps(pid);
  if (!maps.empty()) maps_[pid] = std::move(maps);
}

void Symbolizer::remember(uint32_t pid) {
  // The pid may have been used before by a process that exited: the new one's
  // mappings replace the old.
  refresh(pid);
  reread_.erase(pid);
}

std::string Symbolizer::user_frame(uint32_t pid, uint64_t addr, bool with_offset, std::string* path) const {
  // Mappings read before the process exec'd (a -c child is read as soon as
  // it exists) do not cover its new image: on the first address they miss,
  // read them again (once per process: frames in [vdso] or anonymous code
  // miss every time).
  auto covers = [addr](const std::vector<Mapping>& maps) {
    return std::any_of(maps.begin(), maps.end(), [addr](const Mapping& m) { return addr >= m.start && addr < m.end; });
  };
  if (!covers(maps_of(pid)) && reread_.insert(pid).second) {
    if (auto fresh = read_maps(pid); !fresh.empty()) maps_[pid] = std::move(fresh);
  }
  for (const auto& m : maps_of(pid)) {
    if (addr < m.start || addr >= m.end) continue;
    if (path) *path = m.path;
    auto elf = symbols::cached_elf(m.path);
    if (!elf) break;
    auto vaddr = (*elf)->offset_to_vaddr(addr - m.start + m.offset);
    if (!vaddr) break;
    // Unknown frames print as the runtime address, as bpftrace does.
    if (!(*elf)->name_at(*vaddr)) break;
    return with_offset ? (*elf)->name_at_with_offset(*vaddr) : *(*elf)->name_at(*vaddr);
  }
  return symbols::hex_address(addr);
}

// ustack(build_id): a frame whose file had a build id prints as the id in
// hex and the offset in the file; the others as their address.
output::Value Symbolizer::build_id_stack(int64_t id, uint32_t limit) const {
  struct Frame {  // struct bpf_stack_build_id
    int32_t status;
    uint8_t build_id[20];
    uint64_t offset_or_ip;
  };
  static_assert(sizeof(Frame) == ir::kBuildIdFrameSize);
  std::vector<Frame> frames(ir::kMaxStackFrames);
  uint32_t key = static_cast<uint32_t>(id);
  const auto of = output::Value::StackOf::User;
  if (bpf_map_lookup_elem(build_id_fd_, &key, frames.data()) != 0) return output::Value::of_stack(of, "\n", {});
  std::string out = "\n";
  std::vector<std::string> names;
  for (uint32_t i = 0; i < ir::kMaxStackFrames && i < limit; ++i) {
    const Frame& f = frames[i];
    if (f.status == BPF_STACK_BUILD_ID_EMPTY) break;
    if (f.status == BPF_STACK_BUILD_ID_VALID) {
      std::string frame;
      for (uint8_t b : f.build_id) frame += fmt::format("{:02x}", b);
      frame += fmt::format(" 0x{:02x}", f.offset_or_ip);
      names.push_back(frame);
    } else {
      names.push_back(fmt::format("{:x}", f.offset_or_ip));
    }
    out += names.back() + "\n";
  }
  return output::Value::of_stack(of, std::move(out), std::move(names));
}

}  // namespace bpfscope::runtime
