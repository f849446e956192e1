#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every `gpusched ...` command in the repository's Markdown exists and works (issue #24).

See doc_commands.py for what counts as a command and the three kinds. Here: every command's
subcommand and flags exist (all kinds), and every `run` command runs, in document order per file
(a command may use a file an earlier one wrote), from a scratch copy of the repository root (its
entries symlinked, ../shared beside it) with `gpusched` and `build/release/cmd/gpusched/gpusched`
both being the binary under test, and exits 0 within its timeout. The commands marked `cluster`
run in tests/e2e/docs_commands_test.py.

The commands that read the openb trace (TRACE_REF) run only with DOCS_COMMANDS_TRACE=1 (the
ctest test docs_commands_trace), which exits 77 — Skipped in ctest's summary — with one line
saying what is missing when the trace is not there.

Environment: GPUSCHED_BINARY (the binary; ctest sets it), GPUSCHED_SOURCE_DIR,
GPUSCHED_TRACE_DIR (the trace; default ../shared/traces/alibaba-gpu-v2023), DOCS_COMMANDS_TRACE.
"""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_commands import (  # noqa: E402
    ROOT, all_commands, check_syntax, has_trace, mask, scratch_root, trace_dir)

TIMEOUT = 300
# This run's share of the commands: those that read the trace, or the others.
TRACE_RUN = os.environ.get("DOCS_COMMANDS_TRACE") == "1"
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for docs_commands_trace


def ours(cmd):
    return cmd.needs_trace() == TRACE_RUN


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
        if TRACE_RUN:
            self.assertTrue(any(c.needs_trace() for c in self.commands))
            return
        kinds = {c.kind for c in self.commands}
        self.assertEqual(kinds, {"run", "cluster", "synopsis", "output"}, self.commands)
        self.assertGreaterEqual(len(self.commands), 20)

    def test_every_subcommand_and_flag_exists(self):
        if TRACE_RUN:
            return  # the other run checks every command
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
            for cmd in (c for c in self.commands if c.kind == "output" and ours(c)):
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
            for cmd in (c for c in self.commands if c.kind == "run" and ours(c)):
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
    if TRACE_RUN and not has_trace():
        print(f"SKIPPED: the openb trace is not at {trace_dir()}: set GPUSCHED_TRACE_DIR to the "
              "alibaba/clusterdata folder cluster-trace-gpu-v2023/csv (README, \"The openb trace\")")
        sys.exit(SKIPPED)
    unittest.main(verbosity=2)
