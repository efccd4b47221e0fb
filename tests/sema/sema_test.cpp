// Table-driven tests of semantic analysis: types, map layouts, probe
// expansion and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lang/lang.h"
#include "builtins/builtins.h"
#include "sema/sema.h"
#include "symbols/symbols.h"

namespace bpfscope::sema {
namespace {

struct Analysed {
  std::unique_ptr<lang::Program> ast;  // stable address: TypedProgram::ast points here
  std::optional<TypedProgram> typed;
  std::string diags;  // rendered diagnostics (errors and warnings)
};

Analysed analyse_text(const std::string& text, const Options& options = {}) {
  Analysed out;
  lang::Source src("stdin", text);
  lang::Diagnostics diags;
  auto parsed = lang::parse(src, diags);
  if (!parsed) {
    out.diags = diags.render(src);
    return out;
  }
  out.ast = std::make_unique<lang::Program>(std::move(*parsed));
  out.typed = analyse(*out.ast, options, diags);
  out.diags = diags.render(src);
  return out;
}

const char* agg_name(output::AggKind k) {
  static const char* names[] = {"plain", "count", "sum", "min", "max", "avg", "stats", "hist", "lhist"};
  return names[static_cast<int>(k)];
}

// "@x[key]=value/agg" per map, ';'-separated, in map order.
std::string describe_maps(const TypedProgram& p) {
  std::string s;
  for (const auto& m : p.maps) {
    if (!s.empty()) s += ";";
    s += m.name + "[" + (m.keyed ? m.key.name() : "") + "]=" + m.value.name() + "/" + agg_name(m.agg);
  }
  return s;
}

std::string describe_units(const TypedProgram& p) {
  std::string s = std::to_string(p.units.size()) + ":";
  for (size_t i = 0; i < p.units.size(); ++i) s += (i ? "," : "") + std::to_string(p.units[i].targets.size());
  return s;
}

// The type name of the first expression whose source text is `text`.
std::string type_of_text(const TypedProgram& p, const std::string& text) {
  for (lang::ExprId e = 0; e < p.ast->exprs.size(); ++e)
    if (p.ast->source.slice(p.ast->expr(e).loc) == text) return p.type_of(e).name();
  return "<no expression '" + text + "'>";
}

struct OkCase {
  std::string text;
  std::string maps;   // describe_maps, exact
  std::string units;  // describe_units ("N:t1,t2"); empty: not checked
  std::vector<std::pair<std::string, std::string>> exprs = {};  // source text -> Type::name()
};

void check_ok(const std::vector<OkCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto a = analyse_text(c.text);
    ASSERT_TRUE(a.typed.has_value()) << a.diags;
    EXPECT_EQ(describe_maps(*a.typed), c.maps);
    if (!c.units.empty()) {
      EXPECT_EQ(describe_units(*a.typed), c.units);
    }
    for (const auto& [text, type] : c.exprs) EXPECT_EQ(type_of_text(*a.typed, text), type) << text;
  }
}

struct ErrCase {
  std::string text;
  std::string error;  // substring of the rendered diagnostics
};

void check_err(const std::vector<ErrCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto a = analyse_text(c.text);
    EXPECT_FALSE(a.typed.has_value());
    EXPECT_NE(a.diags.find(c.error), std::string::npos) << "diagnostics:\n" << a.diags;
  }
}

TEST(Sema, MapTypes) {
  check_ok({
      {"BEGIN { @x = 1; }", "@x[]=int64/plain", "1:1"},
      {"BEGIN { @x = \"hi\"; }", "@x[]=string[3]/plain"},
      {"BEGIN { @x[1] = 2; }", "@x[int64]=int64/plain"},
      {"BEGIN { @x[\"a\", 2] = comm; }", "@x[(string[2],int64)]=string[16]/plain"},
      {"BEGIN { @x[pid] = nsecs; }", "@x[uint64]=uint64/plain"},
      {"BEGIN { @a = 1; @b[2] = \"s\"; }", "@a[]=int64/plain;@b[int64]=string[2]/plain"},
      {"BEGIN { @x = \"ab\"; @x = \"abcdef\"; }", "@x[]=string[7]/plain"},
      {"BEGIN { @x = (1, \"a\"); }", "@x[]=(int8,string[2])/plain"},
  });
}

TEST(Sema, Aggregations) {
  check_ok({
      {"BEGIN { @c = count(); }", "@c[]=uint64/count"},
      {"BEGIN { @c[comm] = count(); }", "@c[string[16]]=uint64/count"},
      {"BEGIN { @s = sum(5); }", "@s[]=int64/sum"},
      {"BEGIN { @m = min(pid); @n = max(pid); }", "@m[]=uint64/min;@n[]=uint64/max"},
      {"BEGIN { @a = avg(1); @t = stats(2); }", "@a[]=int64/avg;@t[]=int64/stats"},
      {"BEGIN { @h = hist(3); }", "@h[]=int64/hist"},
      {"BEGIN { @l = lhist(7, 0, 10, 5); }", "@l[]=int64/lhist"},
      {"BEGIN { @l[pid, comm] = lhist(7, 0, 100, 10); }", "@l[(uint64,string[16])]=int64/lhist"},
  });
}

TEST(Sema, ExprTypes) {
  check_ok({
      {"BEGIN { $x = 1; @y = $x + 2; }", "@y[]=int64/plain", "1:1", {{"$x + 2", "int64"}}},
      {"BEGIN { @y = 1 < 2; }", "@y[]=bool/plain", "", {{"1 < 2", "bool"}}},
      {"BEGIN { @y = comm; }", "@y[]=string[16]/plain", "", {{"comm", "string[16]"}}},
      {"BEGIN { @y = pid; }", "@y[]=uint64/plain", "", {{"pid", "uint32"}}},
      {"BEGIN { @y = (1, \"ab\").1; }", "@y[]=string[3]/plain", "", {{"(1, \"ab\")", "(int8,string[3])"}}},
      {"BEGIN { @y = 1 ? \"a\" : \"bcd\"; }", "@y[]=string[4]/plain", "", {{"1 ? \"a\" : \"bcd\"", "string[4]"}}},
      {"BEGIN { @y = (uint8)300; }", "@y[]=uint64/plain", "", {{"(uint8)300", "uint8"}, {"300", "int16"}}},
      {"tracepoint:syscalls:sys_enter_openat { @f[args.dfd] = args.flags; }", "@f[int64]=int64/plain", "1:1",
       {{"args.dfd", "int32"}}},
      {"tracepoint:syscalls:sys_enter_openat { @s = str(args.filename); }", "@s[]=string[1024]/plain", "1:1",
       {{"args.filename", "int8 *"}}},
      // Pointers: casts, *, [], &, arithmetic.
      {"BEGIN { $p = (uint32 *)curtask; @y = *$p; }", "@y[]=uint64/plain", "",
       {{"(uint32 *)curtask", "uint32 *"}, {"*$p", "uint32"}}},
      {"BEGIN { $p = (int16 *)0; @y = $p[2] + *($p + 1); }", "@y[]=int64/plain", "",
       {{"$p[2]", "int16"}, {"$p + 1", "int16 *"}}},
      {"BEGIN { @y = (uint64)&curtask->pid; }", "@y[]=uint64/plain", "", {{"&curtask->pid", "int32 *"}}},
      {"tracepoint:syscalls:sys_enter_execve { @s = str(args.argv[0]); }", "@s[]=string[1024]/plain", "1:1",
       {{"args.argv", "int8 **"}, {"args.argv[0]", "int8 *"}}},
      {"BEGIN { @c = comm[0]; @t = (1, 2)[1]; }", "@c[]=int64/plain;@t[]=int64/plain", "",
       {{"comm[0]", "int8"}, {"(1, 2)[1]", "int8"}}},
  });
}

TEST(Sema, ProbeExpansion) {
  check_ok({
      {"BEGIN { } END { }", "", "2:1,1"},
      // getp*id matches getpgid, getpid and getppid.
      {"tracepoint:syscalls:sys_enter_getp*id { @c = count(); }", "@c[]=uint64/count", "1:3"},
      {"tracepoint:syscalls:sys_enter_getp?id { @c = count(); }", "@c[]=uint64/count", "1:2"},
      {"tracepoint:syscalls:sys_enter_getpid, tracepoint:syscalls:sys_enter_getppid { @c = count(); }",
       "@c[]=uint64/count", "1:2"},
      {"tracepoint:syscalls:sys_enter_getp*id { @c[probe] = count(); }", "@c[string[38]]=uint64/count", "3:1,1,1"},  // probe: one unit per target,
      {"interval:s:1 { exit(); }", "", "1:1"},
  });
}

TEST(Sema, Errors) {
  check_err({
      {"BEGIN { @x = foo(1); }", "Unknown function: foo"},
      {"BEGIN { @x = *\"ab\"; }", "Can only dereference pointers, not string[3]"},
      {"BEGIN { $p = (void *)0; @x = *$p; }", "Can not dereference a pointer to an unknown type (void *)"},
      {"BEGIN { @x = &pid; }", "& takes the address of a variable or a kernel struct member only"},
      {"BEGIN { @x = comm[16]; }", "the index 16 is out of bounds for array of size 16"},
      {"BEGIN { @x = (1, 2)[2]; }", "Invalid tuple index: 2. Found 2 elements in tuple."},
      {"BEGIN { $i = 1; @x = (1, 2)[$i]; }", "Array-style access for tuples only valid for integer literals"},
      {"BEGIN { @x = pid[1]; }", "The array index operator [] can not be used on expressions of type uint32"},
      {"BEGIN { @x = (struct nosuch *)0; }", "Cannot resolve unknown type \"struct nosuch\""},
      {"BEGIN { printf(\"%d\\n\", $x); }", "Undefined or undeclared variable: $x"},
      // A literal that does not fit a declared integer type (bpftrace 0.26).
      {"BEGIN { let $a: uint8 = 256; }",
       "Type mismatch for $a: trying to assign value of type 'int16' when variable is declared as 'uint8'"},
      {"BEGIN { let $a: int8 = -129; }",
       "Type mismatch for $a: trying to assign value of type 'int16' when variable is declared as 'int8'"},
      {"BEGIN { let $a: uint16; $a = -1; }",
       "Type mismatch for $a: trying to assign value of type 'int8' when variable already has a type 'uint16'"},
      {"BEGIN { @x = 1; @x = \"s\"; }", "Type mismatch for @x"},
      {"BEGIN { @x[1] = 1; @x[\"a\"] = 1; }", "Argument mismatch for @x"},
      {"BEGIN { $x = 1; $x = \"s\"; }", "Type mismatch for $x"},
      {"BEGIN { printf(\"%d %d\\n\", 1); }", "printf: Not enough arguments for format string (1 supplied, 2 expected)"},
      {"BEGIN { printf(\"%d\\n\", 1, 2); }", "printf: Too many arguments"},
      {"BEGIN { printf(\"%d\\n\", \"str\"); }", "printf: %d specifier expects a value of type integer"},
      {"tracepoint:syscalls:sys_enter_openat { @x = args.nosuchfield; }",
       "Can't find field 'nosuchfield' in tracepoint syscalls:sys_enter_openat"},
      {"tracepoint:syscalls:sys_enter_nosuchcall { }", "No matches for tracepoint syscalls:sys_enter_nosuchcall."},
      {"nosuchprobe:foo { }", "Invalid probe type: nosuchprobe"},
      {"BEGIN { count(); }", "count() should be assigned to a map"},
      {"BEGIN { hist(1); }", "hist() should be assigned to a map"},
      {"BEGIN { @l = lhist(1, 10, 5, 1); }", "lhist: min must be less than max"},
      {"BEGIN { @l = lhist(1, 0, 10, 0); }", "lhist: step must be between 1 and max - min"},
      {"BEGIN { @l = lhist(1, 0, 10, 11); }", "lhist: step must be between 1 and max - min"},
      {"BEGIN { @l = lhist(1, 0, 100000, 1); }", "lhist: too many buckets"},
      {"BEGIN { $m = 0; @l = lhist(1, $m, 10, 1); }", "lhist: min, max and step must be non-negative integer literals"},
      {"BEGIN { @l = lhist(1, 0, 10); }", "lhist() requires 4 arguments"},
      {"BEGIN { @l = lhist(1, 0, 10, 1); @l = lhist(2, 0, 20, 1); }", "the same map must use the same lhist() parameters"},
      {"BEGIN { @h = hist(1, 9); }", "hist: bits must be a constant between 0 and 5"},
      {"BEGIN { if (1) { $x = 1; } printf(\"%d\\n\", $x); }", "Undefined or undeclared variable: $x"},
      {"BEGIN { { $y = 1; } @z = $y; }", "Undefined or undeclared variable: $y"},
      {"BEGIN { @x = args.foo; }", "The args builtin can only be used with tracepoint, rawtracepoint and fentry/fexit probes"},
      {"BEGIN { @x = 1 == \"a\"; }", "Type mismatch for '=='"},
      {"BEGIN { @x = 1 ? 2 : \"a\"; }", "Ternary operator must return the same type"},
      {"BEGIN { @x = (1, 2).5; }", "Invalid tuple index"},
      {"BEGIN { @x = @nosuch; }", "Undefined map: @nosuch"},
      {"BEGIN { @c = stats(1); @x = @c; }", "a stats() map has no single value to read in a probe: @c"},
      {"BEGIN { @h = hist(1); @x = @h; }", "a hist() map has no single value to read in a probe: @h"},
      {"BEGIN { exit(\"a\"); }", "exit() expects an integer exit code"},
      {"BEGIN { @x = (foo)1; }", "Cannot resolve unknown type \"foo\""},
      {"BEGIN { $x = 1; let $x = 2; }", "Variable shadowing is not allowed: $x"},
      {"BEGIN { @x[1] = 1; @x = 2; }", "@x used as a map without an explicit key (scalar map)"},
      {"BEGIN { @x = 1; @x[1] = 2; }", "@x used as a map with an explicit key (non-scalar map)"},
      {"BEGIN { @c = count(); @c = sum(1); }", "Type mismatch for @c"},
      {"BEGIN { @x = 1 } BEGIN { @x = \"a\" }", "Type mismatch for @x"},
      {"BEGIN { printf(1); }", "printf: the first argument must be a string literal"},
      {"BEGIN { @x = \"a\" + 1; }", "The + operator can not be used on expressions of types string[2], int8"},
      {"BEGIN { exit(1, 2); }", "exit() requires 0 to 1 argument (2 provided)"},
      {"tracepoint:syscalls { }", "tracepoint probe must have 2 arguments"},
      {"BEGIN { $x++; }", "Undefined or undeclared variable: $x"},
      {"BEGIN { print(@nope); }", "Undefined map: @nope"},
      {"BEGIN { @l = lhist(1, -1, 10, 1); }", "lhist: min, max and step must be non-negative integer literals"},
  });
}

TEST(Sema, UserProbeErrors) {
  check_err({
      {"uprobe:libc:cpp:\"no_such_ns::f\" { }", "no C++ function in /lib/x86_64-linux-gnu/libc.so.6 matches no_such_ns::f"},
      {"uprobe:libc:c:f:g { }", "uprobe probe must be uprobe:BINARY:FUNCTION or uprobe:BINARY:cpp:"},
      {"usdt:libnosuchlib_bpfscope:probe { }", "binary or library not found: libnosuchlib_bpfscope"},
      {"usdt:/usr/bin/python3.11 { }", "usdt probe must be usdt:BINARY:[PROVIDER:]NAME"},
      {"usdt:/usr/bin/python3.11:python:no__such { }", "no USDT probe python:no__such in /usr/bin/python3.11"},
      {"usdt:*:bpfscope_nosuch_provider:x { }",
       "no USDT probe bpfscope_nosuch_provider:x in the files mapped by any process"},
  });
}

// uaddr("sym"): a pointer to an integer of the symbol's size; in a shared
// library (ET_DYN) the address is relative to the probed instruction.
TEST(Sema, Uaddr) {
  check_ok({
      {"uprobe:libc:nanosleep { @p = uaddr(\"program_invocation_name\"); }", "@p[]=int64 */plain", "1:1"},
      {"uretprobe:libc:nanosleep { @v = *uaddr(\"program_invocation_name\"); }", "@v[]=int64/plain"},
  });
  auto a = analyse_text("uprobe:libc:nanosleep { @p = uaddr(\"program_invocation_name\"); }");
  ASSERT_TRUE(a.typed) << a.diags;
  ASSERT_EQ(a.typed->uaddr_of.size(), 1u);
  const auto& sites = a.typed->uaddr_of.begin()->second;
  ASSERT_EQ(sites.size(), 1u);
  auto elf = symbols::cached_elf(sites[0].path);
  ASSERT_TRUE(elf);
  EXPECT_TRUE(sites[0].relative);
  EXPECT_EQ(static_cast<uint64_t>(sites[0].value),
            (*elf)->symbol("program_invocation_name")->vaddr - *(*elf)->offset_to_vaddr(sites[0].offset));
  check_err({
      {"BEGIN { @p = uaddr(\"x\"); }", "uaddr can only be used with u(ret)probes and usdt probes"},
      {"uprobe:libc:nanosleep { @p = uaddr(\"no_such_symbol_bpfscope\"); }",
       "Could not resolve symbol: /lib/x86_64-linux-gnu/libc.so.6:no_such_symbol_bpfscope"},
      {"uprobe:libc:nanosleep { @p = uaddr(comm); }", "uaddr() expects a string literal"},
  });
}

// Pointers keep their type as map keys (printed in hex).
TEST(Sema, PointerKeys) {
  check_ok({
      {"BEGIN { @k[(int8 *)1] = 1; }", "@k[int8 *]=int64/plain"},
      {"BEGIN { @k[(int8 *)1, 2] = (int16 *)3; }", "@k[(int8 *,int64)]=int16 */plain"},
  });
}

TEST(Sema, ListProbes) {
  auto lines = [](const std::string& pattern, bool verbose) {
    auto out = list_probes(pattern, verbose);
    EXPECT_TRUE(out.has_value()) << pattern << ": " << out.error();
    return out ? *out : std::string();
  };
  EXPECT_EQ(lines("iter:task_vma", true), "iter:task_vma\n    struct task_struct *task\n    struct vm_area_struct *vma\n");
  EXPECT_NE(lines("iter:*", false).find("iter:task\n"), std::string::npos);
  EXPECT_EQ(lines("kprobe:do_nanosleep", false), "kprobe:do_nanosleep\n");
  EXPECT_EQ(lines("kretprobe:do_nanosleep", false), "kretprobe:do_nanosleep\n");
  EXPECT_EQ(lines("fentry:do_nanosleep", true),
            "fentry:vmlinux:do_nanosleep\n    struct hrtimer_sleeper *t\n    enum hrtimer_mode mode\n    int retval\n");
  EXPECT_EQ(lines("fexit:vmlinux:do_nanosleep", false), "fexit:vmlinux:do_nanosleep\n");
  EXPECT_EQ(lines("fentry:nosuchmodule:do_nanosleep", false), "");
  EXPECT_EQ(lines("usdt:/usr/bin/python3.11:python:gc__*", true),
            "usdt:/usr/bin/python3.11:python:gc__done\n    int64 arg0 (-8@%r12)\n"
            "usdt:/usr/bin/python3.11:python:gc__start\n    int32 arg0 (-4@112(%rsp))\n");
  EXPECT_EQ(lines("usdt:/usr/bin/python3.11:gc__start", false), "usdt:/usr/bin/python3.11:python:gc__start\n");
  auto missing = list_probes("usdt:libnosuchlib_bpfscope:*", false);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error(), "binary or library not found: libnosuchlib_bpfscope");
  auto no_pid = list_probes("usdt:*", false, 999999999);
  ASSERT_FALSE(no_pid.has_value());
  EXPECT_EQ(no_pid.error(), "cannot read the mappings of process 999999999");
  EXPECT_FALSE(list_probes("BEGIN:*", false).has_value());
  EXPECT_EQ(lines("hardware:c*", false), "hardware:cache-misses:\nhardware:cache-references:\nhardware:cpu-cycles:\n"
                                          "hardware:cycles:\n");
  EXPECT_EQ(lines("profile:*s", false), "profile:s:\nprofile:ms:\nprofile:us:\nprofile:ns:\n");
  EXPECT_EQ(lines("software:cs", false), "software:cs:\n");
  EXPECT_EQ(lines("struct fd,interval:hz", true), "vmlinux: struct fd {\n    long unsigned int word;\n};\ninterval:hz:\n");
  EXPECT_EQ(lines("sched_process_exit", false), "rawtracepoint:sched_process_exit\n");
}

TEST(Sema, DataFunctions) {
  check_ok({
      {"BEGIN { @a = pton(\"1.2.3.4\"); @b = pton(\"::1\"); }", "@a[]=uint8[4]/plain;@b[]=uint8[16]/plain"},
      {"BEGIN { @x = (uint32)pton(\"1.2.3.4\"); @e = pton(\"1.2.3.4\") == pton(\"4.3.2.1\"); }",
       "@x[]=uint64/plain;@e[]=bool/plain"},
      {"BEGIN { $s = \"abc\"; @b = buf($s, 2); @c = buf(pton(\"::1\")); @d = buf(0, 5000); }",
       "@b[]=buffer[2]/plain;@c[]=buffer[16]/plain;@d[]=buffer[1024]/plain"},
      {"tracepoint:syscalls:sys_enter_openat { $n = 7; @b = buf(args.filename, $n); @m[macaddr(args.filename)] = 1; }",
       "@b[]=buffer[1024]/plain;@m[mac_address]=int64/plain"},
      {"BEGIN { @t = strftime(\"%H\", nsecs); @u[strftime(\"%Y\", 0)] = 1; }",
       "@t[]=timestamp/plain;@u[timestamp]=int64/plain"},
      {"BEGIN { @c = cgroupid(\"/sys/fs/cgroup/unified\"); }", "@c[]=uint64/plain"},
      {"BEGIN { @a[1] = 1; @n = len(@a); }", "@a[int64]=int64/plain;@n[]=int64/plain"},
      {"tracepoint:syscalls:sys_enter_execve { join(args.argv); join(args.argv, \",\"); cat(\"/proc/%d/comm\", pid); }", ""},
  });
}

TEST(Sema, DataFunctionErrors) {
  check_err({
      {"BEGIN { @a = pton(\"1.2.3\"); }", "pton() expects a valid IPv4/IPv6 address, got 1.2.3"},
      {"BEGIN { $s = \"1.2.3.4\"; @a = pton($s); }", "pton() expects a string literal (string provided)"},
      {"BEGIN { @x = (uint16)pton(\"1.2.3.4\"); }", "Cannot cast from \"uint8[4]\" to \"uint16\""},
      {"BEGIN { @e = pton(\"1.2.3.4\") == pton(\"::1\"); }", "Type mismatch for '=='"},
      {"BEGIN { $s = \"ab\"; @b = buf($s); }", "buf() expects a length argument for non-array type string"},
      {"BEGIN { $s = \"ab\"; @b = buf($s, -1); }", "buf cannot use negative length (-1)"},
      {"BEGIN { @b = buf(1, \"x\"); }", "buf(): the length must be an integer"},
      {"BEGIN { $s = \"ab\"; @m = macaddr($s); }", "macaddr() argument must be 6 bytes in size"},
      {"BEGIN { @m = macaddr(\"abcdef\"); }", "macaddr() does not support literal string arguments"},
      {"BEGIN { join(\"a\"); }", "join() only supports int or pointer arguments (string[2] provided)"},
      {"BEGIN { join(1, 2); }", "join() expects a string literal (integer provided)"},
      {"BEGIN { @t = strftime(1, 2); }", "strftime() expects a string literal (integer provided)"},
      {"BEGIN { @t = strftime(\"%H\", \"a\"); }", "strftime() only supports integer arguments (string[2] provided)"},
      {"BEGIN { @c = cgroupid(\"/no/such/cgroup\"); }", "Failed to get `cgroupid` for path: \"/no/such/cgroup\""},
      {"BEGIN { cat(1); }", "cat() expects a string literal (integer provided)"},
      {"BEGIN { cat(\"%d\"); }", "cat: Not enough arguments for format string (0 supplied, 1 expected)"},
      {"BEGIN { system(\"ls\"); }", "system() is an unsafe function being used in safe mode"},
      {"tracepoint:syscalls:sys_enter_getppid { signal(9); }", "signal() is unsafe. To use you need the --unsafe flag"},
      {"BEGIN { @s = 1; @n = len(@s); }", "call to len() expects a map with explicit keys (non-scalar map): @s has none"},
      {"BEGIN { @n = len(1); }", "len() expects a map or a stack (int8 provided)"},
      {"BEGIN { @n = len(@nope); }", "Undefined map: @nope"},
  });
}

// signal() and system() with --unsafe.
TEST(Sema, StringAndNameFunctions) {
  check_ok({
      {"BEGIN { @a = strcontains(\"abc\", \"b\"); @b = strstr(comm, \"x\"); @c = memcmp(\"ab\", \"ac\", 2); }",
       "@a[]=bool/plain;@b[]=int64/plain;@c[]=int64/plain"},
      {"BEGIN { @e = strerror(1); @s[syscall_name(0)] = signal_name(9); @g = cgroup_path(cgroup); }",
       "@e[]=strerror_t/plain;@s[syscall_name_t]=signal_name_t/plain;@g[]=cgroup_path_t/plain"},
      {"BEGIN { @n = getopt(\"n\", 5); @f = getopt(\"f\"); @s = getopt(\"s\", \"abc\", \"a name\"); }",
       "@n[]=int64/plain;@f[]=bool/plain;@s[]=string[4]/plain"},
      {"uprobe:libc:malloc { @r = reg(\"sp\"); @p = str(uptr(reg(\"di\"))); }", "@r[]=uint64/plain;@p[]=string[1024]/plain"},
  });
}

TEST(Sema, StringAndNameFunctionErrors) {
  check_err({
      {"BEGIN { @a = strcontains(\"abc\", 1); }", "strcontains() expects string arguments (int8 provided)"},
      {"BEGIN { @a = strstr(1, \"a\"); }", "strstr() expects string arguments (int8 provided)"},
      {"BEGIN { @a = strstr(\"a\"); }", "strstr() requires 2 arguments (1 provided)"},
      {"BEGIN { @e = strerror(\"x\"); }", "strerror() expects an integer (string[2] provided)"},
      {"BEGIN { @e = signal_name(comm); }", "signal_name() expects an integer (string[16] provided)"},
      {"BEGIN { @g = cgroup_path(1, \"unified\"); }", "cgroup_path(): a hierarchy filter is not supported"},
      {"BEGIN { @m = memcmp(\"ab\", \"abc\", 4); }", "memcmp(): the size (4) is larger than the arguments (3 bytes)"},
      {"BEGIN { $n = 1; @m = memcmp(\"ab\", \"ab\", $n); }", "memcmp(): the size must be a non-negative integer constant"},
      {"BEGIN { @m = memcmp(1, \"ab\", 1); }", "memcmp() expects strings or byte arrays (int8 provided)"},
      {"BEGIN { errorf(1); }", "errorf() expects a string literal (integer provided)"},
      {"BEGIN { warnf(\"%d %d\", 1); }", "warnf: Not enough arguments for format string (1 supplied, 2 expected)"},
      {"BEGIN { $x = \"n\"; @g = getopt($x); }", "getopt() expects a string literal name (string provided)"},
      {"BEGIN { @g = getopt(\"n\", pid); }", "getopt(): the default must be a literal (bool, integer or string)"},
      {"BEGIN { @g = getopt(\"n\", 1, 2); }", "getopt(): the description must be a string literal"},
      {"BEGIN { @r = reg(\"sp\"); }", "reg can not be used with \"BEGIN\" probes"},
      {"tracepoint:syscalls:sys_enter_openat { @r = reg(\"sp\"); }", "reg can not be used with \"tracepoint\" probes"},
      {"uprobe:libc:malloc { @r = reg(\"xyz\"); }", "'xyz' is not a valid register"},
      {"BEGIN { @p = kptr(\"a\"); }", "kptr() expects a pointer (string[2] provided)"},
      {"BEGIN { $p = path(0); }", "path() needs the bpf_d_path helper"},
      {"kprobe:vfs_read { override(1); }", "override() is unsafe. To use you need the --unsafe flag"},
  });
}

// getopt() reads the named options given after `--`.
TEST(Sema, GetoptOptions) {
  auto run = [](const std::string& text, std::map<std::string, std::optional<std::string>> named) {
    Options options;
    options.named_args = std::move(named);
    Analysed out = analyse_text(text, options);
    if (!out.typed) return out.diags;
    std::string s;
    for (lang::ExprId e = 0; e < out.ast->exprs.size(); ++e) {
      if (out.typed->function_of[e] != builtins::find("getopt")) continue;
      int64_t v = out.typed->const_of[e].value_or(-1);
      s += (s.empty() ? "" : ",") +
           (out.typed->type_of(e).is_string() ? out.typed->const_strings.at(static_cast<size_t>(v)) : std::to_string(v));
    }
    return s;
  };
  EXPECT_EQ(run("BEGIN { @a = getopt(\"n\", 1); @b = getopt(\"f\"); @c = getopt(\"s\", \"x\"); }",
                {{"n", "0x10"}, {"f", std::nullopt}, {"s", "hello"}}),
            "16,1,hello");
  EXPECT_EQ(run("BEGIN { @a = getopt(\"n\", 1); @b = getopt(\"f\", true); @c = getopt(\"s\", \"x\"); }", {}), "1,1,x");
  EXPECT_EQ(run("BEGIN { @b = getopt(\"f\", true); }", {{"f", "false"}}), "0");
  // A non-negative default makes the option unsigned: all 64 bits, a uint64 past INT64_MAX.
  EXPECT_EQ(run("BEGIN { @a = getopt(\"n\", 1); @b = getopt(\"m\", -1); }",
                {{"n", "0xffffffffffffffff"}, {"m", "-10"}}),
            "-1,-10");
  {
    Options options;
    options.named_args = {{"n", "0xffffffffffffffff"}};
    auto a = analyse_text("BEGIN { @a = getopt(\"n\", 1); }", options);
    ASSERT_TRUE(a.typed.has_value()) << a.diags;
    EXPECT_EQ(describe_maps(*a.typed), "@a[]=uint64/plain");
  }
  EXPECT_NE(run("BEGIN { @a = getopt(\"n\", 1); }", {{"n", "0x1ffffffffffffffff"}}).find("value is out of range"),
            std::string::npos);
  EXPECT_NE(run("BEGIN { @a = getopt(\"n\", 1); }", {{"m", "1"}}).find("unexpected program command line options: --m"),
            std::string::npos);
  EXPECT_NE(run("BEGIN { @a = getopt(\"n\", 1); }", {{"n", "x"}}).find("program command line option --n invalid integer (value: x)"),
            std::string::npos);
  EXPECT_NE(run("BEGIN { @a = getopt(\"s\", \"d\"); }", {{"s", std::nullopt}}).find("expects a string (value: true)"),
            std::string::npos);
}

// Through the fentry fallback a kprobe's argN must exist; through the kprobe
// fallback an fentry argument must be in a register.
TEST(Sema, KprobeFentryFallbackErrors) {
  Options no_kprobes;
  no_kprobes.kprobes = 0;
  no_kprobes.fentry = 1;
  EXPECT_NE(analyse_text("kprobe:tcp_sendmsg { @a = arg3; }", no_kprobes)
                .diags.find("arg3 does not exist: tcp_sendmsg has 3 arguments (kprobes run as fentry here)"),
            std::string::npos);
  EXPECT_TRUE(analyse_text("kprobe:tcp_sendmsg { @a = arg2; }", no_kprobes).typed.has_value());
  Options no_fentry;
  no_fentry.kprobes = 1;
  no_fentry.fentry = 0;
  EXPECT_TRUE(analyse_text("fentry:do_mmap { @a = args.vm_flags; }", no_fentry).typed.has_value());
  EXPECT_NE(analyse_text("fentry:do_mmap { @a = args.pgoff; }", no_fentry)
                .diags.find("argument 'pgoff' of do_mmap is passed on the stack"),
            std::string::npos);
  // No BTF for a wildcard: the kprobe stays a kprobe (and fails at attach).
  auto wild = analyse_text("kprobe:tcp_send* { @a = arg3; }", no_kprobes);
  ASSERT_TRUE(wild.typed.has_value()) << wild.diags;
  EXPECT_EQ(wild.typed->units.at(0).mechanism, ProbeKind::Kprobe);
}

TEST(Sema, UnsafeFunctions) {
  auto analyse_unsafe = [](const std::string& text) {
    Options options;
    options.unsafe = true;
    Analysed out = analyse_text(text, options);
    return out.typed ? std::string("ok") : out.diags;
  };
  EXPECT_EQ(analyse_unsafe("tracepoint:syscalls:sys_enter_getppid { signal(\"KILL\"); signal(\"SIGTERM\"); signal(pid % 3 + 1); }"), "ok");
  EXPECT_EQ(analyse_unsafe("BEGIN { system(\"echo %d\", 1); }"), "ok");
  EXPECT_NE(analyse_unsafe("BEGIN { signal(9); }").find("signal can not be used with \"BEGIN\" probes"), std::string::npos);
  EXPECT_NE(analyse_unsafe("END { signal(9); }").find("signal can not be used with \"END\" probes"), std::string::npos);
  EXPECT_NE(analyse_unsafe("tracepoint:syscalls:sys_enter_getppid { signal(\"FOO\"); }").find("FOO is not a valid signal"),
            std::string::npos);
  EXPECT_NE(analyse_unsafe("tracepoint:syscalls:sys_enter_getppid { signal(65); }")
                .find("65 is not a valid signal, allowed range: [1,64]"),
            std::string::npos);
}

// for ($kv : @m): $kv is (key, value); multi-key maps give a tuple key, and
// per-CPU aggregations read as one integer (summed over the CPUs).
TEST(Sema, ForMapLoops) {
  check_ok({
      {"BEGIN { @m[1] = \"a\"; for ($kv : @m) { @k = $kv.0; @v = $kv.1; } }",
       "@m[int64]=string[2]/plain;@k[]=int64/plain;@v[]=string[2]/plain", "", {{"@m", "string[2]"}}},
      {"BEGIN { @t[1, \"ab\"] = 5; for ($kv : @t) { @a = $kv.0.1; @b = $kv; } }",
       "@t[(int64,string[3])]=int64/plain;@a[]=string[3]/plain;@b[]=((int64,string[3]),int64)/plain"},
      {"BEGIN { @c[comm] = count(); for ($kv : @c) { @n = $kv.1; } }",
       "@c[string[16]]=uint64/count;@n[]=uint64/plain"},
      // The map may be filled by a later probe; outer variables are visible.
      {"BEGIN { $x = 1; for ($kv : @late) { $x += $kv.1; } @r = $x; } END { @late[2] = 3; }",
       "@r[]=int64/plain;@late[int64]=int64/plain"},
      // Nested loops, and break/continue inside.
      {"BEGIN { @a[1] = 1; for ($x : @a) { for ($y : @a) { if ($y.0 == 1) { continue; } break; } } }",
       "@a[int64]=int64/plain"},
  });
  check_err({
      {"BEGIN { for ($kv : @nope) { } }", "Undefined map: @nope"},
      {"BEGIN { @x = 1; for ($kv : @x) { } }", "Maps used as for-loop expressions must have keys to iterate over: @x"},
      {"BEGIN { @h[1] = hist(2); for ($kv : @h) { } }", "Loop expression does not support type: hist"},
      {"BEGIN { @s[1] = stats(2); for ($kv : @s) { } }", "Loop expression does not support type: stats"},
      {"BEGIN { @m[1] = 1; for ($kv : @m[1]) { } }", "Loop expression must be a map"},
      {"BEGIN { $y = 1; for ($kv : $y) { } }", "Loop expression must be a map"},
      {"BEGIN { @m[1] = 1; $kv = 2; for ($kv : @m) { } }", "Variable shadowing is not allowed: $kv"},
      {"BEGIN { @m[1] = 1; for ($kv : @m) { } @z = $kv.0; }", "Undefined or undeclared variable: $kv"},
      {"BEGIN { @m[1] = 1; for ($kv : @m) { @z = $kv.2; } }", "Invalid tuple index: 2"},
  });
}

// Block scoping that is valid: sibling blocks may reuse a name; an outer
// variable is visible inside nested blocks.
TEST(Sema, TypeofTypes) {
  check_ok({
      {"BEGIN { $x = (int16)1; let $y: typeof($x); $y = 2; @y = $y; @p = (typeof($x) *)0; @s = sizeof(typeof($x)[3]); }",
       "@y[]=int64/plain;@p[]=int16 */plain;@s[]=uint64/plain", "",
       {{"(typeof($x) *)0", "int16 *"}, {"sizeof(typeof($x)[3])", "uint64"}}},
      {"BEGIN { let $y: typeof(1); @y = $y; }", "@y[]=int64/plain"},
      {"BEGIN { @s = sizeof(BTF_VAR_STATIC); }", "@s[]=uint64/plain", "", {{"sizeof(BTF_VAR_STATIC)", "uint64"}}},
      {"BEGIN { let $a: typeof(size_t) = 1; @c = (char)1; @u = (uint64_t)1; @a = $a; }",
       "@c[]=int64/plain;@u[]=uint64/plain;@a[]=uint64/plain", "", {{"(char)1", "int8"}, {"(uint64_t)1", "uint64"}}},
  });
  check_err({
      {"BEGIN { print(typeof(uint8)); }", "`typeof` builtin only valid for macro calls"},
  });
}

TEST(Sema, BlockScoping) {
  check_ok({
      {"BEGIN { if (1) { $x = 1; @a = $x; } else { $x = \"s\"; @b = $x; } }", "@a[]=int64/plain;@b[]=string[2]/plain"},
      {"BEGIN { $x = 1; if (1) { if (1) { @a = $x; } } }", "@a[]=int64/plain"},
      {"BEGIN { $x = 1; if (1) { $x = 2; } @a = $x; }", "@a[]=int64/plain"},
      // `let $x;` takes its type from later assignments; never assigned, it is an int64.
      {"BEGIN { let $x; if ($x) { $x = 1; } @a = $x; let $s; if ($s == \"\") { $s = \"ab\"; } @b = $s; let $n; @c = $n; }",
       "@a[]=int64/plain;@b[]=string[3]/plain;@c[]=int64/plain"},
  });
}

TEST(Sema, MapDeclarations) {
  struct Case {
    std::string text;
    std::string map;  // the map the declaration names
    bool lru, percpu;
    uint32_t max_entries;
  };
  const std::vector<Case> cases = {
      {"let @a = hash(7); BEGIN { @a[1] = 1; }", "@a", false, false, 7},
      {"let @a = lruhash(4); BEGIN { @a[1] = 1; }", "@a", true, false, 4},
      {"let @a = percpuhash(3); BEGIN { @a[1] = count(); }", "@a", false, true, 3},
      {"let @a = percpulruhash(2); BEGIN { @a[1] = hist(1); }", "@a", true, true, 2},
      {"BEGIN { @a[1] = 1; } let @a = lruhash(9);", "@a", true, false, 9},
      {"let @b = hash(5); BEGIN { @a[1] = 1; @b = 2; }", "@a", false, false, 4096},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto a = analyse_text(c.text);
    ASSERT_TRUE(a.typed.has_value()) << a.diags;
    const MapInfo* m = nullptr;
    for (const auto& mi : a.typed->maps)
      if (mi.name == c.map) m = &mi;
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->lru, c.lru);
    EXPECT_EQ(m->percpu, c.percpu);
    EXPECT_EQ(m->max_entries, c.max_entries);
  }
  auto unused = analyse_text("let @u = hash(2); BEGIN { @a = 1; }");
  ASSERT_TRUE(unused.typed.has_value());
  EXPECT_NE(unused.diags.find("stdin:1:1-17: WARNING: Unused map: @u"), std::string::npos) << unused.diags;
  check_err({
      {"let @a = hashmap(2); BEGIN { @a[1] = 1; }",
       "stdin:1:10-17: ERROR: Invalid bpf map type: hashmap\nlet @a = hashmap(2); BEGIN { @a[1] = 1; }\n"
       "         ~~~~~~~\nHINT: Valid map types: hash, lruhash, percpuhash, percpulruhash"},
      {"let @a = hash(2); BEGIN { @a[1] = count(); }",
       "stdin:1:27-32: ERROR: Incompatible map types. Type from declaration: hash. Type from value/key type: "
       "percpuhash"},
      {"let @a = percpulruhash(2); BEGIN { @a[1] = 1; }",
       "Incompatible map types. Type from declaration: percpulruhash. Type from value/key type: hash"},
      {"let @a = hash(0); BEGIN { @a[1] = 1; }", "stdin:1:1-17: ERROR: Invalid number of entries for @a: 0"},
      {"let @a = hash(4294967296); BEGIN { @a[1] = 1; }", "Invalid number of entries for @a: 4294967296"},
      {"let @a = hash(2); let @a = lruhash(3); BEGIN { @a[1] = 1; }",
       "stdin:1:19-38: ERROR: Map @a is already declared"},
  });
}

TEST(Sema, TuplesAndRecords) {
  check_ok({
      {"BEGIN { @r = (a=1, b=\"x\"); }", "@r[]=record { .a = int8, .b = string[2] }/plain", "",
       {{"(a=1, b=\"x\")", "record { .a = int8, .b = string[2] }"}}},
      // A record assigned with its fields in another order keeps the first order.
      {"BEGIN { @r = (a=1, b=\"x\"); @r = (b=\"yyy\", a=2); }", "@r[]=record { .a = int8, .b = string[4] }/plain"},
      {"BEGIN { $r = (a=1, b=(c=\"s\", d=2)); @x = $r.b.c; }", "@x[]=string[2]/plain", "",
       {{"$r.b", "record { .c = string[2], .d = int8 }"}}},
      {"BEGIN { @k[(a=1, b=2)] = 1; @k[(b=3, a=4)] = 2; }", "@k[record { .a = int64, .b = int64 }]=int64/plain"},
      {"BEGIN { @e = (1, \"a\") == (2, \"abc\"); @f = (a=1) != (a=2); }", "@e[]=bool/plain;@f[]=bool/plain"},
      // Tuple variables widen their strings to the longest value assigned,
      // also for reads before the wider assignment.
      {"BEGIN { $t = (\"a\", 1); @x = $t; $t = (\"abcdef\", 2); }", "@x[]=(string[7],int8)/plain"},
      {"BEGIN { @t[1, (2, \"a\")] = 1; @t[3, (4, \"bcd\")] = 2; }", "@t[(int64,(int8,string[4]))]=int64/plain"},
  });
  check_err({
      {"BEGIN { $r = (a=1); @x = $r.c; }", "stdin:1:26-30: ERROR: Record has no field named 'c': record { .a = int8 }"},
      {"BEGIN { $r = (a=1); @x = $r.0; }", "Record has no field named '0'"},
      {"BEGIN { @x = (a=1) == (b=1); }",
       "stdin:1:14-28: ERROR: Type mismatch for '==': comparing 'record { .a = int8 }' with 'record { .b = int8 }'"},
      {"BEGIN { @x = (1, 2) == (1, \"a\"); }",
       "Type mismatch for '==': comparing '(int8,int8)' with '(int8,string[2])'"},
      {"BEGIN { @x = (1, 2) == (1, 2, 3); }", "Type mismatch for '=='"},
      {"BEGIN { @x = (a=1) < (a=2); }", "Type mismatch for '<'"},
      {"BEGIN { $x = (a=1); $x = (1,); }", "Type mismatch for $x: trying to assign value of type '(int8)'"},
      {"BEGIN { @x = (a=1, b=2); @x = (a=1, c=2); }", "Type mismatch for @x"},
      {"BEGIN { @x[(a=1)] = 1; @x[(b=1)] = 1; }", "Argument mismatch for @x"},
      {"BEGIN { $t = (1, \"a\"); $t = (\"a\", 1); }", "Type mismatch for $t"},
  });
}

// Positional parameters: integer-looking ones (as bpftrace's stoll reads
// them) are integers everywhere, others strings; str($N) is always the text;
// in an attach point $N is replaced by its text.
TEST(Sema, PositionalParameters) {
  auto run = [](const std::string& text, std::vector<std::string> params) {
    Options options;
    options.positional = std::move(params);
    return analyse_text(text, options);
  };
  for (const auto& [param, value] : std::vector<std::pair<std::string, int64_t>>{
           {"42", 42}, {"0x10", 16}, {"-5", -5}, {"010", 8}, {"+7", 7}}) {
    SCOPED_TRACE(param);
    auto a = run("BEGIN { @m[$1] = $1 + 1; printf(\"%d %s\\n\", $1, str($1)); }", {param});
    ASSERT_TRUE(a.typed.has_value()) << a.diags;
    EXPECT_EQ(describe_maps(*a.typed), "@m[int64]=int64/plain");
    EXPECT_EQ(type_of_text(*a.typed, "str($1)"), "string[" + std::to_string(param.size() + 1) + "]");
    for (lang::ExprId e = 0; e < a.ast->exprs.size(); ++e) {
      if (a.ast->expr(e).kind == lang::ExprKind::Positional && a.typed->type_of(e).is_int()) {
        EXPECT_EQ(a.typed->const_of[e], value);
      }
    }
  }
  auto s = run("BEGIN { @s = $1; @n = $2; @u = $3; @t = str($3); }", {"abc", "18446744073709551616"});
  ASSERT_TRUE(s.typed.has_value()) << s.diags;
  EXPECT_EQ(describe_maps(*s.typed), "@s[]=string[4]/plain;@n[]=string[21]/plain;@u[]=int64/plain;@t[]=string[1]/plain");

  // str($N + k): the text from byte k on, a constant.
  auto k = run("BEGIN { @a = str($1 + 1); @b = str($1 + 2, 2); }", {"hello"});
  ASSERT_TRUE(k.typed.has_value()) << k.diags;
  EXPECT_EQ(describe_maps(*k.typed), "@a[]=string[5]/plain;@b[]=string[3]/plain");
  EXPECT_EQ(k.typed->const_strings, (std::vector<std::string>{"ello", "ll"}));

  auto p = run("interval:ms:$1 { } profile:hz:$2 { } software:cpu-clock:$1 { }", {"100", "99"});
  ASSERT_TRUE(p.typed.has_value()) << p.diags;
  EXPECT_EQ(describe_units(*p.typed), "3:1,1,1");
  EXPECT_EQ(p.typed->units[0].targets[0].name, "interval:ms:100");
  EXPECT_EQ(p.typed->units[0].targets[0].period, 100000000u);
  EXPECT_EQ(p.typed->units[1].targets[0].name, "profile:hz:99");
  EXPECT_EQ(p.typed->units[2].targets[0].period, 100u);

  EXPECT_NE(run("interval:s:$1 { }", {}).diags.find(
                "stdin:1:1-14: ERROR: interval probe count must be a positive integer, not \"\"\n"
                "interval:s:$1 { }\n~~~~~~~~~~~~~"),
            std::string::npos);
  EXPECT_NE(run("profile:hz:$1 { }", {"fast"}).diags.find("profile probe count must be a positive integer, not \"fast\""),
            std::string::npos);
  EXPECT_NE(run("interval:s:$1s { }", {"1"}).diags.find(
                "ERROR: Found trailing text 's' in positional parameter index. Try quoting the trailing text."),
            std::string::npos);
  EXPECT_NE(run("interval:s:$x { }", {"1"}).diags.find("'$x' is not a positional parameter"), std::string::npos);
}

// A struct copied into a variable: its fields (byte arrays included) read
// from the copy.
TEST(Sema, StructValuesInVariables) {
  check_ok({
      {.text = "kprobe:tcp_connect { $c = ((struct sock *)arg0)->__sk_common; $d = $c; "
               "@a = ntop($c.skc_v6_daddr.in6_u.u6_addr8); @b = ntop(AF_INET, $d.skc_daddr); }",
       .maps = "@a[]=inet/plain;@b[]=inet/plain",
       .exprs = {{"$c.skc_v6_daddr.in6_u.u6_addr8", "string[16]"}, {"$d.skc_daddr", "uint32"}}},
  });
  check_err({
      {"kprobe:tcp_connect { @c = ((struct sock *)arg0)->__sk_common; }",
       "a struct cannot be stored in a map yet; store one of its fields, or a pointer to it"},
      {"struct big { char x[10000]; } BEGIN { $p = (struct big *)0; $b = *$p; }",
       "struct big (10000 bytes) is too large to copy into a variable (at most 8192); store a pointer to it"},
  });
}

// bpfscope's extensions for the tool suite: named printf arguments,
// fractional printf values, in_list() and constant string comparison.
TEST(Sema, PrintfNamedArguments) {
  auto a = analyse_text("BEGIN { printf(\"%d %s\\n\", pid=pid, comm=comm); printf(\"%d\\n\", 1); }");
  ASSERT_TRUE(a.typed.has_value()) << a.diags;
  ASSERT_EQ(a.typed->actions.size(), 2u);
  EXPECT_EQ(a.typed->actions[0].arg_names, (std::vector<std::string>{"pid", "comm"}));
  EXPECT_TRUE(a.typed->actions[1].arg_names.empty());
  // A named format names the formatted text (bcc trace's message).
  auto m = analyse_text("BEGIN { printf(msg=\"%d %s\", pid, comm); }");
  ASSERT_TRUE(m.typed.has_value()) << m.diags;
  EXPECT_EQ(m.typed->actions[0].text_name, "msg");
  EXPECT_EQ(m.typed->actions[0].arg_names, (std::vector<std::string>{"", ""}));
  check_err({
      {"BEGIN { print(a=1); }", "stdin:1:9-19: ERROR: only printf() takes named arguments"},
      {"BEGIN { errorf(\"%d\", a=1); }", "stdin:1:9-26: ERROR: only printf() takes named arguments"},
      {"BEGIN { printf(\"%*d\", w=1, 2); }", "stdin:1:25-26: ERROR: printf: a * width or precision cannot be named"},
      {"BEGIN { printf(f=\"%d\", f=1); }", "Duplicate argument name: f"},
      {"BEGIN { system(f=\"true\"); }", "only printf() takes named arguments"},
      {"BEGIN { printf(\"%d\", a=\"s\"); }", "printf: %d specifier expects a value of type integer"},
  });
}

TEST(Sema, PrintfFloatDivisors) {
  auto a = analyse_text(
      "BEGIN { $b = (uint32)5; printf(\"%.2f %.3f %d %s %g\\n\", $b / 1024.0, $b / 1e6, $b / 2, $b / 0.5, -$b / 1.5e3); }");
  ASSERT_TRUE(a.typed.has_value()) << a.diags;
  EXPECT_EQ(a.typed->actions[0].divisors, (std::vector<double>{1024.0, 1e6, 0, 0.5, 1500.0}));
  // The record carries the dividend as a 64-bit integer.
  EXPECT_EQ(a.typed->actions[0].args[0].name(), "uint64");
  EXPECT_EQ(a.typed->actions[0].args[4].name(), "int64");
  // 1e6 is an integer everywhere else, as in bpftrace.
  check_ok({{"BEGIN { @x = 5000000 / 1e6; }", "@x[]=int64/plain"}});
  const std::string floats = "floating-point values are only supported as a printf argument divided by a literal: "
                             "printf(\"%.2f\", $ns / 1000000.0)";
  check_err({
      {"BEGIN { @x = 1.5; }", "stdin:1:14-17: ERROR: " + floats},
      {"BEGIN { @x = 3 / 1.5; }", "stdin:1:18-21: ERROR: " + floats},
      {"BEGIN { printf(\"%f\", 1.5); }", "stdin:1:22-25: ERROR: " + floats},
      {"BEGIN { printf(\"%f\", 1.5 / 2.0); }", "stdin:1:22-25: ERROR: " + floats},
      {"BEGIN { printf(\"%f\", (3 / 1.5) + 1); }", "stdin:1:27-30: ERROR: " + floats},
      {"BEGIN { printf(\"%f\", 3 * 1.5); }", floats},
      {"BEGIN { printf(\"%f\", 3 / 0.0); }", "stdin:1:26-29: ERROR: printf: division by zero"},
      {"BEGIN { printf(\"%f\", \"a\" / 2.0); }",
       "printf: only an integer can be divided by a floating-point literal (string[2] supplied)"},
      {"BEGIN { printf(\"%r\", 3 / 2.0); }", "printf: %r specifier expects a value of type string (float supplied)"},
  });
}

// The const_of of the first expression whose source text is `text`.
std::optional<int64_t> const_of_text(const TypedProgram& p, const std::string& text) {
  for (lang::ExprId e = 0; e < p.ast->exprs.size(); ++e)
    if (p.ast->source.slice(p.ast->expr(e).loc) == text) return p.const_of[e];
  ADD_FAILURE() << "no expression '" << text << "'";
  return std::nullopt;
}

TEST(Sema, InListAndConstantStrings) {
  Options o;
  o.named_args["p"] = "80, 0x1bb ,-1";
  o.positional = {"22,23", "7"};
  auto a = analyse_text(
      "BEGIN { @a = in_list(pid, getopt(\"p\", \"\")); @b = in_list(pid, $1); @c = in_list(pid, \" \");"
      " @d = in_list(pid, $2); @e = getopt(\"p\", \"\") != \"\"; @f = \"x\" == $1; @g = \"22,23\" == $1; }",
      o);
  ASSERT_TRUE(a.typed.has_value()) << a.diags;
  std::vector<std::vector<int64_t>> lists;
  for (const auto& [id, values] : a.typed->in_list_of) lists.push_back(values);
  EXPECT_EQ(lists, (std::vector<std::vector<int64_t>>{{80, 443, -1}, {22, 23}, {}, {7}}));
  EXPECT_EQ(describe_maps(*a.typed), "@a[]=bool/plain;@b[]=bool/plain;@c[]=bool/plain;@d[]=bool/plain;"
                                     "@e[]=bool/plain;@f[]=bool/plain;@g[]=bool/plain");
  EXPECT_EQ(const_of_text(*a.typed, "getopt(\"p\", \"\") != \"\""), 1);
  EXPECT_EQ(const_of_text(*a.typed, "\"x\" == $1"), 0);
  EXPECT_EQ(const_of_text(*a.typed, "\"22,23\" == $1"), 1);
  // A string only known at run time is compared at run time.
  auto b = analyse_text("BEGIN { @x = comm == \"bash\"; }");
  ASSERT_TRUE(b.typed.has_value()) << b.diags;
  EXPECT_EQ(const_of_text(*b.typed, "comm == \"bash\""), std::nullopt);
  check_err({
      {"BEGIN { @x = in_list(1, \"80,x\"); }", "stdin:1:25-31: ERROR: in_list(): \"80,x\" is not a list of integers: \"x\""},
      {"BEGIN { @x = in_list(1, \"80,,443\"); }", "in_list(): \"80,,443\" is not a list of integers: \"\""},
      {"BEGIN { @x = in_list(1, \"1.5\"); }", "is not a list of integers: \"1.5\""},
      {"BEGIN { @x = in_list(1, comm); }", "in_list(): the list must be a string known when compiling"},
      {"BEGIN { @x = in_list(1, 80); }", "in_list(): the list must be a string known when compiling"},
      {"BEGIN { @x = in_list(comm, \"1\"); }", "in_list() expects an integer to look for (string[16] provided)"},
      {"BEGIN { @x = in_list(1); }", "in_list() requires 2 arguments (1 provided)"},
  });
}

// "print:@a,@b" for a print that takes @a and @b ("@a(zero)" when a zero()
// follows), "clear:@a" or "zero:@a" for one that sends a record, "folded"
// for one that does not, ' '-separated in action order (prints, tables,
// clears and zeroes only).
std::string describe_takes(const TypedProgram& p) {
  std::string s;
  auto name = [&](int32_t m) { return m >= 0 ? p.maps[m].name : std::string("?"); };
  for (const auto& a : p.actions) {
    std::string d;
    if (a.kind == ActionKind::Print || a.kind == ActionKind::Table) {
      d = "print:";
      for (size_t i = 0; i < a.taken.size(); ++i) {
        const bool zeroed = std::find(a.zeroed.begin(), a.zeroed.end(), a.taken[i]) != a.zeroed.end();
        d += (i ? "," : "") + name(a.taken[i]) + (zeroed ? "(zero)" : "");
      }
    } else if (a.kind == ActionKind::Clear || a.kind == ActionKind::Zero) {
      d = a.folded ? "folded" : (a.kind == ActionKind::Clear ? "clear:" : "zero:") + name(a.map);
    } else {
      continue;
    }
    s += (s.empty() ? "" : " ") + d;
  }
  return s;
}

TEST(Sema, ClearOrZeroAfterPrintIsFoldedIntoIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"interval:s:1 { print(@a); clear(@a); } BEGIN { @a = count(); }", "print:@a folded"},
      // Output between them, other maps printed and cleared in any order.
      {"interval:s:1 { print(@a); print(@b); printf(\"\\n\"); time(); clear(@b); clear(@a); } BEGIN { @a = count(); @b[1] = sum(2); }",
       "print:@a print:@b folded folded"},
      // A table takes its columns and the map that orders its rows.
      {"interval:s:1 { print((@a, @b), 5, \"%d %d %d\", \"K A B\", @r); clear(@a); clear(@r); clear(@b); }"
       " BEGIN { @a[1] = count(); @b[1] = sum(2); @r[1] = count(); }",
       "print:@a,@r,@b folded folded folded"},
      // Macros, plain blocks and branches of known conditions are the
      // block's own statements (runqlat's print_hists, qdisclat's -m).
      {"macro show(@m) { print(@m); clear(@m); } interval:s:1 { show(@a); } BEGIN { @a = count(); }", "print:@a folded"},
      {"interval:s:1 { if (getopt(\"ms\")) { print(@b); } else { { print(@a); } } clear(@a); } BEGIN { @a = count(); @b = count(); }",
       "print:@a folded"},
      // The last print of a map before the clear takes it.
      {"interval:s:1 { print(@a); print(@a); clear(@a); } BEGIN { @a = count(); }", "print: print:@a folded"},
      // zero() folds as clear() does; the print then zeroes the map.
      {"interval:s:1 { print(@a); print(@b); zero(@a); clear(@b); } BEGIN { @a = count(); @b = count(); }",
       "print:@a(zero) print:@b folded folded"},
      // Not folded: a map written, a printf that reads a map, a branch, a
      // zero() or clear() of the map, exit() or a clear in another block
      // between them.
      {"interval:s:1 { print(@a); @a = count(); clear(@a); }", "print: clear:@a"},
      {"interval:s:1 { print(@a); printf(\"%d\\n\", @b); clear(@a); } BEGIN { @a = count(); @b = 1; }", "print: clear:@a"},
      {"interval:s:1 { print(@a); if (pid) { clear(@a); } } BEGIN { @a = count(); }", "print: clear:@a"},
      {"interval:s:1 { print(@a); zero(@a); clear(@a); } BEGIN { @a = count(); }", "print:@a(zero) folded clear:@a"},
      {"interval:s:1 { print(@a); exit(); clear(@a); } BEGIN { @a = count(); }", "print: clear:@a"},
      {"interval:s:1 { clear(@a); print(@a); } BEGIN { @a = count(); }", "clear:@a print:"},
  };
  for (const auto& [text, takes] : cases) {
    SCOPED_TRACE(text);
    auto a = analyse_text(text);
    ASSERT_TRUE(a.typed.has_value()) << a.diags;
    EXPECT_EQ(describe_takes(*a.typed), takes);
  }
}

}  // namespace
}  // namespace bpfscope::sema
