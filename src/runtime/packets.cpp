#include "runtime/packets.h"

#include "runtime/clock.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace bpfscope::runtime {
namespace {

// The pcap file format: a file header, then per packet a record header and
// the bytes. Nanosecond timestamps; the packets are raw IP (LINKTYPE_RAW).
constexpr uint32_t kPcapMagicNs = 0xa1b23c4d;
constexpr uint32_t kLinktypeRaw = 101;
constexpr uint32_t kSnapLen = 65535;

struct PcapFileHeader {
  uint32_t magic = kPcapMagicNs;
  uint16_t version_major = 2, version_minor = 4;
  int32_t thiszone = 0;
  uint32_t sigfigs = 0;
  uint32_t snaplen = kSnapLen;
  uint32_t linktype = kLinktypeRaw;
};
static_assert(sizeof(PcapFileHeader) == 24);

struct PcapRecordHeader {
  uint32_t ts_sec, ts_nsec, incl_len, orig_len;
};

}  // namespace

std::expected<std::unique_ptr<PacketWriter>, std::string> PacketWriter::open(int map_fd, const sema::TypedProgram& p) {
  std::unique_ptr<PacketWriter> w(new PacketWriter(p));
  w->boot_to_real_ns_ = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_BOOTTIME);
  for (const auto& path : p.skboutput_files) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) return std::unexpected(fmt::format("skboutput: cannot create {}: {}", path, strerror(errno)));
    w->files_.push_back(f);
    PcapFileHeader h;
    fwrite(&h, sizeof h, 1, f);
  }
  auto on_sample = [](void* ctx, int /*cpu*/, void* data, __u32 size) {
    static_cast<PacketWriter*>(ctx)->write(static_cast<const uint8_t*>(data), size);
  };
  auto on_lost = [](void* ctx, int /*cpu*/, __u64 n) { static_cast<PacketWriter*>(ctx)->lost_ += n; };
  // 64 pages per CPU, as bpftrace's default for its perf buffers.
  w->pb_ = perf_buffer__new(map_fd, 64, on_sample, on_lost, w.get(), nullptr);
  if (!w->pb_) return std::unexpected(fmt::format("skboutput: perf buffer: {}", strerror(errno)));
  return w;
}

PacketWriter::~PacketWriter() {
  if (pb_) perf_buffer__free(pb_);
  for (FILE* f : files_) fclose(f);
}

int PacketWriter::epoll_fd() const { return perf_buffer__epoll_fd(pb_); }

void PacketWriter::consume() { perf_buffer__consume(pb_); }

void PacketWriter::write(const uint8_t* data, size_t size) {
  if (size < kPacketHeader) return;
  uint64_t call, boot_ns, bytes;
  std::memcpy(&call, data, 8);
  std::memcpy(&boot_ns, data + 8, 8);
  std::memcpy(&bytes, data + 16, 8);
  if (call >= calls_.size() || kPacketHeader + bytes > size) return;
  const auto& c = calls_[call];
  if (c.offset >= bytes) return;
  const uint32_t len = static_cast<uint32_t>(bytes - c.offset);
  const uint64_t ns = boot_ns + static_cast<uint64_t>(boot_to_real_ns_);
  PcapRecordHeader r{static_cast<uint32_t>(ns / 1000000000), static_cast<uint32_t>(ns % 1000000000), len, len};
  FILE* f = files_[c.file];
  fwrite(&r, sizeof r, 1, f);
  fwrite(data + kPacketHeader + c.offset, 1, len, f);
  fflush(f);
}

}  // namespace bpfscope::runtime
