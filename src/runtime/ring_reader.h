// The consumer side of a BPF ring buffer (BPF_MAP_TYPE_RINGBUF), mapping
// only a window of its data pages. Internal to the runtime.
//
// The kernel inserts every page of a mapping of the ring buffer when it is
// made, so all of them count in the process's RSS at once: libbpf's reader
// maps the whole data area twice over (the kernel maps it twice in a row so
// that a record may run past its end), 32 MB for the 16 MiB buffer of a
// printf stream. This reader maps the data around the consumer's position,
// `window` bytes (more for a larger record), and moves the window as it
// goes. A burst, more bytes in one consume() than the window holds, makes
// the window double when it next moves, up to all of the data, so that a
// stream that fills the buffer is read as fast as with all of it mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>

namespace bpfscope::runtime {

class RingReader {
 public:
  // A record's bytes, as the program wrote them.
  using Handler = void (*)(void* ctx, const uint8_t* data, size_t size);

  static constexpr size_t kDefaultWindow = 256u << 10;

  // Maps the consumer and producer pages of the ring buffer map_fd (whose
  // data area is data_size bytes, a power of two).
  static std::expected<RingReader, std::string> open(int map_fd, size_t data_size, size_t window = kDefaultWindow);
  RingReader(RingReader&& o) noexcept;
  RingReader& operator=(RingReader&& o) noexcept;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  // The map's fd: readable (EPOLLIN) while records wait.
  int fd() const { return fd_; }
  // Hands each committed record to handler, in order, until none is left
  // or the next is still being written; returns how many it handed.
  // Discarded records are skipped.
  size_t consume(Handler handler, void* ctx);
  // Hands the committed records from the consumer's position on to handler
  // as consume() would, but consumes none, and stops at the first record
  // outside the bytes mapped now: it never moves the window, so a handler
  // that consume() runs may call it.
  size_t peek(Handler handler, void* ctx) const;
  // The bytes of data mapped now.
  size_t mapped() const { return window_len_; }

 private:
  RingReader() = default;
  // The record bytes [offset, offset + n) of the data area (offset below
  // data_size_, n at most data_size_), through the window, moved if needed.
  const uint8_t* at(size_t offset, size_t n);
  // The same, but null unless the bytes are mapped now.
  const uint8_t* mapped(size_t offset, size_t n) const;
  size_t consume_records(Handler handler, void* ctx);
  void release();

  int fd_ = -1;
  size_t page_ = 0;
  size_t data_size_ = 0;
  size_t window_max_ = 0;
  uint64_t* consumer_ = nullptr;        // its page, read-write
  const uint64_t* producer_ = nullptr;  // its page, read-only
  const uint8_t* window_ = nullptr;     // data [window_start_, window_start_ + window_len_)
  size_t window_start_ = 0;
  size_t window_len_ = 0;
  bool consuming_ = false;
  size_t burst_ = 0;  // the bytes this consume() went through
};

}  // namespace bpfscope::runtime
