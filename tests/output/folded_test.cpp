// Folded stacks (-f folded).
#include <gtest/gtest.h>

#include "output/output.h"
#include "snapshot_builders.h"

namespace bpfscope::output {
namespace {

using namespace test;

Value kstack(std::vector<std::string> frames) {
  return Value::of_stack(Value::StackOf::Kernel, "(text)", std::move(frames));
}
Value ustack(std::vector<std::string> frames) {
  return Value::of_stack(Value::StackOf::User, "(text)", std::move(frames));
}

TEST(Folded, StackAloneRootFirst) {
  auto m = keyed("@", AggKind::Count, {{kstack({"leaf", "mid", "root"}), val(I(3))}, {kstack({"a;b", "root"}), val(I(2))}});
  ASSERT_TRUE(is_foldable(m));
  EXPECT_EQ(folded_text(m), "root;a:b 2\nroot;mid;leaf 3\n");
}

TEST(Folded, OtherKeysFirstUserThenKernelMarked) {
  auto m = keyed("@", AggKind::Sum,
                 {{T({kstack({"schedule", "do_nanosleep"}), S("sleeper"), ustack({"nanosleep", "main"}), I(42)}),
                   val(I(1000))}});
  EXPECT_EQ(folded_text(m), "sleeper;42;main;nanosleep;do_nanosleep_[k];schedule_[k] 1000\n");
  // Kernel frames are marked only when the key also has a user stack.
  auto k = keyed("@", AggKind::Count, {{T({S("x"), kstack({"f"})}), val(I(1))}});
  EXPECT_EQ(folded_text(k), "x;f 1\n");
}

TEST(Folded, SameLinesAreSummedEmptyOnesDropped) {
  // Two stack ids that name the same frames (different offsets).
  auto m = keyed("@", AggKind::Count,
                 {{kstack({"f", "g"}), val(I(1))}, {kstack({"f", "g"}), val(I(4))}, {kstack({}), val(I(9))}});
  EXPECT_EQ(folded_text(m), "g;f 5\n");
}

// The tracer's own frames on top of a kernel stack are left out; the same
// names lower down, and user frames, stay.
TEST(Folded, TracerFramesLeaveKernelStacks) {
  auto m = keyed("@", AggKind::Count,
                 {{T({kstack({"bpf_prog_0123456789abcdef_sched_switch", "bpf_trace_run4", "__bpf_trace_sched_switch",
                              "__traceiter_sched_switch", "__schedule", "bpf_trace_run1", "schedule"}),
                      ustack({"bpf_trace_run1", "main"})}),
                   val(I(2))},
                  {kstack({"bpf_prog_0123456789abcdef", "bpf_prog_test_run_raw_tp", "__sys_bpf"}), val(I(1))},
                  {kstack({"bpf_prog_12345_x", "f"}), val(I(1))}});
  EXPECT_EQ(folded_text(m),
            "__sys_bpf_[k];bpf_prog_test_run_raw_tp_[k] 1\n"
            "f_[k];bpf_prog_12345_x_[k] 1\n"
            "main;bpf_trace_run1;schedule_[k];bpf_trace_run1_[k];__schedule_[k] 2\n");
}

// One stack as a folded line's frames (a metrics label): root first, the
// tracer's frames left out, ';' and newlines in names turned to ':'.
TEST(Folded, OneStack) {
  EXPECT_EQ(folded_stack(kstack({"bpf_prog_0123456789abcdef", "bpf_trace_run2", "leaf", "a;b\nc", "root"})),
            "root;a:b:c;leaf");
  EXPECT_EQ(folded_stack(ustack({"bpf_trace_run2", "main"})), "main;bpf_trace_run2");
  EXPECT_EQ(folded_stack(kstack({})), "");
  EXPECT_EQ(folded_stack(ustack({"", "main"})), "main;");
}

TEST(Folded, OnlyStackKeyedNumberMaps) {
  EXPECT_FALSE(is_foldable(keyed("@", AggKind::Count, {{S("x"), val(I(1))}})));
  EXPECT_FALSE(is_foldable(keyed("@", AggKind::Hist, {{kstack({"f"}), buckets({1})}})));
  EXPECT_FALSE(is_foldable(scalar("@", AggKind::Count, val(I(1)))));
  EXPECT_TRUE(is_foldable(keyed("@", AggKind::Avg, {{ustack({"f"}), avg(2, 10)}})));
  EXPECT_EQ(folded_text(keyed("@", AggKind::Avg, {{ustack({"f"}), avg(2, 10)}})), "f 5\n");
}

}  // namespace
}  // namespace bpfscope::output
