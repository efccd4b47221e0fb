// The parser must return (a program or errors) for every input: no crash, no
// hang, no stack overflow. Run under ASan/UBSan too (BPFSCOPE_SANITIZE=ON).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

const std::vector<std::string> kPrograms = {
    "BEGIN { printf(\"hello\\n\"); exit(); }",
    "tracepoint:syscalls:sys_enter_openat /pid == 1234/ { printf(\"%s %s\\n\", comm, str(args.filename)); }",
    "kprobe:vfs_read { @start[tid] = nsecs; } kretprobe:vfs_read /@start[tid]/ { @ns = hist(nsecs - @start[tid]); "
    "delete(@start[tid]); }",
    "interval:s:1 { print(@x); clear(@x); } i:1s { $i = 0; while ($i < 10) { $i++; if ($i == 5) { break; } } }",
    "uprobe:/bin/bash:readline, uretprobe:/bin/bash:readline /arg0 != 0/ { @[probe, ustack] = count(); }",
    "#include <linux/sched.h>\n#define MAX 10\nstruct X { int a; };\nBEGIN { $x = (struct X *)arg0; @ = $x->a; }",
    "config = { max_strlen = 64; }\nBEGIN { for ($kv : @m) { print($kv.0); } for ($i : 0..MAX) { @s += $i; } }",
    "BEGIN { $t = (1, \"two\", (3,)); $a = $t.2.0 ? -~!$t.0 : (uint8)*$p; $b = $x ?: 5s; }",
    "BEGIN { let $x: uint64 = sizeof(struct task_struct) + offsetof(struct sk_buff, len); unroll(3) { $x <<= 1; } }",
    "usdt:/usr/bin/python3:python:function__entry { @[str(arg1)] = count(); } END { print(@, 10); }",
    "BEGIN { if ($1 > 0) { @a = 1; } else if ($# < 2) { @b = 2; } else { return; } }",
    "hardware:cache-misses:1000 { @[comm] = count(); } software:cpu-clock:1000000 { @c[cpu] = lhist(pid, 0, 100, 10); }",
    "profile:hz:99 /comm == \"bash\"/ { @[kstack(perf, 5)] = count(); }",
    "BEGIN { @x = 0x10 | 010 & 1_000 ^ 2e3 << 1 >> 2 % 3; @y[1, \"a\"] -= 1; --@z; @w++; }",
    "tracepoint:sched:sched_switch { $p = (struct task_struct *)curtask; @[$p->comm, args->next_pid] = max(nsecs); }",
    "#!/usr/bin/env bpftrace\n// comment\n/* block */\nBEGIN /* c */ { /* c */ $x = 1; // c\n }",
    "uprobe:lib:\"ns::f\" { $a = arg0 / 2 / 3; } kprobe:f+10 / $1 / 2 / { @ = stats(arg1); }",
    "BEGIN { $s = \"a\\tb\\\"\\\\\\x41\\101\"; printf(\"%s %d\\n\", $s, strlen($s)); }",
    "BEGIN { { { $x = 1; } } ; ; _ = f(); @m[(1, 2)] = (3, 4); }",
    "tracepoint:syscalls:sys_exit_read /retval > 0/ { @bytes = sum(retval); } END { clear(@bytes); }",
    "macro add($a, @m, e) { $a += e; @m[$a] = 1; $a } macro one { 1 } BEGIN { $x = 0; $y = add($x, @m, one + 2); }",
    "let @m = lruhash(4); BEGIN { $r = (a=1, b=\"x\"); @m[$r.a] = $r; if $r.a == 1 { for $kv : @m { print($kv.1.b); } } }",
    "union U { int a; char b[4]; }; enum E { A = 1, B = A << 2 }; struct S { struct S *n; unsigned int f:3; } "
    "__attribute__((packed)); BEGIN { $p = (struct S *)0; @ = *(&$p->n) + $p[2].f + B; }",
};

// Parses text and checks that it returns in bounded time with a consistent result.
void parse_quickly(const std::string& text) {
  const auto start = std::chrono::steady_clock::now();
  Diagnostics diags;
  auto program = parse(Source("stdin", text), diags);
  EXPECT_EQ(program.has_value(), !diags.has_errors()) << text;
  if (program) (void)dump(*program);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(2)) << text;
}

TEST(Robustness, ValidProgramsParse) {
  for (const auto& text : kPrograms) {
    Diagnostics diags;
    Source src("stdin", text);
    EXPECT_TRUE(parse(src, diags).has_value()) << text << "\n" << diags.render(src);
  }
}

TEST(Robustness, EveryPrefix) {
  for (const auto& text : kPrograms)
    for (size_t n = 0; n <= text.size(); ++n) parse_quickly(text.substr(0, n));
}

TEST(Robustness, EverySuffix) {
  for (const auto& text : kPrograms)
    for (size_t n = 0; n <= text.size(); ++n) parse_quickly(text.substr(n));
}

TEST(Robustness, RandomBytes) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 3000; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    parse_quickly(text);
  }
}

TEST(Robustness, RandomTokenSoup) {
  const std::vector<std::string> pieces = {
      "BEGIN", "END", "kprobe:f", "uprobe:/bin/sh:main", "i:1s", ",", "/", "{", "}", "(", ")", "[", "]", ";", ":",
      "?", ".", "..", "->", "=", "==", "+=", "<<=", "++", "--", "+", "-", "*", "&", "|", "^", "!", "~", "<", ">",
      "&&", "||", "$x", "$1", "$#", "@m", "@", "pid", "args", "comm", "printf", "\"str\"", "\"un", "1", "0x1f",
      "5s", "08", "if", "else", "for", "while", "unroll", "let", "return", "break", "continue", "sizeof", "offsetof",
      "struct", "sock", "uint8", "config", "import", "macro", "#include <x>\n", "#define A 1\n", "//c\n", "/*c*/",
      "/*", "\n", " ", "\t", "`", "$", "\\",
  };
  std::mt19937 rng(777);
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 60);
    for (int k = 0; k < n; ++k) {
      text += pieces[rng() % pieces.size()];
      if (rng() % 2) text += ' ';
    }
    parse_quickly(text);
  }
}

TEST(Robustness, Mutations) {
  std::mt19937 rng(4242);
  const std::string alphabet = "{}()[];,/:=+-*&|!~<>?.$@#\"'\\ \n0123456789abcxyz";
  for (int i = 0; i < 3000; ++i) {
    std::string text = kPrograms[rng() % kPrograms.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: text[at] = alphabet[rng() % alphabet.size()]; break;
      }
    }
    parse_quickly(text);
  }
}

std::vector<std::string> error_messages(const std::string& text) {
  Diagnostics diags;
  auto program = parse(Source("stdin", text), diags);
  EXPECT_FALSE(program.has_value());
  std::vector<std::string> out;
  for (const auto& d : diags.all()) out.push_back(d.message);
  return out;
}

bool has_message(const std::vector<std::string>& messages, std::string_view msg) {
  for (const auto& m : messages)
    if (m == msg) return true;
  return false;
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(Robustness, DeepNesting) {
  const int n = 10000;
  const std::vector<std::string> inputs = {
      "BEGIN { $x = " + std::string(n, '(') + "1" + std::string(n, ')') + "; }",
      "BEGIN { $x = " + std::string(n, '('),
      "BEGIN " + std::string(n, '{'),
      "BEGIN " + std::string(n, '{') + std::string(n, '}'),
      "BEGIN { $x = " + repeat("- ", n) + "1; }",
      "BEGIN { $x = " + repeat("++", n) + "$y; }",
      "BEGIN { $x = " + std::string(n, '!') + "1; }",
      "BEGIN /" + std::string(n, '(') + "1/ { }",
  };
  for (const auto& text : inputs) {
    const auto messages = error_messages(text);
    EXPECT_TRUE(has_message(messages, "nesting too deep")) << text.substr(0, 40);
    EXPECT_LE(messages.size(), 3u) << text.substr(0, 40);
  }
  std::string casts = "BEGIN { $x = ";
  for (int i = 0; i < n; ++i) casts += "(uint8)";
  EXPECT_TRUE(has_message(error_messages(casts + "1; }"), "nesting too deep"));
  std::string ifs = "BEGIN { ";
  for (int i = 0; i < n; ++i) ifs += "if (1) { ";
  EXPECT_TRUE(has_message(error_messages(ifs), "nesting too deep"));
  std::string else_ifs = "BEGIN { if (1) { }";
  for (int i = 0; i < n; ++i) else_ifs += " else if (1) { }";
  EXPECT_TRUE(has_message(error_messages(else_ifs + " }"), "nesting too deep"));
}

TEST(Robustness, LongChainsAreBounded) {
  // A long operator chain builds a tall tree; it is capped at kMaxExprDepth so
  // later passes can recurse over expressions.
  std::string sum = "BEGIN { $x = 1";
  for (int i = 0; i < 100000; ++i) sum += " + 1";
  EXPECT_TRUE(has_message(error_messages(sum + "; }"), "nesting too deep"));
  std::string fields = "BEGIN { $x = $y";
  for (int i = 0; i < 100000; ++i) fields += ".f";
  EXPECT_TRUE(has_message(error_messages(fields + "; }"), "nesting too deep"));
  // Within the limits, both are fine.
  std::string nested = "BEGIN { $x = " + std::string(kMaxNesting - 5, '(') + "1" + std::string(kMaxNesting - 5, ')');
  std::string chain = "BEGIN { $x = 1";
  for (int i = 0; i < kMaxExprDepth - 5; ++i) chain += " + 1";
  for (const auto& text : {nested + "; }", chain + "; }"}) {
    Diagnostics diags;
    EXPECT_TRUE(parse(Source("stdin", text), diags).has_value());
  }
}

TEST(Robustness, ManyStatementsAndProbes) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "kprobe:f" + std::to_string(i) + " { @x[" + std::to_string(i) + "] = 1; }\n";
  Diagnostics diags;
  auto program = parse(Source("stdin", text), diags);
  ASSERT_TRUE(program.has_value());
  EXPECT_EQ(program->probes.size(), 2000u);
  // Many errors in one script: one per broken statement, up to 100.
  std::string broken = "BEGIN {";
  for (int i = 0; i < 60; ++i) broken += " @x = ;";
  broken += " }";
  EXPECT_EQ(error_messages(broken).size(), 60u);
  for (int i = 0; i < 2000; ++i) broken += "\nBEGIN { @x = ; }";
  const auto messages = error_messages(broken);
  ASSERT_EQ(messages.size(), 101u);
  EXPECT_EQ(messages.back(), "too many errors (100), stopping");
}

}  // namespace
}  // namespace bpfscope::lang
