// tracefs, tracepoint formats, listing and glob matching (on the real kernel).
#include <sys/stat.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "bpf/bpf.h"

namespace bpfscope::bpf {
namespace {

const TracepointField* find_field(const TracepointFormat& f, std::string_view name) {
  for (const auto& fld : f.fields)
    if (fld.name == name) return &fld;
  return nullptr;
}

TEST(Tracefs, RootHasEventsDir) {
  auto root = tracefs_root();
  ASSERT_TRUE(root.has_value()) << root.error().message;
  struct stat st;
  ASSERT_EQ(::stat((*root + "/events").c_str(), &st), 0) << *root;
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  // Cached and stable.
  auto again = tracefs_root();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *root);
}

TEST(Tracefs, FormatSysEnterOpenat) {
  auto f = read_tracepoint_format("syscalls", "sys_enter_openat");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(f->category, "syscalls");
  EXPECT_EQ(f->event, "sys_enter_openat");
  EXPECT_GT(f->id, 0u);
  for (const auto& fld : f->fields) EXPECT_FALSE(fld.name.starts_with("common_")) << fld.name;

  // Values as read by hand from events/syscalls/sys_enter_openat/format (x86-64).
  ASSERT_EQ(f->fields.size(), 5u);
  EXPECT_EQ(f->fields[0].name, "__syscall_nr");
  EXPECT_EQ(f->fields[0].offset, 8u);
  EXPECT_EQ(f->fields[0].size, 4u);
  EXPECT_TRUE(f->fields[0].is_signed);

  const auto* dfd = find_field(*f, "dfd");
  ASSERT_NE(dfd, nullptr);
  EXPECT_EQ(dfd->type, "int");
  EXPECT_EQ(dfd->offset, 16u);
  EXPECT_EQ(dfd->size, 8u);
  EXPECT_FALSE(dfd->is_signed);

  const auto* filename = find_field(*f, "filename");
  ASSERT_NE(filename, nullptr);
  EXPECT_EQ(filename->type, "const char *");
  EXPECT_EQ(filename->offset, 24u);
  EXPECT_EQ(filename->size, 8u);
  EXPECT_FALSE(filename->data_loc);
  EXPECT_EQ(filename->array_len, 0u);

  const auto* flags = find_field(*f, "flags");
  ASSERT_NE(flags, nullptr);
  EXPECT_EQ(flags->type, "int");
  EXPECT_EQ(flags->offset, 32u);
  EXPECT_EQ(flags->size, 8u);

  const auto* mode = find_field(*f, "mode");
  ASSERT_NE(mode, nullptr);
  EXPECT_EQ(mode->type, "umode_t");
  EXPECT_EQ(mode->offset, 40u);
  EXPECT_EQ(mode->size, 8u);
}

TEST(Tracefs, FormatIdMatchesIdFile) {
  auto f = read_tracepoint_format("syscalls", "sys_enter_openat");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  auto root = tracefs_root();
  ASSERT_TRUE(root.has_value());
  FILE* fp = ::fopen((*root + "/events/syscalls/sys_enter_openat/id").c_str(), "r");
  ASSERT_NE(fp, nullptr);
  unsigned id = 0;
  ASSERT_EQ(::fscanf(fp, "%u", &id), 1);
  ::fclose(fp);
  EXPECT_EQ(f->id, id);
}

TEST(Tracefs, FormatSchedSwitchArrays) {
  auto f = read_tracepoint_format("sched", "sched_switch");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  const auto* prev_comm = find_field(*f, "prev_comm");
  ASSERT_NE(prev_comm, nullptr);
  EXPECT_EQ(prev_comm->type, "char[16]");
  EXPECT_EQ(prev_comm->array_len, 16u);
  EXPECT_EQ(prev_comm->offset, 8u);
  EXPECT_EQ(prev_comm->size, 16u);
  EXPECT_FALSE(prev_comm->data_loc);

  const auto* prev_pid = find_field(*f, "prev_pid");
  ASSERT_NE(prev_pid, nullptr);
  EXPECT_EQ(prev_pid->type, "pid_t");
  EXPECT_EQ(prev_pid->offset, 24u);
  EXPECT_EQ(prev_pid->size, 4u);
  EXPECT_TRUE(prev_pid->is_signed);
  EXPECT_EQ(prev_pid->array_len, 0u);

  const auto* prev_state = find_field(*f, "prev_state");
  ASSERT_NE(prev_state, nullptr);
  EXPECT_EQ(prev_state->type, "long");
  EXPECT_EQ(prev_state->size, 8u);

  const auto* next_comm = find_field(*f, "next_comm");
  ASSERT_NE(next_comm, nullptr);
  EXPECT_EQ(next_comm->type, "char[16]");
  EXPECT_EQ(next_comm->offset, 40u);
}

TEST(Tracefs, FormatDataLoc) {
  auto f = read_tracepoint_format("sched", "sched_process_exec");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  const auto* filename = find_field(*f, "filename");
  ASSERT_NE(filename, nullptr);
  EXPECT_TRUE(filename->data_loc);
  EXPECT_FALSE(filename->rel_loc);
  EXPECT_EQ(filename->type, "char[]");
  EXPECT_EQ(filename->offset, 8u);
  EXPECT_EQ(filename->size, 4u);
  EXPECT_EQ(filename->array_len, 0u);
  const auto* pid = find_field(*f, "pid");
  ASSERT_NE(pid, nullptr);
  EXPECT_FALSE(pid->data_loc);
  EXPECT_EQ(pid->offset, 12u);
}

TEST(Tracefs, FormatUnknownEventIsEnoent) {
  auto f = read_tracepoint_format("syscalls", "sys_enter_no_such_syscall");
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().err, ENOENT);
  EXPECT_NE(f.error().message.find("syscalls:sys_enter_no_such_syscall"), std::string::npos) << f.error().message;

  auto g = read_tracepoint_format("no_such_category", "x");
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().err, ENOENT);
}

TEST(Tracefs, FormatRejectsPathTricks) {
  auto f = read_tracepoint_format("..", "sched");
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().err, EINVAL);
  auto g = read_tracepoint_format("sched", "sched_switch/../sched_wakeup");
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().err, EINVAL);
}

TEST(Tracefs, ParseFormatText) {
  constexpr std::string_view text =
      "name: demo\n"
      "ID: 42\n"
      "format:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
      "\n"
      "\tfield:const char *const * argv;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:const void *const rule_attr;\toffset:16;\tsize:8;\tsigned:0;\n"
      "\tfield:__u8 saddr[4];\toffset:24;\tsize:4;\tsigned:0;\n"
      "\tfield:char buf[];\toffset:28;\tsize:0;\tsigned:0;\n"
      "\tfield:__rel_loc char[] rel;\toffset:28;\tsize:4;\tsigned:0;\n"
      "\tfield:unsigned long long ts;\toffset:32;\tsize:8;\tsigned:0;\n"
      "\n"
      "print fmt: \"%s\", REC->argv\n";
  auto f = parse_tracepoint_format("cat", "demo", text);
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(f->id, 42u);
  ASSERT_EQ(f->fields.size(), 6u);
  EXPECT_EQ(f->fields[0].name, "argv");
  EXPECT_EQ(f->fields[0].type, "const char *const *");
  EXPECT_EQ(f->fields[1].name, "rule_attr");
  EXPECT_EQ(f->fields[1].type, "const void *const");
  EXPECT_EQ(f->fields[2].name, "saddr");
  EXPECT_EQ(f->fields[2].type, "__u8[4]");
  EXPECT_EQ(f->fields[2].array_len, 4u);
  EXPECT_EQ(f->fields[3].name, "buf");
  EXPECT_EQ(f->fields[3].type, "char[]");
  EXPECT_EQ(f->fields[3].array_len, 0u);
  EXPECT_EQ(f->fields[3].size, 0u);
  EXPECT_EQ(f->fields[4].name, "rel");
  EXPECT_TRUE(f->fields[4].data_loc);
  EXPECT_TRUE(f->fields[4].rel_loc);
  EXPECT_EQ(f->fields[5].type, "unsigned long long");
  EXPECT_EQ(f->fields[5].offset, 32u);
}

TEST(Tracefs, ParseFormatMalformedLine) {
  auto f = parse_tracepoint_format("cat", "demo", "format:\n\tfield:int x;\tsize:4;\n");
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().err, EINVAL);
  EXPECT_NE(f.error().message.find("cat:demo"), std::string::npos) << f.error().message;
}

TEST(Tracefs, ParseEveryFormatOnThisKernel) {
  // Every event's format file parses, and fields lie inside the record in order.
  auto all = list_tracepoints("*", "*");
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_GT(all->size(), 100u);
  size_t parsed = 0;
  for (const auto& name : *all) {
    auto colon = name.find(':');
    auto f = read_tracepoint_format(name.substr(0, colon), name.substr(colon + 1));
    if (!f && f.error().err == ENOENT) continue;  // listed but without a format (rare)
    ASSERT_TRUE(f.has_value()) << name << ": " << f.error().message;
    for (const auto& fld : f->fields) {
      EXPECT_FALSE(fld.name.empty()) << name;
      EXPECT_FALSE(fld.type.empty()) << name << " " << fld.name;
      EXPECT_GE(fld.offset, 8u) << name << " " << fld.name;
    }
    ++parsed;
  }
  EXPECT_GT(parsed, all->size() / 2);
}

TEST(Tracefs, ListTracepoints) {
  auto l = list_tracepoints("syscalls", "sys_enter_getpp*");
  ASSERT_TRUE(l.has_value()) << l.error().message;
  EXPECT_NE(std::find(l->begin(), l->end(), "syscalls:sys_enter_getppid"), l->end());
  for (const auto& n : *l) EXPECT_TRUE(n.starts_with("syscalls:sys_enter_getpp")) << n;

  auto sched = list_tracepoints("sch?d", "sched_switch");
  ASSERT_TRUE(sched.has_value());
  ASSERT_EQ(sched->size(), 1u);
  EXPECT_EQ((*sched)[0], "sched:sched_switch");

  auto enter = list_tracepoints("syscalls", "sys_enter_*");
  ASSERT_TRUE(enter.has_value());
  EXPECT_GT(enter->size(), 100u);
  EXPECT_TRUE(std::is_sorted(enter->begin(), enter->end()));
  EXPECT_EQ(std::adjacent_find(enter->begin(), enter->end()), enter->end());

  auto none = list_tracepoints("syscalls", "no_such_*");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(Tracefs, ListExactNameAgreesWithListing) {
  // A name without wildcards is looked up as its event directory, not in
  // available_events: both must give the same answer.
  auto all = list_tracepoints("*", "*");
  ASSERT_TRUE(all.has_value()) << all.error().message;
  for (size_t i = 0; i < all->size(); i += 25) {
    const std::string& name = (*all)[i];
    auto colon = name.find(':');
    auto one = list_tracepoints(name.substr(0, colon), name.substr(colon + 1));
    ASSERT_TRUE(one.has_value()) << name;
    EXPECT_EQ(*one, std::vector<std::string>{name});
  }
  // Not events: a missing one, the category's control files, path tricks.
  for (auto [cat, ev] : {std::pair{"syscalls", "no_such_event"}, {"sched", "enable"}, {"sched", "filter"},
                         {"no_such_category", "x"}, {"sched", ".."}, {"..", "sched"}, {"sched/..", "sched"}}) {
    auto l = list_tracepoints(cat, ev);
    ASSERT_TRUE(l.has_value()) << cat << ":" << ev;
    EXPECT_TRUE(l->empty()) << cat << ":" << ev;
  }
}

TEST(Glob, Table) {
  struct Case {
    const char* pattern;
    const char* text;
    bool match;
  };
  const Case cases[] = {
      {"", "", true},
      {"", "a", false},
      {"*", "", true},
      {"*", "anything", true},
      {"**", "x", true},
      {"?", "", false},
      {"?", "a", true},
      {"?", "ab", false},
      {"abc", "abc", true},
      {"abc", "abd", false},
      {"abc", "ab", false},
      {"ab", "abc", false},
      {"sys_enter_*", "sys_enter_openat", true},
      {"sys_enter_*", "sys_exit_openat", false},
      {"sys_*_open*", "sys_enter_openat", true},
      {"sys_*_open*", "sys_exit_open", true},
      {"*open", "sys_enter_openat", false},
      {"*at", "sys_enter_openat", true},
      {"s?s_*", "sys_x", true},
      {"*a*b*c*", "xxaxxbxxcxx", true},
      {"*a*b*c*", "xxaxxcxxbxx", false},
      {"a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
      {"*getpp*", "sys_enter_getppid", true},
      {"[a]", "a", false},  // no bracket classes: '[' is literal
      {"[a]", "[a]", true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(glob_match(c.pattern, c.text), c.match) << "'" << c.pattern << "' vs '" << c.text << "'";
  }
}

}  // namespace
}  // namespace bpfscope::bpf
