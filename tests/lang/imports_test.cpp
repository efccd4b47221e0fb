// import "path"; : files read relative to the importer, once each,
// directories of .bt files, the built-in library as a fallback, located
// errors in the imported file's own lines, and what an import may not hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <utility>
#include <string>
#include <unistd.h>

#include "lang/lang.h"

namespace bpfscope::lang {
namespace {

namespace fs = std::filesystem;

// A temporary directory with the given files, removed at the end.
class Files {
 public:
  Files(std::initializer_list<std::pair<std::string, std::string>> files)
      : dir_(fs::temp_directory_path() / ("bpfscope_imports_" + std::to_string(getpid()) + "_" +
                                          std::to_string(counter_++))) {
    for (const auto& [name, text] : files) {
      fs::create_directories((dir_ / name).parent_path());
      std::ofstream(dir_ / name) << text;
    }
  }
  ~Files() { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

struct Result {
  std::optional<Program> program;
  Source source;
  std::string errors;  // "name:line:col: message" each
};

Result run(const std::string& name, const std::string& text, const FileReader& embedded = {}) {
  Result r{std::nullopt, Source(name, text), ""};
  Diagnostics diags;
  if (load_imports(r.source, diags, embedded)) r.program = parse(r.source, diags);
  for (const auto& d : diags.all()) {
    LineCol at = r.source.line_col(d.loc.begin);
    r.errors += fs::path(r.source.name_at(d.loc.begin)).filename().string() + ":" + std::to_string(at.line) + ":" +
                std::to_string(at.col) + ": " + d.message + "\n";
  }
  return r;
}

TEST(Imports, MacrosAndProbesOfTheImportedFileJoinTheScript) {
  Files f{{"lib/names.bt", "// names\nmacro seven() { 7 }\n\nEND { printf(\"bye\\n\"); }\n"}};
  Result r = run(f.path("main.bt"), "import \"lib/names.bt\";\nBEGIN { printf(\"%d\\n\", seven()); }\n");
  ASSERT_TRUE(r.program) << r.errors;
  EXPECT_EQ(dump(*r.program),
            "probe BEGIN\n call printf\n  string \"%d\\n\"\n  int 7\n"
            "probe END\n call printf\n  string \"bye\\n\"\n");
}

TEST(Imports, AnErrorIsLocatedInTheImportedFileOnItsOwnLine) {
  Files f{{"bad.bt", "// one\n// two\nmacro m() {\n\t1 +;\n}\n"}};
  Result r = run(f.path("main.bt"), "import \"bad.bt\";\nBEGIN { exit(); }\n");
  EXPECT_FALSE(r.program);
  EXPECT_EQ(r.errors, "bad.bt:4:8: syntax error, unexpected ;\n");
  // The line shown under the message is the imported file's.
  EXPECT_EQ(r.source.line_of(r.source.text().find("1 +;")), "\t1 +;");
}

TEST(Imports, EachFileOnceEvenInACycle) {
  Files f{{"a.bt", "import \"b.bt\";\nmacro fa() { 1 }\n"},
          {"b.bt", "import \"a.bt\";\nimport \"main.bt\";\nmacro fb() { 2 }\n"}};
  Result r = run(f.path("main.bt"), "import \"a.bt\";\nimport \"b.bt\";\nBEGIN { $x = fa() + fb(); }\n");
  ASSERT_TRUE(r.program) << r.errors;
  EXPECT_EQ(r.source.text().find("macro fa"), r.source.text().rfind("macro fa"));
  EXPECT_EQ(r.source.text().find("macro fb"), r.source.text().rfind("macro fb"));
  EXPECT_EQ(r.source.text().find("BEGIN"), r.source.text().rfind("BEGIN"));  // nor the script itself
}

TEST(Imports, ADirectoryImportsItsBtFilesInNameOrder) {
  Files f{{"d/2.bt", "macro two() { 2 }\n"}, {"d/1.bt", "macro one() { 1 }\n"}, {"d/notes.txt", "not a script"}};
  Result r = run(f.path("main.bt"), "import \"d\";\nBEGIN { $x = one() + two(); }\n");
  ASSERT_TRUE(r.program) << r.errors;
  EXPECT_LT(r.source.text().find("macro one"), r.source.text().find("macro two"));
  EXPECT_EQ(r.source.text().find("not a script"), std::string::npos);
}

TEST(Imports, TheBuiltInLibraryWhenTheFileSystemHasNone) {
  const FileReader library = [](const std::string& path) -> std::optional<std::string> {
    if (path == "tools/lib/x.bt") return "macro x() { 5 }\n";
    return std::nullopt;
  };
  Result r = run("tools/tool.bt", "import \"lib/x.bt\";\nBEGIN { $v = x(); }\n", library);
  ASSERT_TRUE(r.program) << r.errors;
}

TEST(Imports, Errors) {
  Files f{{"cfg.bt", "config = { max_map_keys = 10 }\n"}, {"ok.bt", "macro ok() { 1 }\n"}};
  EXPECT_EQ(run(f.path("m.bt"), "import \"missing.bt\";\nBEGIN { }\n").errors,
            "m.bt:1:8: cannot import \"" + f.path("missing.bt") + "\": no such file\n");
  EXPECT_EQ(run(f.path("m.bt"), "import \"x.h\";\nBEGIN { }\n").errors,
            "m.bt:1:8: cannot import \"x.h\": bpfscope imports .bt scripts and directories of them\n");
  EXPECT_EQ(run(f.path("m.bt"), "import \"cfg.bt\";\nBEGIN { }\n").errors,
            "cfg.bt:1:1: config is not allowed in an imported file\n");
  EXPECT_EQ(run(f.path("m.bt"), "BEGIN { }\nimport \"ok.bt\";\n").errors,
            "m.bt:2:1: import must come before the first probe\n");
  EXPECT_EQ(run(f.path("m.bt"), "import ok;\nBEGIN { }\n").errors,
            "m.bt:1:8: syntax error, unexpected identifier, expected a quoted path\n");
}

}  // namespace
}  // namespace bpfscope::lang
