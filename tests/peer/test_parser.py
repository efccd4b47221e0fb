#!/usr/bin/env python3
"""Self-test of tests/peer's case-file reader and expectation checks.

Run: python3 tests/peer/test_parser.py  (no root, no bpftrace checkout needed)
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import casefile  # noqa: E402
import run  # noqa: E402

SAMPLE = """\
# a comment line is skipped
NAME first
PROG begin { printf("a\\n");
     printf("b\\n"); exit(); }
EXPECT a
EXPECT_REGEX ^b
             $
TIMEOUT 2

NAME second
RUN {{BPFTRACE}} -e 'begin { exit(); }' | cat
EXPECT_NONE oops
ENV A=1 B=two
ARCH x86_64|aarch64
REQUIRES_FEATURE btf !aot
WILL_FAIL

NAME json
PROG begin { @ = 1; exit(); }
EXPECT_JSON runtime/outputs/one.json

NAME code
RUN true
RETURN_CODE 3

NAME first
PROG begin { exit(); }
ARCH be
EXPECT x"""


class ReaderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "runtime", "outputs"))
        os.makedirs(os.path.join(self.dir, "runtime", "engine"))
        with open(os.path.join(self.dir, "runtime", "demo"), "w") as f:
            f.write(SAMPLE)
        with open(os.path.join(self.dir, "runtime", "engine", "x.py"), "w") as f:
            f.write("not a case file\n")
        with open(os.path.join(self.dir, "runtime", "outputs", "one.json"), "w") as f:
            f.write('{"type": "map", "data": {"@": 1}}\n')
        self.cases = casefile.read_suite(self.dir)

    def test_cases_and_names(self):
        self.assertEqual([c.ident for c in self.cases],
                         ["demo.first", "demo.second", "demo.json", "demo.code", "demo.first#2"])

    def test_continuation_lines(self):
        first = self.cases[0]
        self.assertEqual(first.prog, 'begin { printf("a\\n");\nprintf("b\\n"); exit(); }')
        self.assertEqual(first.expects[1].mode, "regex")
        self.assertEqual(first.expects[1].value, "^b\n$")
        self.assertEqual(first.timeout, 2)

    def test_directives(self):
        second = self.cases[1]
        self.assertEqual(second.env, {"A": "1", "B": "two"})
        self.assertEqual(second.features, {"btf"})
        self.assertEqual(second.not_features, {"aot"})
        self.assertTrue(second.will_fail)
        self.assertEqual(second.timeout, casefile.DEFAULT_TIMEOUT)
        self.assertEqual(self.cases[3].return_code, 3)
        self.assertEqual(self.cases[3].expects, [])

    def test_arch(self):
        self.assertTrue(casefile.arch_allows(["x86_64", "aarch64"], {"x86_64", "le"}))
        self.assertFalse(casefile.arch_allows(["be"], {"x86_64", "le"}))
        self.assertFalse(casefile.arch_allows(["!x86_64"], {"x86_64", "le"}))
        self.assertTrue(casefile.arch_allows(["!s390x"], {"x86_64", "le"}))

    def test_command(self):
        cmd = run.command_for(self.cases[1], "/b/bpfscope")
        self.assertTrue(cmd.startswith("/b/bpfscope --verify-llvm-ir -e"))
        cmd = run.command_for(self.cases[2], "/b/bpfscope")
        self.assertIn("-q -f json", cmd)

    def test_expectations(self):
        first, second, js = self.cases[0], self.cases[1], self.cases[2]
        out = "  a  \nb\n"
        self.assertTrue(run.check_expect(first.expects[0], out, first, self.dir))
        self.assertFalse(run.check_expect(first.expects[0], "ab\n", first, self.dir))
        self.assertTrue(run.check_expect(second.expects[0], out, second, self.dir))
        self.assertFalse(run.check_expect(second.expects[0], "oops\n", second, self.dir))
        # JSON is compared as data: key order and spacing do not matter.
        self.assertTrue(run.check_expect(js.expects[0], '{"data":{"@":1},"type":"map"}\n',
                                         js, self.dir))
        self.assertFalse(run.check_expect(js.expects[0], '{"type":"map","data":{"@":2}}',
                                          js, self.dir))

    def test_errors(self):
        path = os.path.join(self.dir, "bad")
        for text in ("NAME x\nPROG a\nRUN b\nEXPECT c\n", "NAME x\nPROG a\n",
                     "NAME x\nPROG a\nEXPECT b\nBOGUS c\n"):
            with open(path, "w") as f:
                f.write(text)
            with self.assertRaises(casefile.CaseFileError):
                casefile.read_file(path)


if __name__ == "__main__":
    unittest.main()
