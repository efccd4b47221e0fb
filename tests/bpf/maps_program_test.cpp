// Fd ownership, map creation, program load with the verifier log, test runs.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "bpf/bpf.h"
#include "bpf/libbpf_bpf.h"
#include "insn.h"

namespace bpfscope::bpf {
namespace {

using namespace bpfscope::bpf::test;

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(Fd, ClosesAndMoves) {
  int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(raw, 0);
  {
    Fd a(raw);
    EXPECT_TRUE(a);
    Fd b(std::move(a));
    EXPECT_FALSE(a);
    EXPECT_EQ(b.get(), raw);
    Fd c;
    c = std::move(b);
    EXPECT_EQ(c.get(), raw);
    EXPECT_TRUE(fd_is_open(raw));
  }
  EXPECT_FALSE(fd_is_open(raw));

  int r1 = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int r2 = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(r1, 0);
  ASSERT_GE(r2, 0);
  {
    Fd a(r1), b(r2);
    a = std::move(b);  // closes r1
    EXPECT_FALSE(fd_is_open(r1));
    EXPECT_EQ(a.get(), r2);
    int released = a.release();
    EXPECT_EQ(released, r2);
  }
  EXPECT_TRUE(fd_is_open(r2));
  ::close(r2);
}

TEST(Maps, CreateCommonTypes) {
  auto hash = create_map(BPF_MAP_TYPE_HASH, "counts", 8, 8, 1024);
  ASSERT_TRUE(hash.has_value()) << hash.error().message;
  EXPECT_TRUE(*hash);

  auto pa = create_map(BPF_MAP_TYPE_PERCPU_ARRAY, "scratch", 4, 1024, 1);
  ASSERT_TRUE(pa.has_value()) << pa.error().message;

  auto rb = create_map(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, 1u << 20);
  ASSERT_TRUE(rb.has_value()) << rb.error().message;

  // bpftrace-style names with characters the kernel refuses are sanitized.
  auto named = create_map(BPF_MAP_TYPE_HASH, "@by_comm:x-y and a very long tail", 16, 8, 16);
  ASSERT_TRUE(named.has_value()) << named.error().message;
  bpf_map_info info{};
  uint32_t len = sizeof info;
  ASSERT_EQ(bpf_obj_get_info_by_fd(named->get(), &info, &len), 0);
  EXPECT_STREQ(info.name, "_by_comm_x_y_an");
  EXPECT_EQ(info.key_size, 16u);

  // Flags reach the kernel.
  auto nopre = create_map(BPF_MAP_TYPE_HASH, "nopre", 4, 4, 8, BPF_F_NO_PREALLOC);
  ASSERT_TRUE(nopre.has_value()) << nopre.error().message;
}

TEST(Maps, UpdateAndLookup) {
  auto m = create_map(BPF_MAP_TYPE_HASH, "kv", 4, 8, 4);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  uint32_t k = 3;
  uint64_t v = 77, out = 0;
  ASSERT_EQ(bpf_map_update_elem(m->get(), &k, &v, BPF_ANY), 0);
  ASSERT_EQ(bpf_map_lookup_elem(m->get(), &k, &out), 0);
  EXPECT_EQ(out, 77u);
}

TEST(Maps, BadArgumentsGiveMessages) {
  auto zero_key = create_map(BPF_MAP_TYPE_HASH, "bad", 0, 8, 16);
  ASSERT_FALSE(zero_key.has_value());
  EXPECT_EQ(zero_key.error().err, EINVAL);
  EXPECT_NE(zero_key.error().message.find("bpf_map_create("), std::string::npos) << zero_key.error().message;
  EXPECT_NE(zero_key.error().message.find("hash"), std::string::npos) << zero_key.error().message;
  EXPECT_NE(zero_key.error().message.find("Invalid argument"), std::string::npos) << zero_key.error().message;

  auto rb = create_map(BPF_MAP_TYPE_RINGBUF, "rb", 0, 0, 1000);  // not a power-of-2 page multiple
  ASSERT_FALSE(rb.has_value());
  EXPECT_EQ(rb.error().err, EINVAL);
  EXPECT_NE(rb.error().message.find("ringbuf"), std::string::npos) << rb.error().message;

  auto no_entries = create_map(BPF_MAP_TYPE_ARRAY, "arr", 4, 8, 0);
  ASSERT_FALSE(no_entries.has_value());
  EXPECT_FALSE(no_entries.error().message.empty());
}

TEST(Program, LoadTinyTracepointProgram) {
  const bpf_insn insns[] = {mov64_imm(BPF_REG_0, 0), exit_insn()};
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_TRACEPOINT;
  spec.name = "tracepoint:syscalls:sys_enter_openat";  // sanitized by load_program
  spec.insns = insns;
  auto p = load_program(spec);
  ASSERT_TRUE(p.has_value()) << "errno " << p.error().err << "\n" << p.error().log;
  EXPECT_TRUE(p->fd);
  EXPECT_TRUE(p->log.empty());

  bpf_prog_info info{};
  uint32_t len = sizeof info;
  ASSERT_EQ(bpf_obj_get_info_by_fd(p->fd.get(), &info, &len), 0);
  EXPECT_EQ(info.type, BPF_PROG_TYPE_TRACEPOINT);
  EXPECT_STREQ(info.name, "tracepoint_sysc");
}

TEST(Program, LogLevelOneKeepsLogOnSuccess) {
  const bpf_insn insns[] = {mov64_imm(BPF_REG_0, 0), exit_insn()};
  ProgramSpec spec;
  spec.insns = insns;
  spec.log_level = 1;
  auto p = load_program(spec);
  ASSERT_TRUE(p.has_value()) << p.error().log;
  EXPECT_NE(p->log.find("processed 2 insns"), std::string::npos) << p->log;
}

TEST(Program, BrokenProgramGivesVerifierLog) {
  const bpf_insn insns[] = {exit_insn()};  // r0 never set
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_TRACEPOINT;
  spec.name = "broken";
  spec.insns = insns;
  auto p = load_program(spec);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().err, EACCES);
  EXPECT_FALSE(p.error().log.empty());
  EXPECT_NE(p.error().log.find("R0 !read_ok"), std::string::npos) << p.error().log;

  spec.log_level = 2;  // asked-for logs are kept on failure too
  auto q = load_program(spec);
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().log.find("R0 !read_ok"), std::string::npos) << q.error().log;
}

TEST(Program, EmptyProgramFails) {
  ProgramSpec spec;
  auto p = load_program(spec);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().err, 0);
}

TEST(Program, RunOnceReturnsValue) {
  const bpf_insn insns[] = {mov64_imm(BPF_REG_0, 7), exit_insn()};
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_RAW_TRACEPOINT;
  spec.name = "BEGIN";
  spec.insns = insns;
  auto p = load_program(spec);
  ASSERT_TRUE(p.has_value()) << p.error().log;
  auto r = run_once(p->fd.get());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(*r, 7u);
  auto r2 = run_once(p->fd.get());
  ASSERT_TRUE(r2.has_value());
  EXPECT_EQ(*r2, 7u);
}

TEST(Program, RunOnceCountsIntoMap) {
  auto m = create_map(BPF_MAP_TYPE_ARRAY, "cnt", 4, 8, 1);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  auto insns = counter_program(m->get());
  ProgramSpec spec;
  spec.type = BPF_PROG_TYPE_RAW_TRACEPOINT;
  spec.insns = insns;
  auto p = load_program(spec);
  ASSERT_TRUE(p.has_value()) << p.error().log;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(run_once(p->fd.get()).has_value());
  uint32_t k = 0;
  uint64_t v = 0;
  ASSERT_EQ(bpf_map_lookup_elem(m->get(), &k, &v), 0);
  EXPECT_EQ(v, 3u);
}

TEST(Program, RunOnceBadFd) {
  auto r = run_once(-1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().err, EBADF);
  EXPECT_NE(r.error().message.find("BPF_PROG_TEST_RUN"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace bpfscope::bpf
