// The pipeline, top to bottom: a script's text to BPF programs ready to load
// (compile), and to a run (compile_and_run); `bpfscope tools` and -l.
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "bpf/bpf.h"
#include "codegen/codegen.h"
#include "driver/driver.h"
#include "ir/ir.h"
#include "sema/sema.h"

namespace bpfscope::driver {
namespace {

uint32_t env_u32(const char* name, const char* old_name, uint32_t def) {
  const char* v = getenv(name);
  if (!v && old_name) v = getenv(old_name);
  if (!v) return def;
  char* end;
  unsigned long x = strtoul(v, &end, 10);
  return (*end || x == 0) ? def : static_cast<uint32_t>(x);
}

uint64_t boot_ns() {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// Appends the files a script imports to `source` (a built-in tool's come
// from tools/lib when the file system has no such file), then parses it.
// nullopt after an error, reported to diags (located in `source`).
std::optional<lang::Program> parse_script(lang::Source& source, lang::Diagnostics& diags) {
  if (!lang::load_imports(source, diags, tools::library_file)) return std::nullopt;
  return lang::parse(source, diags, sema::builtin_takes);
}

}  // namespace

std::unique_ptr<runtime::Compiled> compile(CompileOptions options, std::optional<runtime::Child>& child) {
  uint64_t start = boot_ns();
  lang::Diagnostics diags;
  lang::Source source(options.filename, options.program);
  auto parsed = parse_script(source, diags);
  // A tool's user did not write its script: errors are one line each, naming
  // the tool, with the script's location at the end.
  if (options.debug.empty()) options.run.tool_name = options.tool_name;
  auto report = [&](const lang::Source& src) {
    fmt::print(options.err, "{}", diags.render(src, options.run.tool_name));
  };
  if (!parsed) {
    report(source);
    return nullptr;
  }
  auto out = std::make_unique<runtime::Compiled>();
  out->name = options.tool_name;
  // Sema keeps a pointer to the AST: it stays where it is, owned with the rest.
  out->ast = std::make_unique<lang::Program>(std::move(*parsed));
  lang::Program* ast = out->ast.get();
  // The getopt() names of statements no value of a spliced option kept
  // (argdist's print of -C counts, when only -H is given).
  std::set<std::string> spliced_away;
  if (!lang::splice_options(*ast, options.spliced_options, options.spliced, diags, &spliced_away)) {
    report(ast->source);
    return nullptr;
  }
  lang::locate_arguments(*ast, options.given);
  ast->includes.insert(ast->includes.begin(), options.includes.begin(), options.includes.end());
  bool all = options.debug.count("all") > 0;
  if (all || options.debug.count("ast")) fmt::print(options.out, "{}", lang::dump(*ast));

  if (!options.child_cmd.empty()) {
    std::string err;
    child = runtime::start_child(options.child_cmd, err);
    if (!child) {
      fmt::print(options.err, "ERROR: -c: {}\n", err);
      return nullptr;
    }
  }

  sema::Options sopts;
  sopts.positional = options.positional;
  sopts.has_child = child.has_value();
  if (child) sopts.child_program = child->program;
  sopts.unsafe = options.unsafe;
  sopts.target_pid = options.run.target_pid;
  sopts.named_args = options.named_args;
  sopts.implied_args = spliced_away;
  sopts.probe_filter = options.probe_filter;
  // -f folded: getopt("folded") is true, so that a script (profile,
  // offcputime) leaves its own text layout to the folded stacks of its maps.
  // --flamegraph too: the stacks are kept in their maps until the exit.
  // getopt("stacks"): those maps are wanted, by those two or by a tool's
  // recording (-f record of a tool with a "// flamegraph:" header), which
  // keeps them beside the events of its text layout.
  const auto imply = [&](const char* name, bool on) {
    if (on && sopts.named_args.emplace(name, std::nullopt).second) sopts.implied_args.insert(name);
  };
  // A tool's getopt("bpfscope-pid"): bpfscope's own process, whose events
  // trace leaves out (its output written by a traced write() would trace
  // itself).
  if (!options.tool_name.empty() && sopts.named_args.emplace("bpfscope-pid", std::to_string(getpid())).second)
    sopts.implied_args.insert("bpfscope-pid");
  imply("folded", options.run.folded || !options.run.flamegraph_file.empty());
  imply("stacks", options.run.folded || !options.run.flamegraph_file.empty() ||
                     (options.run.recording && options.run.tool_graph));
  options.run.max_cat_bytes = env_u32("BPFTRACE_MAX_CAT_BYTES", "BPFTRACE_CAT_BYTES_MAX", 10240);
  if (!sema::config_from_environment(sopts.config, diags)) {
    report(ast->source);
    return nullptr;
  }
  auto typed = sema::analyse(*ast, sopts, diags);
  report(ast->source);
  if (!typed) return nullptr;
  if (all || options.debug.count("sema")) fmt::print(options.out, "{}", sema::dump(*typed));

  ir::LowerOptions lopts;
  lopts.start_boot_ns = start;
  timespec tai;
  clock_gettime(CLOCK_TAI, &tai);
  lopts.tai_minus_boot_ns = static_cast<int64_t>(static_cast<uint64_t>(tai.tv_sec) * 1000000000ull +
                                                 static_cast<uint64_t>(tai.tv_nsec) - boot_ns());
  lopts.possible_cpus = static_cast<uint32_t>(std::max(1, bpf::possible_cpus()));
  lopts.online_cpus = static_cast<uint32_t>(std::max<size_t>(1, bpf::online_cpus().size()));
  lopts.helper_errors = options.helper_errors;
  if (child) lopts.cpid = child->pid;
  if (child) lopts.filter_pid = child->pid;
  else if (options.run.target_pid > 0) lopts.filter_pid = options.run.target_pid;
  ir::Module module = ir::lower(*typed, lopts);
  if (all || options.debug.count("ir")) fmt::print(options.out, "{}", ir::print(module));

  std::vector<codegen::Program> programs;
  for (const auto& f : module.functions) {
    std::string regalloc;
    auto prog = codegen::compile(f, &regalloc);
    if (!prog) {
      fmt::print(options.err, "ERROR: {}\n", prog.error());
      return nullptr;
    }
    if (all || options.debug.count("regalloc")) fmt::print(options.out, "{}", regalloc);
    if (all || options.debug.count("bpf")) fmt::print(options.out, "{}", codegen::disassemble(*prog));
    programs.push_back(std::move(*prog));
  }
  // The kernel's BTF served sema and lowering; loading and running need only
  // the ids they noted (and enum names, if the program prints any). Released
  // here, its tables are not resident while the maps, programs and ring
  // buffer are made, nor for the whole run.
  if (!sema::prints_enums(*typed)) typed->btf.reset();
  fflush(options.out);
  options.run.debug_verifier = all || options.debug.count("verifier");
  // BPFTRACE_PERF_RB_PAGES: ring buffer pages (bpftrace's name; here the
  // total, rounded up to a power of two).
  if (uint32_t pages = env_u32("BPFTRACE_PERF_RB_PAGES", nullptr, 0); pages > 0) {
    uint32_t bytes = 4096;
    while (bytes / 4096 < pages && bytes < (1u << 30)) bytes <<= 1;
    options.run.ringbuf_bytes = bytes;
  }
  out->program = std::move(*typed);
  out->module = std::move(module);
  out->programs = std::move(programs);
  out->options = options.run;
  return out;
}

int compile_and_run(CompileOptions options) {
  std::optional<runtime::Child> child;
  auto c = compile(std::move(options), child);
  if (!c) return 1;
  return runtime::run(c->program, c->module, std::move(c->programs), c->options, child);
}

int list_tools(const std::vector<tools::GlobalSpec>& globals) {
  fmt::print("{:<16} {:<60} {}\n", "TOOL", "DESCRIPTION", "STATUS");
  for (const auto& t : tools::all()) {
    std::string err;
    auto inv = tools::parse_args(t, tools::sample_args(t), globals, err);
    std::string status = "ok";
    if (inv) {
      lang::Diagnostics diags;
      lang::Source source(t.path, t.source);
      auto ast = parse_script(source, diags);
      sema::Options sopts;
      if (ast && !lang::splice_options(*ast, inv->spliced_options, inv->spliced, diags, &sopts.implied_args))
        ast.reset();
      sopts.positional = inv->positional;
      sopts.named_args = inv->named_args;
      if (ast) sema::analyse(*ast, sopts, diags);
      for (const auto& d : diags.all()) {
        if (d.severity != lang::Severity::Error) continue;
        status = "unavailable: " + d.message;
        break;
      }
    } else {
      status = "unavailable: " + err;
    }
    fmt::print("{:<16} {:<60} {}\n", t.name, t.about, status);
  }
  return 0;
}

int list_probes(const std::string& pattern, bool verbose, int pid, const std::string* program) {
  // -l -e PROGRAM and -l FILE: the probes of the program's attach points. A
  // name of a script (*.bt) that is no file is taken as a pattern, with a
  // warning.
  std::error_code ec;
  std::expected<std::string, std::string> out;
  const bool file = !program && !pattern.empty() && std::filesystem::is_regular_file(pattern, ec);
  if (program || file) {
    std::string text;
    if (file) {
      std::ifstream in(pattern);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    lang::Diagnostics diags;
    lang::Source source(file ? pattern : "stdin", program ? *program : text);
    auto parsed = parse_script(source, diags);
    if (!parsed) {
      fmt::print(stderr, "{}", diags.render(source, ""));
      return 1;
    }
    out = sema::list_script_probes(*parsed, verbose, pid);
  } else {
    if (pattern.ends_with(".bt"))
      fmt::print(stderr,
                 "WARNING: It appears that '{0}' is a filename but the file does not exist. Treating '{0}' as a "
                 "search pattern.\n",
                 pattern);
    out = sema::list_probes(pattern, verbose, pid);
  }
  if (!out) {
    fmt::print(stderr, "ERROR: {}\n", out.error());
    return 1;
  }
  fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}

}  // namespace bpfscope::driver
