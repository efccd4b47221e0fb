// Kernel BTF lookups (bpf/btf.h), on the real kernel's /sys/kernel/btf/vmlinux.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "bpf/btf.h"

namespace bpfscope::bpf {
namespace {

long rss_kb() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One loaded instance for the lookup tests (loading takes tens of ms).
Btf& kernel() {
  static Btf b;
  return b;
}

TEST(Btf, LazyLoadAndCost) {
  Btf b;
  EXPECT_FALSE(b.loaded());  // constructing reads nothing

  long rss0 = rss_kb();
  auto t0 = std::chrono::steady_clock::now();
  auto r = b.load();
  double load_ms = ms_since(t0);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  long rss1 = rss_kb();
  EXPECT_TRUE(b.loaded());
  // The 5.5 MB file is read in place (mapped), not copied: only the type
  // offsets (4 bytes per type) are resident.
  EXPECT_LT(rss1 - rss0, 2048);

  // The first lookups scan the types of their kinds; no index is built.
  t0 = std::chrono::steady_clock::now();
  auto sock = b.find_struct("sock");
  double struct_ms = ms_since(t0);
  ASSERT_TRUE(sock);
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(b.enum_value("TCP_ESTABLISHED"));
  double enum_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(b.tracepoint_args("inet_sock_set_state"));
  double tp_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(b.find_func("tcp_sendmsg"));
  double func_ms = ms_since(t0);
  long rss2 = rss_kb();
  // Neither the scans nor the group lists cost much memory (node-based
  // indexes of every struct, enumerator and typedef took 1.7 MB).
  EXPECT_LT(rss2 - rss1, 1024);

  t0 = std::chrono::steady_clock::now();
  int found = 0;
  for (int i = 0; i < 1000; i++) {
    found += b.find_struct("task_struct").has_value();
    found += b.enum_value("TCP_ESTABLISHED").has_value();
    found += b.find_member(*sock, "sk_rcvbuf").has_value();
  }
  double lookup_us = ms_since(t0) * 1000 / 3000;  // past the first lookups: indexed
  EXPECT_EQ(found, 3000);

  std::printf("[btf] %u types; load %.1f ms, +%.1f MB RSS; first find_struct %.1f ms, first enum_value "
              "%.1f ms, first tracepoint_args %.1f ms, find_func %.2f ms; indexes +%.1f MB RSS; "
              "indexed lookup %.2f us\n",
              b.type_count(), load_ms, (rss1 - rss0) / 1024.0, struct_ms, enum_ms, tp_ms, func_ms,
              (rss2 - rss1) / 1024.0, lookup_us);
}

TEST(Btf, IndexesAgreeWithLibbpf) {
  // Every named struct, union, enum and typedef, and every enumerator, is
  // found by name, as the first type of its kind with that name (libbpf's
  // btf__find_by_name_kind answer): the hash tables and the scans lose and
  // confuse none.
  std::unique_ptr<btf, decltype(&btf__free)> lib(btf__load_vmlinux_btf(), &btf__free);
  ASSERT_TRUE(lib);
  std::map<std::string, uint32_t> first;  // "kind name" -> id
  for (uint32_t id = 1; id < btf__type_cnt(lib.get()); id++) {
    const btf_type* t = btf__type_by_id(lib.get(), id);
    std::string name = btf__name_by_offset(lib.get(), t->name_off);
    const char* kind = btf_is_struct(t) ? "struct " : btf_is_union(t) ? "union " : btf_is_typedef(t) ? "" : nullptr;
    if (btf_is_any_enum(t)) {
      kind = "enum ";
      for (uint32_t i = 0; i < btf_vlen(t); i++) {
        uint32_t off = btf_is_enum64(t) ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off;
        first.emplace("enumerator " + std::string(btf__name_by_offset(lib.get(), off)), id);
      }
    }
    if (kind && !name.empty()) first.emplace(kind + name, id);
  }
  auto check = [](const Btf& b, const std::string& key, uint32_t id) {
    if (key.starts_with("enumerator "))
      EXPECT_EQ(b.enum_of(key.substr(11)), id) << key;
    else
      EXPECT_EQ(b.find_type(key), id) << key;
  };
  // Through the indexes (the shared instance is past its first lookups,
  // which scan the types), and by scans in fresh instances.
  size_t checked = 0;
  for (const auto& [key, id] : first) check(kernel(), key, id), ++checked;
  EXPECT_GT(checked, 30000u);
  size_t i = 0;
  for (const auto& [key, id] : first)
    if (i++ % 500 == 0) check(Btf(), key, id);
}

TEST(Btf, ScriptTypesShadowKernelTypes) {
  // Types added after the indexes were built are indexed too, and by name
  // they win over the kernel's.
  Btf b;
  auto kernel_sock = b.find_struct("sock");
  auto task = b.find_struct("task_struct");
  auto u32 = b.find_type("u32");
  ASSERT_TRUE(kernel_sock && task && u32);
  ASSERT_EQ(b.enum_value("TCP_ESTABLISHED"), 1);
  const uint32_t first = b.next_id();
  std::vector<BtfNewType> types(3);
  types[0] = {.kind = BtfNewType::Kind::Struct, .name = "sock", .size = 4, .members = {{"x", 0, 0, *u32}}};
  types[1] = {.kind = BtfNewType::Kind::Enum, .name = "bpfscope_test_states", .size = 4,
              .values = {{"TCP_ESTABLISHED", 99}, {"BPFSCOPE_TEST_STATE", 7}}};
  types[2] = {.kind = BtfNewType::Kind::Union, .name = "bpfscope_test_union", .size = 4,
              .members = {{"y", 0, 0, *u32}}};
  auto r = b.add_types(types);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto check = [&] {
    EXPECT_EQ(b.find_struct("sock"), first);
    EXPECT_EQ(b.find_type("struct sock"), first);
    EXPECT_EQ(b.find_struct("task_struct"), task);
    EXPECT_EQ(b.find_type("u32"), u32);
    EXPECT_EQ(b.enum_value("TCP_ESTABLISHED"), 99);
    EXPECT_EQ(b.enum_of("TCP_ESTABLISHED"), first + 1);
    EXPECT_EQ(b.enum_value("BPFSCOPE_TEST_STATE"), 7);
    EXPECT_EQ(b.enum_value("TCP_LISTEN"), 10);
    EXPECT_EQ(b.find_type("enum bpfscope_test_states"), first + 1);
    EXPECT_EQ(b.find_struct("bpfscope_test_union"), first + 2);
    EXPECT_FALSE(b.find_struct("struct bpfscope_test_union"));
  };
  check();  // the first lookups scan the types
  for (int i = 0; i < 20; i++) b.find_type("no_such_type_xyz"), b.enum_value("NO_SUCH_CONSTANT_XYZ");
  check();  // later ones go through the indexes
}

TEST(Btf, MissingFileGivesError) {
  Btf b("/nonexistent/btf");
  auto r = b.load();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().err, ENOENT);
  EXPECT_NE(r.error().message.find("/nonexistent/btf"), std::string::npos) << r.error().message;
  EXPECT_FALSE(b.find_struct("sock"));
  EXPECT_FALSE(b.enum_value("TCP_ESTABLISHED"));
  EXPECT_FALSE(b.tracepoint_args("sched_switch"));
}

TEST(Btf, FindStruct) {
  Btf& b = kernel();
  auto sock = b.find_struct("sock");
  ASSERT_TRUE(sock);
  EXPECT_EQ(b.find_struct("struct sock"), sock);
  EXPECT_FALSE(b.find_struct("union sock"));
  auto t = b.type(*sock);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, BtfType::Kind::Struct);
  EXPECT_EQ(t->name, "sock");
  EXPECT_GT(t->size, 500u);
  EXPECT_EQ(b.size_of(*sock), t->size);
  EXPECT_EQ(b.type_name(*sock), "struct sock");

  auto attr = b.find_struct("union bpf_attr");
  ASSERT_TRUE(attr);
  EXPECT_EQ(b.type(*attr)->kind, BtfType::Kind::Union);
  EXPECT_EQ(b.find_struct("bpf_attr"), attr);

  EXPECT_FALSE(b.find_struct("no_such_struct_xyz"));
  EXPECT_FALSE(b.find_struct("struct no_such_struct_xyz"));
  EXPECT_FALSE(b.find_struct(""));
}

TEST(Btf, NestedSockCommonPorts) {
  Btf& b = kernel();
  auto sock = b.find_struct("sock");
  auto common = b.find_struct("sock_common");
  ASSERT_TRUE(sock && common);

  // sk_num/sk_dport are macros for __sk_common.skc_*; skc_* are not members of sock itself.
  EXPECT_FALSE(b.find_member(*sock, "skc_dport"));
  EXPECT_FALSE(b.find_member(*sock, "skc_num"));

  auto skc = b.find_member(*sock, "__sk_common");
  ASSERT_TRUE(skc);
  EXPECT_EQ(skc->bit_offset, 0u);
  EXPECT_EQ(skc->bitfield_size, 0u);
  EXPECT_EQ(b.resolve(skc->type_id), *common);
  EXPECT_EQ(b.type_name(skc->type_id), "struct sock_common");

  // skc_dport/skc_num live in an anonymous struct inside an anonymous union
  // (skc_portpair) after skc_addrpair (8 bytes) and skc_hash (4 bytes): bytes 12 and 14.
  auto dport = b.find_member(*common, "skc_dport");
  auto num = b.find_member(*common, "skc_num");
  auto portpair = b.find_member(*common, "skc_portpair");
  ASSERT_TRUE(dport && num && portpair);
  EXPECT_EQ(dport->bit_offset, 12u * 8);
  EXPECT_EQ(num->bit_offset, 14u * 8);
  EXPECT_EQ(portpair->bit_offset, dport->bit_offset);
  EXPECT_EQ(dport->bitfield_size, 0u);
  EXPECT_EQ(b.type_name(dport->type_id), "__be16");
  EXPECT_EQ(b.type_name(num->type_id), "__u16");
  EXPECT_EQ(b.size_of(dport->type_id), 2u);
  EXPECT_EQ(b.type(num->type_id)->kind, BtfType::Kind::Int);
  EXPECT_FALSE(b.type(num->type_id)->is_signed);
  // Offsets through the nested path: sock.__sk_common.skc_dport.
  EXPECT_EQ((skc->bit_offset + dport->bit_offset) / 8, 12u);

  // Internal consistency: members() flattens the anonymous ones in order.
  auto all = b.members(*common);
  bool seen = false;
  for (const auto& m : all)
    if (m.name == "skc_num") {
      EXPECT_EQ(m.bit_offset, num->bit_offset);
      seen = true;
    }
  EXPECT_TRUE(seen);

  EXPECT_FALSE(b.find_member(*sock, "no_such_member"));
  EXPECT_FALSE(b.find_member(*sock, ""));
  EXPECT_FALSE(b.find_member(0, "x"));
}

TEST(Btf, Bitfields) {
  Btf& b = kernel();
  auto skb = b.find_struct("sk_buff");
  ASSERT_TRUE(skb);
  // pkt_type:3 sits in the anonymous struct_group "headers".
  auto pkt = b.find_member(*skb, "pkt_type");
  ASSERT_TRUE(pkt);
  EXPECT_EQ(pkt->bitfield_size, 3u);
  auto len = b.find_member(*skb, "len");
  ASSERT_TRUE(len);
  EXPECT_EQ(len->bitfield_size, 0u);
  EXPECT_EQ(len->bit_offset % 8, 0u);

  auto sock = b.find_struct("sock");
  auto gso = b.find_member(*sock, "sk_gso_disabled");
  ASSERT_TRUE(gso);
  EXPECT_EQ(gso->bitfield_size, 1u);
  std::printf("[btf] sk_buff.pkt_type bit %u:%u, sock.sk_gso_disabled bit %u:%u\n", pkt->bit_offset,
              pkt->bitfield_size, gso->bit_offset, gso->bitfield_size);
}

TEST(Btf, TaskCommAndTypeNames) {
  Btf& b = kernel();
  auto task = b.find_struct("task_struct");
  ASSERT_TRUE(task);
  auto comm = b.find_member(*task, "comm");
  ASSERT_TRUE(comm);
  EXPECT_EQ(b.type_name(comm->type_id), "char[16]");
  auto t = b.type(comm->type_id);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->kind, BtfType::Kind::Array);
  EXPECT_EQ(t->count, 16u);
  EXPECT_EQ(t->size, 16u);
  EXPECT_EQ(b.type_name(t->target), "char");
  EXPECT_EQ(b.size_of(comm->type_id), 16u);

  auto pid = b.find_member(*task, "pid");
  ASSERT_TRUE(pid);
  EXPECT_EQ(b.type_name(pid->type_id), "pid_t");
  auto pt = b.type(pid->type_id);  // typedef resolved: int
  ASSERT_TRUE(pt);
  EXPECT_EQ(pt->kind, BtfType::Kind::Int);
  EXPECT_EQ(pt->name, "int");
  EXPECT_TRUE(pt->is_signed);
  EXPECT_EQ(pt->size, 4u);

  auto parent = b.find_member(*task, "real_parent");
  ASSERT_TRUE(parent);
  EXPECT_EQ(b.type_name(parent->type_id), "struct task_struct *");
  auto pp = b.type(parent->type_id);
  EXPECT_EQ(pp->kind, BtfType::Kind::Pointer);
  EXPECT_EQ(pp->size, 8u);
  EXPECT_EQ(b.resolve(pp->target), *task);

  auto u = b.find_type("unsigned int");
  ASSERT_TRUE(u);
  EXPECT_EQ(b.type_name(*u), "unsigned int");
  auto u32 = b.find_type("u32");
  ASSERT_TRUE(u32);
  EXPECT_EQ(b.type_name(*u32), "u32");
  EXPECT_EQ(b.size_of(*u32), 4u);
  EXPECT_EQ(b.find_type("struct sock"), b.find_struct("sock"));
  EXPECT_TRUE(b.find_type("enum bpf_map_type"));
  EXPECT_EQ(b.type_name(0), "void");
  EXPECT_EQ(b.type(0)->kind, BtfType::Kind::Void);
  EXPECT_FALSE(b.type(0xffffff));
}

TEST(Btf, EnumValues) {
  Btf& b = kernel();
  EXPECT_EQ(b.enum_value("TCP_ESTABLISHED"), 1);
  EXPECT_EQ(b.enum_value("TCP_CLOSE"), 7);
  EXPECT_EQ(b.enum_value("BPF_MAP_TYPE_HASH"), 1);
  EXPECT_EQ(b.enum_value("BPF_MAP_TYPE_UNSPEC"), 0);
  EXPECT_FALSE(b.enum_value("NO_SUCH_ENUMERATOR_XYZ"));
  auto e = b.enum_of("BPF_MAP_TYPE_HASH");
  ASSERT_TRUE(e);
  EXPECT_EQ(b.type_name(*e), "enum bpf_map_type");
  EXPECT_EQ(b.type(*e)->kind, BtfType::Kind::Enum);
}

TEST(Btf, TracepointArgsInetSockSetState) {
  Btf& b = kernel();
  auto args = b.tracepoint_args("inet_sock_set_state");
  ASSERT_TRUE(args);
  ASSERT_EQ(args->size(), 3u);
  EXPECT_EQ(b.type_name((*args)[0].type_id), "const struct sock *");
  EXPECT_EQ(b.type_name((*args)[1].type_id), "const int");
  EXPECT_EQ(b.type_name((*args)[2].type_id), "const int");
  EXPECT_EQ(b.resolve(b.type((*args)[0].type_id)->target), *b.find_struct("sock"));
  std::string names;
  for (const auto& a : *args) names += a.name + " ";
  std::printf("[btf] inet_sock_set_state args: %s\n", names.c_str());
  EXPECT_EQ(b.tracepoint_args("sock:inet_sock_set_state")->size(), 3u);
  auto id = b.tracepoint_btf_id("inet_sock_set_state");
  ASSERT_TRUE(id);
  EXPECT_EQ(b.type_name(*id), "btf_trace_inet_sock_set_state");
}

TEST(Btf, TracepointArgsSchedSwitch) {
  Btf& b = kernel();
  auto args = b.tracepoint_args("sched_switch");
  ASSERT_TRUE(args);
  ASSERT_EQ(args->size(), 4u);  // bool preempt, prev, next, unsigned int prev_state
  EXPECT_EQ(b.type_name((*args)[0].type_id), "bool");
  EXPECT_EQ(b.type_name((*args)[1].type_id), "struct task_struct *");
  EXPECT_EQ(b.type_name((*args)[2].type_id), "struct task_struct *");
  EXPECT_EQ(b.type_name((*args)[3].type_id), "unsigned int");
  std::string names;
  for (const auto& a : *args) names += a.name + " ";
  std::printf("[btf] sched_switch args: %s\n", names.c_str());
  if (b.find_func("__bpf_trace_sched_switch")) {
    EXPECT_EQ((*args)[0].name, "preempt");
    EXPECT_EQ((*args)[1].name, "prev");
    EXPECT_EQ((*args)[2].name, "next");
    EXPECT_EQ((*args)[3].name, "prev_state");
  } else {
    EXPECT_EQ((*args)[1].name, "arg1");
  }
  EXPECT_FALSE(b.tracepoint_args("no_such_event_xyz"));
  EXPECT_FALSE(b.tracepoint_args(""));
}

TEST(Btf, FindFunc) {
  Btf& b = kernel();
  auto f = b.find_func("tcp_sendmsg");
  ASSERT_TRUE(f);
  EXPECT_EQ(b.type(*f)->kind, BtfType::Kind::Func);
  auto params = b.func_params(*f);
  ASSERT_TRUE(params);
  ASSERT_EQ(params->size(), 3u);
  EXPECT_EQ((*params)[0].name, "sk");
  EXPECT_EQ(b.type_name((*params)[0].type_id), "struct sock *");
  EXPECT_EQ(b.type_name(b.type(*f)->target), "int (struct sock *, struct msghdr *, size_t)");
  EXPECT_FALSE(b.find_func("no_such_function_xyz"));
  EXPECT_FALSE(b.find_func("sock"));  // a struct, not a function
  EXPECT_FALSE(b.func_params(*b.find_struct("sock")));
}


// Where a format file cannot be read, the layout comes from BTF's
// trace_event_raw_<event>: it must agree with the format file field by field.
TEST(Btf, TracepointLayoutFromBtfMatchesTheFormatFile) {
  Btf b;
  ASSERT_TRUE(b.load().has_value());
  const std::pair<const char*, const char*> events[] = {
      {"sched", "sched_switch"},       {"sock", "inet_sock_set_state"}, {"skb", "kfree_skb"},
      {"sched", "sched_process_exec"}, {"sched", "sched_process_fork"}, {"signal", "signal_generate"},
      {"irq", "irq_handler_entry"},
      // Events declared with a class of another name: block_rq_issue is a
      // block_rq, sched_wakeup a sched_wakeup_template.
      {"block", "block_rq_issue"},     {"sched", "sched_wakeup"},       {"block", "block_rq_complete"},
  };
  for (auto [cat, ev] : events) {
    SCOPED_TRACE(std::string(cat) + ":" + ev);
    auto file = read_tracepoint_format(cat, ev);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    auto btf = tracepoint_format_from_btf(b, cat, ev);
    ASSERT_TRUE(btf.has_value()) << btf.error().message;
    ASSERT_EQ(btf->fields.size(), file->fields.size());
    for (size_t i = 0; i < file->fields.size(); ++i) {
      const auto& f = file->fields[i];
      const auto& g = btf->fields[i];
      SCOPED_TRACE(f.name);
      EXPECT_EQ(g.name, f.name);
      EXPECT_EQ(g.offset, f.offset);
      EXPECT_EQ(g.size, f.size);
      EXPECT_EQ(g.data_loc, f.data_loc);
      EXPECT_EQ(g.array_len, f.array_len);
      if (!f.data_loc && f.array_len == 0) {
        EXPECT_EQ(g.is_signed, f.is_signed);
      }
    }
  }
  // Syscall events share one generic struct: none of their own.
  auto none = tracepoint_format_from_btf(b, "syscalls", "sys_enter_openat");
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().err, ENOENT);
}

// Over every tracepoint of the running kernel: where BTF gives a layout it is
// the format file's, field for field; where the event's class cannot be told
// apart (syscalls, classes shared by same-typed events) it gives none.
TEST(Btf, TracepointLayoutFromBtfIsNeverWrong) {
  Btf b;
  ASSERT_TRUE(b.load().has_value());
  auto all = list_tracepoints("*", "*");
  ASSERT_TRUE(all.has_value());
  int same = 0;
  std::vector<std::string> wrong;
  for (const auto& n : *all) {
    auto colon = n.find(':');
    auto file = read_tracepoint_format(n.substr(0, colon), n.substr(colon + 1));
    if (!file) continue;
    auto btf = tracepoint_format_from_btf(b, n.substr(0, colon), n.substr(colon + 1));
    if (!btf) continue;
    bool ok = btf->fields.size() == file->fields.size();
    for (size_t i = 0; ok && i < file->fields.size(); ++i)
      ok = btf->fields[i].name == file->fields[i].name && btf->fields[i].offset == file->fields[i].offset &&
           btf->fields[i].size == file->fields[i].size && btf->fields[i].data_loc == file->fields[i].data_loc;
    if (ok) ++same;
    else wrong.push_back(n);
  }
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " wrong, first " << wrong.front();
  EXPECT_GT(same, 1000);  // 1,285 on the 6.18 test kernel
}

}  // namespace
}  // namespace bpfscope::bpf
