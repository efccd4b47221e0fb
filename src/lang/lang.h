// Public interface of the front end: source text -> AST.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/source.h"

namespace bpfscope::lang {

// Parses a whole script. Syntax errors go to diags (the parser recovers at ';'
// and '}' and may report several); the result is nullopt when any error was
// reported. Never crashes, hangs or overflows the stack, whatever the input:
// nesting deeper than kMaxNesting is an ordinary error.
//
// `builtin` says whether a builtin of that name takes that many arguments (a
// bare name counts as a call without any): a call that no macro of its name
// takes is then the builtin's (macro cpu(x) leaves cpu() to the builtin), as
// bpftrace picks among its library's macros and the script's by signature.
using BuiltinTakes = std::function<bool(std::string_view name, size_t args)>;
std::optional<Program> parse(Source source, Diagnostics& diags, const BuiltinTakes& builtin = {});

// Reads the files that a script imports (`import "path";` in its preamble:
// a .bt script, or a directory of them, read in name order), and the files
// they import, once each, appending them to `source` (Source::add_file) so
// that parse() reads each after the script. A path is relative to the
// directory of the file that imports it (the current directory for -e and
// stdin). `embedded` gives the text of a file that the file system does not
// have (the library of the built-in tools, tools/lib). Errors go to diags,
// located at the path; returns false when any was reported.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;
bool load_imports(Source& source, Diagnostics& diags, const FileReader& embedded = {});

inline constexpr int kMaxNesting = 200;
// No expression tree is taller than this: long operator chains (a + b + c ...)
// and postfix chains count too, so later passes may recurse over expressions.
// Statements nest at most kMaxNesting deep (an else-if counts as one level).
inline constexpr int kMaxExprDepth = 1000;

// Expands the macro calls in the probes (macros.cpp); parse() runs it.
// Errors (unknown parameter kinds, recursion, unhygienic map access) go to
// diags; returns false when any was reported.
bool expand_macros(Program& program, Diagnostics& diags, const BuiltinTakes& builtin = {});

// Parses the expression at `range` of program.source (a segment added after
// the script), appending its nodes to program. kNone after a syntax error
// (reported to diags).
ExprId parse_expression(Program& program, Loc range, Diagnostics& diags);

// A tool option whose value is script text (tools/README.md, `expr` and
// `spec` options), cut into parts the script names with getopt("NAME") or
// getopt("NAME.PART").
struct SplicedPart {
  enum class Kind {
    Expr,     // the expression(s) at `ranges` of the value; several make a record named by `names`
    String,   // a string literal: `text`
    Integer,  // an integer literal: `number`
    Ident,    // a builtin named `text` (retval)
    Probe,    // an attach point: `text` (getopt("NAME") in a probe's attach point list)
    Printf,   // a printf call: format `text`, its arguments the expressions at ranges[1...] (each with its
              // cast), the call at ranges[0]; `names`: {the name of its formatted text, for JSON, or ""}
  };
  std::string name;  // "histogram" (the whole option), "histogram.filter"
  Kind kind = Kind::Expr;
  std::vector<Loc> ranges;         // Expr: byte ranges in the value's text
  std::vector<std::string> names;  // Expr with a record: each field's name
  std::vector<std::string> casts;  // Expr: per range, "" or a cast type ("uint32"), or a call: "str", "ksym", "usym"
  std::string text;
  int64_t number = 0;
};

struct SplicedValue {
  std::string option;  // "histogram"
  std::string origin;  // how errors name the text: "-H"
  std::string text;    // the value as given
  std::vector<SplicedPart> parts;
  // Names that the value's expressions use for others: a signature's
  // parameter "size" -> "arg0", "$retval" -> "retval" (an identifier or a
  // builtin; a name starting with '!' is an error message instead).
  std::vector<std::pair<std::string, std::string>> aliases;
  // When set, an error in the attach point made from the value names the
  // value as the user wrote it (`label`: "probe 'p::f'") rather than the
  // tool's file, and a hint may suggest the command line with another probe
  // in its place (`before` and `after` it: Source::add_argument).
  std::string label, before, after;
};

// Splices option values into the program (splice.cpp). A probe whose attach
// point is getopt("NAME") of such an option is repeated once per value, in
// order, with that value's probe; inside it getopt("NAME.PART") is that
// value's part, and the maps it stores a part in (in their key or value) are
// that value's own (@m of the second value is "@m#2"). A statement elsewhere that names a part, or such a map, is
// repeated once per value likewise (an option given no value drops them).
// `options` names every such option of the tool, given or not. Errors in a
// value are located in its text (a segment of the source). `dropped` gets
// the getopt() names of what was repeated no time. Returns false when any
// error was reported.
bool splice_options(Program& program, const std::vector<std::string>& options,
                    const std::vector<SplicedValue>& values, Diagnostics& diags,
                    std::set<std::string>* dropped = nullptr);

// A value given on a tool's command line that attach points may splice:
// `$1` of funccount 't:net:*', getopt("frequency") of profile -F 99.
struct GivenArgument {
  std::string ref;     // how the script names it: "$1", "getopt(\"frequency\")"
  std::string text;    // the value as given ("tcp*")
  std::string label;   // how errors name it: "pattern 'tcp*'", "-F 99"
  std::string before;  // the command line before the value ("funccount -i 1 ")
  std::string after;   // and after it
};

// Locates each attach point that splices a given argument in that argument
// (a segment of the source, Source::add_argument; the first one it names),
// so that an error about it, from sema or at attach, names the argument
// instead of a line of the tool's file (splice.cpp).
void locate_arguments(Program& program, const std::vector<GivenArgument>& given);

// Prints the AST as an indented tree (for -d ast).
std::string dump(const Program& program);

}  // namespace bpfscope::lang
