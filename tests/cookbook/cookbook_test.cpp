// The cookbook's data (docs/one-liners.md, embedded) and its lookups.
#include "bpf/bpf.h"
#include "cookbook/cookbook.h"

#include <gtest/gtest.h>

#include <set>

namespace bpfscope::cookbook {
namespace {

TEST(Cookbook, EmbeddedTextParses) {
  const Cookbook& book = embedded();
  ASSERT_EQ(book.topics.size(), 2u);
  EXPECT_EQ(book.topics[0].name, "disk");
  EXPECT_EQ(book.topics[1].name, "net");
  // Every one-liner of the book's two chapters: 20 in ch. 9, 34 in ch. 10.
  std::set<std::string> ids;
  for (const auto& e : book.entries)
    for (const auto& b : e.book) ids.insert(b.substr(0, b.find(' ')));
  EXPECT_EQ(ids.size(), 54u);
  for (const auto& e : book.entries) {
    EXPECT_FALSE(e.question.empty()) << e.id;
    EXPECT_FALSE(e.bpftrace.empty()) << e.id;
    // A replaced kernel probe says how the answer differs.
    if (!e.kernel.empty() && e.id != "disk-1") {
      EXPECT_FALSE(e.differs.empty()) << e.id;
    }
  }
}

TEST(Cookbook, ParseErrorsNameTheLine) {
  EXPECT_EQ(parse("## disk: Disks\n### d-1 no colon\n").error, "line 2: an entry is `### ID: question`");
  EXPECT_EQ(parse("## disk: Disks\n### d-1: q\n- bcc: funccount x\n").error, "line 3: bad `bcc` line");
  EXPECT_EQ(parse("## disk: Disks\n### d-1: q\n- kernel: `f` `p`\n").error, "line 3: bad `kernel` line");
  EXPECT_EQ(parse("## disk: Disks\n### d-1: q\n").error, "entry d-1 has no command");
  auto ok = parse(
      "intro\n- prose\n## disk: Disks\n### d-1: q\n- bpftrace: `bpfscope -e 'BEGIN {}'`\n"
      "- kernel: `f*` -> `tracepoint:a:b`\n");
  ASSERT_EQ(ok.error, "");
  ASSERT_EQ(ok.book.entries.size(), 1u);
  EXPECT_EQ(ok.book.entries[0].bpftrace, "bpfscope -e 'BEGIN {}'");
  EXPECT_EQ(ok.book.entries[0].kernel[0].function, "f*");
  EXPECT_EQ(ok.book.entries[0].kernel[0].probe, "tracepoint:a:b");
}

TEST(Cookbook, Glob) {
  EXPECT_TRUE(bpf::glob_match("udp*_sendmsg", "udp_sendmsg"));
  EXPECT_TRUE(bpf::glob_match("udp*_sendmsg", "udpv6_sendmsg"));
  EXPECT_TRUE(bpf::glob_match("tcp_*", "tcp_sendmsg"));
  EXPECT_FALSE(bpf::glob_match("tcp_*", "tcp"));
  EXPECT_TRUE(bpf::glob_match("tcp?", "tcp6"));
  EXPECT_FALSE(bpf::glob_match("udp_sendmsg", "udp_sendmsgx"));
}

TEST(Cookbook, ReplacementExactThenMostSpecificGlob) {
  auto f = find_replacement("tcp_sendmsg");
  ASSERT_NE(f.replacement, nullptr);
  EXPECT_EQ(f.replacement->probe, "tracepoint:sock:sock_send_length");
  EXPECT_EQ(f.entry->id, "net-11");
  f = find_replacement("udpv6_recvmsg");
  ASSERT_NE(f.replacement, nullptr);
  EXPECT_EQ(f.replacement->probe, "tracepoint:sock:sock_recv_length");
  f = find_replacement("tcp_v6_connect");
  ASSERT_NE(f.replacement, nullptr);
  EXPECT_EQ(f.replacement->probe, "tracepoint:sock:inet_sock_set_state");
  f = find_replacement("tcp_rcv_established");
  ASSERT_NE(f.replacement, nullptr);
  EXPECT_EQ(f.replacement->probe, "tracepoint:tcp:*");
  EXPECT_EQ(find_replacement("do_nanosleep").replacement, nullptr);
}

}  // namespace
}  // namespace bpfscope::cookbook
