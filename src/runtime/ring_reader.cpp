#include "runtime/ring_reader.h"

#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace bpfscope::runtime {

namespace {

// The kernel's record header: the length, its two flag bits, then 4 bytes
// (the page offset the kernel uses to find the buffer again).
constexpr uint32_t kBusy = BPF_RINGBUF_BUSY_BIT;
constexpr uint32_t kDiscard = BPF_RINGBUF_DISCARD_BIT;
constexpr size_t kHeader = BPF_RINGBUF_HDR_SZ;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

std::expected<RingReader, std::string> RingReader::open(int map_fd, size_t data_size, size_t window) {
  RingReader r;
  r.fd_ = map_fd;
  r.page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  r.data_size_ = data_size;
  // Twice the data at most: all of it, run past its end as the kernel maps it.
  r.window_max_ = std::clamp(round_up(window, r.page_), r.page_, 2 * data_size);
  // The kernel's layout: the consumer's page (the only one writable), the
  // producer's, then the data pages twice over.
  void* c = mmap(nullptr, r.page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
  if (c == MAP_FAILED) return std::unexpected(fmt::format("mapping its consumer page: {}", strerror(errno)));
  r.consumer_ = static_cast<uint64_t*>(c);
  void* p = mmap(nullptr, r.page_, PROT_READ, MAP_SHARED, map_fd, static_cast<off_t>(r.page_));
  if (p == MAP_FAILED) return std::unexpected(fmt::format("mapping its producer page: {}", strerror(errno)));
  r.producer_ = static_cast<const uint64_t*>(p);
  return r;
}

RingReader::RingReader(RingReader&& o) noexcept { *this = std::move(o); }

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
    page_ = o.page_;
    data_size_ = o.data_size_;
    window_max_ = o.window_max_;
    consumer_ = std::exchange(o.consumer_, nullptr);
    producer_ = std::exchange(o.producer_, nullptr);
    window_ = std::exchange(o.window_, nullptr);
    window_start_ = o.window_start_;
    window_len_ = std::exchange(o.window_len_, 0);
  }
  return *this;
}

RingReader::~RingReader() { release(); }

void RingReader::release() {
  if (window_) munmap(const_cast<uint8_t*>(window_), window_len_);
  if (producer_) munmap(const_cast<uint64_t*>(producer_), page_);
  if (consumer_) munmap(consumer_, page_);
  window_ = nullptr;
  producer_ = nullptr;
  consumer_ = nullptr;
}

const uint8_t* RingReader::mapped(size_t offset, size_t n) const {
  if (window_ && offset >= window_start_ && offset + n <= window_start_ + window_len_)
    return window_ + (offset - window_start_);
  return nullptr;
}

const uint8_t* RingReader::at(size_t offset, size_t n) {
  if (const uint8_t* p = mapped(offset, n)) return p;
  if (window_ && burst_ > window_max_) window_max_ = std::min(2 * window_max_, 2 * data_size_);
  // A window from the page of offset: window_max_ bytes, or the record's
  // own if it is longer, within the twice-mapped data.
  const size_t start = offset / page_ * page_;
  const size_t len = std::min(std::max(window_max_, round_up(offset + n - start, page_)), 2 * data_size_ - start);
  void* w = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(2 * page_ + start));
  if (w == MAP_FAILED) return nullptr;
  if (window_) munmap(const_cast<uint8_t*>(window_), window_len_);
  window_ = static_cast<const uint8_t*>(w);
  window_start_ = start;
  window_len_ = len;
  return window_ + (offset - start);
}

size_t RingReader::consume(Handler handler, void* ctx) {
  // A handler that consumes again would move the window under its caller's
  // record: the outer call goes on with the records instead.
  if (consuming_) return 0;
  consuming_ = true;
  burst_ = 0;
  const size_t handed = consume_records(handler, ctx);
  consuming_ = false;
  return handed;
}

size_t RingReader::consume_records(Handler handler, void* ctx) {
  size_t handed = 0;
  uint64_t cons = __atomic_load_n(consumer_, __ATOMIC_ACQUIRE);
  for (;;) {
    const uint64_t prod = __atomic_load_n(producer_, __ATOMIC_ACQUIRE);
    if (cons >= prod) return handed;
    while (cons < prod) {
      const size_t offset = cons & (data_size_ - 1);
      const uint8_t* header = at(offset, kHeader);
      if (!header) return handed;
      const uint32_t word = __atomic_load_n(reinterpret_cast<const uint32_t*>(header), __ATOMIC_ACQUIRE);
      if (word & kBusy) return handed;  // being written: the next consume() reads it
      const size_t len = word & ~(kBusy | kDiscard);
      const size_t total = round_up(len + kHeader, 8);
      cons += total;
      burst_ += total;
      if (!(word & kDiscard)) {
        const uint8_t* data = at(offset, kHeader + len);
        if (!data) return handed;
        // The handler runs before the kernel may reuse the bytes.
        handler(ctx, data + kHeader, len);
        ++handed;
      }
      __atomic_store_n(consumer_, cons, __ATOMIC_RELEASE);
    }
  }
}

size_t RingReader::peek(Handler handler, void* ctx) const {
  size_t handed = 0;
  uint64_t cons = __atomic_load_n(consumer_, __ATOMIC_ACQUIRE);
  const uint64_t prod = __atomic_load_n(producer_, __ATOMIC_ACQUIRE);
  while (cons < prod) {
    const size_t offset = cons & (data_size_ - 1);
    const uint8_t* header = mapped(offset, kHeader);
    if (!header) break;
    const uint32_t word = __atomic_load_n(reinterpret_cast<const uint32_t*>(header), __ATOMIC_ACQUIRE);
    if (word & kBusy) break;
    const size_t len = word & ~(kBusy | kDiscard);
    cons += round_up(len + kHeader, 8);
    if (word & kDiscard) continue;
    const uint8_t* data = mapped(offset, kHeader + len);
    if (!data) break;
    handler(ctx, data + kHeader, len);
    ++handed;
  }
  return handed;
}

}  // namespace bpfscope::runtime
