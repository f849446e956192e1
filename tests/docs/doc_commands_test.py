#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every `gpusched ...` command in the repository's Markdown exists and works (issue #24).

See doc_commands.py for what counts as a command and the three kinds. Here: every command's
subcommand and flags exist (all kinds), and every `run` command runs, in document order per file
(a command may use a file an earlier one wrote), from a scratch copy of the repository root (its
entries symlinked, ../shared beside it) with `gpusched` and `build/release/cmd/gpusched/gpusched`
both being the binary under test, and exits 0 within its timeout. The commands marked `cluster`
run in tests/e2e/docs_commands_test.py.

Environment: GPUSCHED_BINARY (the binary; ctest sets it), GPUSCHED_SOURCE_DIR.
"""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_commands import ROOT, all_commands, check_syntax, mask, scratch_root  # noqa: E402

TIMEOUT = 300


def binary():
    path = os.environ.get("GPUSCHED_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(f"GPUSCHED_BINARY={path!r} is not an executable")
    return os.path.abspath(path)


class DocCommandsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = binary()
        cls.commands = all_commands(ROOT)

    def test_there_are_commands_of_each_kind(self):
        kinds = {c.kind for c in self.commands}
        self.assertEqual(kinds, {"run", "cluster", "synopsis", "output"}, self.commands)
        self.assertGreaterEqual(len(self.commands), 20)

    def test_every_subcommand_and_flag_exists(self):
        cache, problems = {}, []
        for cmd in self.commands:
            problems += [f"{cmd.where()}: {p}\n    {cmd.text}" for p in check_syntax(self.binary, cmd, cache)]
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_transcript_matches(self):
        """`<!-- docs-test: output -->` blocks: the command prints what the block shows."""
        failures = []
        with tempfile.TemporaryDirectory(prefix="gpusched-docs-") as tmp:
            repo, bindir = scratch_root(tmp, self.binary)
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                       HOME=tmp)
            env.pop("KUBECONFIG", None)
            for cmd in (c for c in self.commands if c.kind == "output"):
                proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=repo,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, timeout=TIMEOUT)
                if proc.returncode != cmd.exit_code:
                    failures.append(f"{cmd.where()}: exit {proc.returncode}, the docs say "
                                    f"{cmd.exit_code}\n    {cmd.text}\n    {proc.stderr[-600:]}")
                want, got = mask("\n".join(cmd.expected)), mask(proc.stdout)
                if want != got:
                    failures.append(f"{cmd.where()}: output differs from the docs\n    {cmd.text}\n"
                                    f"--- docs\n{want}\n--- actual\n{got}")
        self.assertEqual(failures, [], "\n" + "\n".join(failures))

    def test_every_runnable_command_exits_0(self):
        failures = []
        with tempfile.TemporaryDirectory(prefix="gpusched-docs-") as tmp:
            repo, bindir = scratch_root(tmp, self.binary)
            env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
                       HOME=tmp)
            env.pop("KUBECONFIG", None)
            ran = 0
            for cmd in (c for c in self.commands if c.kind == "run"):
                ran += 1
                try:
                    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=repo,
                                          env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
                except subprocess.TimeoutExpired:
                    failures.append(f"{cmd.where()}: timed out after {TIMEOUT}s\n    {cmd.text}")
                    continue
                if proc.returncode != 0:
                    failures.append(f"{cmd.where()}: exit {proc.returncode}\n    {cmd.text}\n"
                                    f"    {proc.stderr.strip()[-600:]}")
            print(f"ran {ran} documented commands", file=sys.stderr)
        self.assertEqual(failures, [], "\n" + "\n".join(failures))


if __name__ == "__main__":
    unittest.main(verbosity=2)
