// import "path"; : the files a script imports, read before it is parsed and
// appended to its source (lang.h, load_imports).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "lang/lang.h"
#include "lang/lexer.h"

namespace bpfscope::lang {

namespace {

namespace fs = std::filesystem;

struct Import {
  std::string path;  // as written
  Loc loc;           // of the quoted path, in the whole source
};

// The `import "path"` statements outside braces of the file at `base`.
std::vector<Import> imports_of(std::string_view text, uint32_t base) {
  std::vector<Import> out;
  Lexer lexer(text);
  int depth = 0;
  for (uint32_t pos = 0;;) {
    Token t = lexer.lex(pos);
    if (t.kind == Tok::Eof || t.end <= pos) break;
    pos = t.end;
    if (t.kind == Tok::LBrace) ++depth;
    if (t.kind == Tok::RBrace) depth = std::max(0, depth - 1);
    if (depth != 0 || t.kind != Tok::Import) continue;
    Token path = lexer.lex(pos);
    if (path.kind != Tok::String) continue;  // the parser reports it
    out.push_back({path.text, {base + path.begin, base + path.end}});
    pos = path.end;
  }
  return out;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

class Loader {
 public:
  Loader(Source& source, Diagnostics& diags, const FileReader& embedded)
      : source_(source), diags_(diags), embedded_(embedded) {}

  // The file `path` is read: importing it again does nothing.
  bool first_time(const std::string& path) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(path, ec);
    return seen_.insert(ec ? path : canonical.string()).second;
  }

  // The imports of the file at [base, base + text.size()) named `name`.
  void load(const std::string& name, std::string_view text, uint32_t base) {
    const fs::path dir = fs::path(name == "stdin" ? "" : name).parent_path();
    for (const Import& imp : imports_of(text, base)) {
      const fs::path path = (dir / imp.path).lexically_normal();
      std::error_code ec;
      if (fs::is_directory(path, ec)) {
        // Its .bt files, in name order.
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(path, ec))
          if (e.path().extension() == ".bt" && !fs::is_directory(e.path(), ec)) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& f : files) add(f.string(), imp.loc);
      } else if (path.extension() != ".bt") {
        diags_.error(imp.loc, cannot(imp.path, "bpfscope imports .bt scripts and directories of them"),
                     {"C headers are read with #include"});
      } else {
        add(path.string(), imp.loc);
      }
    }
  }

 private:
  static std::string cannot(const std::string& path, const std::string& why) {
    return "cannot import \"" + path + "\": " + why;
  }

  void add(const std::string& path, Loc loc) {
    if (!first_time(path)) return;
    std::optional<std::string> text = read_file(path);
    if (!text && embedded_) text = embedded_(path);
    if (!text) {
      diags_.error(loc, cannot(path, "no such file"));
      return;
    }
    const uint32_t base = source_.add_file(path, *text);
    load(path, *text, base);
  }

  Source& source_;
  Diagnostics& diags_;
  const FileReader& embedded_;
  std::set<std::string> seen_;
};

}  // namespace

bool load_imports(Source& source, Diagnostics& diags, const FileReader& embedded) {
  const size_t before = diags.error_count();
  const std::string text = source.text();  // the script: files are appended to the source as they load
  Loader loader(source, diags, embedded);
  if (source.name() != "stdin") loader.first_time(source.name());
  loader.load(source.name(), text, 0);
  return diags.error_count() == before;
}

}  // namespace bpfscope::lang
