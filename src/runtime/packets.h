// skboutput()'s packets: samples of a perf event array, written to pcap
// files. Internal to the runtime.
#pragma once

#include <cstdint>
#include <cstdio>
#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "sema/sema.h"

struct perf_buffer;

namespace bpfscope::runtime {

// The header each sample starts with (the lowering of skboutput()):
// [u64 call][u64 boot-clock ns][u64 bytes of packet], then the bytes.
inline constexpr size_t kPacketHeader = 24;

class PacketWriter {
 public:
  // Creates each of the program's skboutput files afresh with its pcap
  // header, and reads the samples of the perf event array map_fd.
  static std::expected<std::unique_ptr<PacketWriter>, std::string> open(int map_fd, const sema::TypedProgram& p);
  ~PacketWriter();
  PacketWriter(const PacketWriter&) = delete;
  PacketWriter& operator=(const PacketWriter&) = delete;

  int epoll_fd() const;
  // Writes the samples waiting in the buffers.
  void consume();
  // Samples the kernel dropped (a full per-CPU buffer), so far.
  uint64_t lost() const { return lost_; }

 private:
  PacketWriter(const sema::TypedProgram& p) : calls_(p.skboutputs) {}
  void write(const uint8_t* data, size_t size);

  std::vector<sema::TypedProgram::SkbOutput> calls_;
  std::vector<FILE*> files_;
  perf_buffer* pb_ = nullptr;
  uint64_t lost_ = 0;
  int64_t boot_to_real_ns_ = 0;  // CLOCK_REALTIME - CLOCK_BOOTTIME
};

}  // namespace bpfscope::runtime
