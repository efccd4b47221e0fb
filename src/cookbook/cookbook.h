// The one-liners of BPF Performance Tools, ch. 9 and 10, as bpfscope runs
// them: docs/one-liners.md, embedded in the binary and read here. It feeds
// `bpfscope --examples [TOPIC]` and the hint given for a kernel function
// that cannot be probed (runtime: the `kernel:` lines say which probe
// carries the same data).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace bpfscope::cookbook {

// A kernel function the book probed and the probe that replaces it here.
struct Replacement {
  std::string function;  // a name or a glob: "tcp_sendmsg", "udp*_sendmsg", "tcp_*"
  std::string probe;     // "tracepoint:sock:sock_send_length"
};

struct Entry {
  std::string id;                 // "net-11"
  std::string topic;              // "net"
  std::string question;           // "TCP send bytes as a histogram"
  std::vector<std::string> book;  // the book's commands: "10.t11 `bpftrace -e '...'`"
  std::string bcc;                // "bpfscope argdist -H '...'" ("" when the book's tools have no form)
  std::string bpftrace;           // "bpfscope -e '...'"
  std::string differs;            // how it differs from the book's kprobe version ("" for none)
  std::string untested;           // why the test machine does not run it ("" when it does)
  std::vector<Replacement> kernel;
};

struct Topic {
  std::string name;   // "disk"
  std::string title;  // "Disks (chapter 9)"
};

struct Cookbook {
  std::vector<Topic> topics;
  std::vector<Entry> entries;
};

// Reads the layout of docs/one-liners.md (its introduction describes it).
// An error names the line: "line 12: an entry line outside an entry".
struct Parsed {
  Cookbook book;
  std::string error;
};
Parsed parse(std::string_view text);

// The embedded docs/one-liners.md, parsed once.
const Cookbook& embedded();

// `bpfscope --examples [WHAT]`: every entry, a topic's or one entry (by id).
// An unknown WHAT lists the topics on `err` and returns 1.
int print_examples(std::string_view what, FILE* out, FILE* err);

// The replacement for a probe on kernel function `function` (a name or the
// glob a probe was given): the entry whose `kernel:` line names it exactly,
// else the most specific line whose glob matches the name. nullptr: none.
struct Found {
  const Entry* entry;
  const Replacement* replacement;
};
Found find_replacement(std::string_view function);


}  // namespace bpfscope::cookbook
