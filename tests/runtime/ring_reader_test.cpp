// The ring buffer's reader (src/runtime/ring_reader.h) against a real
// BPF_MAP_TYPE_RINGBUF that a loaded program writes to with
// bpf_ringbuf_output.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../bpf/insn.h"
#include "bpf/bpf.h"
#include "bpf/libbpf_bpf.h"
#include "runtime/ring_reader.h"

namespace bpfscope::runtime {
namespace {

using namespace bpfscope::bpf::test;

constexpr size_t kMaxRecord = 256;

// A raw tracepoint program run with ctx = {seq, size}: it writes a record
// of `size` bytes (8 to 256) whose 8-byte word k is seq + k.
struct Writer {
  bpf::Fd map;
  bpf::Loaded prog;

  static Writer make(uint32_t data_size) {
    Writer w;
    auto m = bpf::create_map(BPF_MAP_TYPE_RINGBUF, "ring_test", 0, 0, data_size);
    EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message);
    if (!m) return w;
    w.map = std::move(*m);
    std::vector<bpf_insn> p;
    p.push_back(make_insn(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_7, BPF_REG_1, 0, 0));  // seq
    p.push_back(make_insn(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_8, BPF_REG_1, 8, 0));  // size
    for (int k = 0; k < static_cast<int>(kMaxRecord / 8); ++k) {
      p.push_back(mov64_reg(BPF_REG_0, BPF_REG_7));
      p.push_back(alu64_imm(BPF_ADD, BPF_REG_0, k));
      p.push_back(stx_mem(BPF_DW, BPF_REG_10, BPF_REG_0, static_cast<int16_t>(-256 + 8 * k)));
    }
    const size_t check = p.size();
    p.push_back(jmp_imm(BPF_JGT, BPF_REG_8, kMaxRecord, 0));  // to the end, patched below
    p.push_back(jmp_imm(BPF_JLT, BPF_REG_8, 8, 0));
    ld_map_fd(p, BPF_REG_1, w.map.get());
    p.push_back(mov64_reg(BPF_REG_2, BPF_REG_10));
    p.push_back(alu64_imm(BPF_ADD, BPF_REG_2, -256));
    p.push_back(mov64_reg(BPF_REG_3, BPF_REG_8));
    p.push_back(mov64_imm(BPF_REG_4, 0));
    p.push_back(call(BPF_FUNC_ringbuf_output));
    const size_t end = p.size();
    p[check].off = static_cast<int16_t>(end - check - 1);
    p[check + 1].off = static_cast<int16_t>(end - check - 2);
    p.push_back(mov64_imm(BPF_REG_0, 0));
    p.push_back(exit_insn());
    bpf::ProgramSpec spec;
    spec.type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    spec.name = "ring_test";
    spec.insns = p;
    auto loaded = bpf::load_program(spec);
    EXPECT_TRUE(loaded.has_value()) << (loaded ? "" : loaded.error().log);
    if (loaded) w.prog = std::move(*loaded);
    return w;
  }

  void write(uint64_t seq, uint64_t size) {
    uint64_t ctx[2] = {seq, size};
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ctx, .ctx_size_in = sizeof ctx);
    ASSERT_EQ(bpf_prog_test_run_opts(prog.fd.get(), &opts), 0) << strerror(errno);
  }
};

struct Record {
  uint64_t seq;
  size_t size;
  bool words_ok;
};

void collect(void* ctx, const uint8_t* data, size_t size) {
  uint64_t first = 0;
  if (size >= 8) std::memcpy(&first, data, 8);
  bool ok = size % 8 == 0;
  for (size_t k = 0; ok && k < size / 8; ++k) {
    uint64_t w;
    std::memcpy(&w, data + 8 * k, 8);
    ok = w == first + k;
  }
  static_cast<std::vector<Record>*>(ctx)->push_back({first, size, ok});
}

size_t record_size(uint64_t i) { return 8 * (1 + (i * 7) % (kMaxRecord / 8)); }

TEST(RingReader, EveryRecordInOrderThroughAOnePageWindow) {
  // 16 KiB of data, read through a window of one page: the window moves
  // all the time, and records run past the data's end (the kernel maps the
  // data twice in a row).
  constexpr uint32_t kData = 16 << 10;
  Writer w = Writer::make(kData);
  ASSERT_TRUE(static_cast<bool>(w.prog.fd));
  auto reader = RingReader::open(w.map.get(), kData, 4096);
  ASSERT_TRUE(reader.has_value()) << reader.error();
  std::vector<Record> got;
  size_t pos = 0, past_the_end = 0, most_mapped = 0;
  constexpr uint64_t kRecords = 3000;
  for (uint64_t i = 0; i < kRecords; ++i) {
    const size_t size = record_size(i);
    if (pos % kData + 8 + size > kData) ++past_the_end;
    pos += 8 + size;
    w.write(i, size);
    if (i % 5 == 4) reader->consume(&collect, &got);
    most_mapped = std::max(most_mapped, reader->mapped());
  }
  reader->consume(&collect, &got);
  ASSERT_EQ(got.size(), kRecords);
  for (uint64_t i = 0; i < kRecords; ++i) {
    EXPECT_EQ(got[i].seq, i);
    EXPECT_EQ(got[i].size, record_size(i)) << i;
    EXPECT_TRUE(got[i].words_ok) << i;
  }
  EXPECT_GT(past_the_end, 0u);
  EXPECT_LE(most_mapped, 2 * 4096u);  // a window, or a record across two pages
  EXPECT_EQ(reader->consume(&collect, &got), 0u);
}

TEST(RingReader, MapsAWindowOfALargeBufferThatABurstGrows) {
  // A 16 MiB buffer (a printf stream's): libbpf's reader maps 32 MiB of it,
  // which counts in RSS at once; this one maps its default window while the
  // stream is light.
  constexpr uint32_t kData = 16 << 20;
  Writer w = Writer::make(kData);
  ASSERT_TRUE(static_cast<bool>(w.prog.fd));
  auto reader = RingReader::open(w.map.get(), kData);
  ASSERT_TRUE(reader.has_value()) << reader.error();
  std::vector<Record> got;
  uint64_t seq = 0;
  for (int batch = 0; batch < 5; ++batch) {  // 136 kB each: the window moves once in a while
    for (int i = 0; i < 1000; ++i) w.write(seq++, 128);
    EXPECT_EQ(reader->consume(&collect, &got), 1000u);
    EXPECT_EQ(reader->mapped(), RingReader::kDefaultWindow);
  }
  // A burst of 4 MB read in one consume(): the window doubles each time it
  // moves again in the same call.
  for (int i = 0; i < 30000; ++i) w.write(seq++, 128);
  EXPECT_EQ(reader->consume(&collect, &got), 30000u);
  EXPECT_GE(reader->mapped(), 2 * RingReader::kDefaultWindow);
  ASSERT_EQ(got.size(), seq);
  for (uint64_t i = 0; i < seq; ++i) ASSERT_EQ(got[i].seq, i);
}

// peek() hands the records waiting, in order, without consuming them, and
// stops at the first record outside the window: called by a handler that
// consume() runs (Session::flip_for_takes), it must not move the window
// under that handler's record.
TEST(RingReader, PeekHandsWhatWaitsWithinTheWindowAndConsumesNothing) {
  constexpr uint32_t kData = 64 << 10;
  Writer w = Writer::make(kData);
  ASSERT_TRUE(static_cast<bool>(w.prog.fd));
  auto reader = RingReader::open(w.map.get(), kData, 4096);
  ASSERT_TRUE(reader.has_value()) << reader.error();
  std::vector<Record> got;
  EXPECT_EQ(reader->peek(&collect, &got), 0u);  // nothing mapped yet
  w.write(0, 8);
  ASSERT_EQ(reader->consume(&collect, &got), 1u);  // maps the window at 0
  got.clear();
  for (uint64_t i = 1; i <= 20; ++i) w.write(i, 248);  // 5 kB: past the one-page window
  std::vector<Record> peeked;
  const size_t n = reader->peek(&collect, &peeked);
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, 20u);
  for (size_t k = 0; k < peeked.size(); ++k) {
    EXPECT_EQ(peeked[k].seq, k + 1);
    EXPECT_TRUE(peeked[k].words_ok);
  }
  EXPECT_LE(reader->mapped(), 4096u);
  EXPECT_EQ(reader->consume(&collect, &got), 20u);  // all still there
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(got[i].seq, i + 1);
}

}  // namespace
}  // namespace bpfscope::runtime
