# SPDX-License-Identifier: Apache-2.0
"""The `gpusched ...` commands shown in the repository's Markdown, found and checked (issue #24).

A command is a line of a fenced code block whose first word (after an optional `$ `) is
`gpusched`, `build/release/cmd/gpusched/gpusched` or `kubectl gpusched`; lines ending in `\\` are
joined, `# comments` dropped. An HTML comment on the line before the block says how it is
checked (default: run):

    (none)                           run from the repository root with the built binary; exit 0
    <!-- docs-test: cluster -->      needs a cluster: its subcommand and flags are checked here,
                                     and tests/e2e/docs_commands_test.py runs it against the
                                     test control plane
    <!-- docs-test: synopsis -->     a usage pattern with placeholders: its subcommand and flags
                                     are checked against `--help`
    <!-- docs-test: output -->       a transcript: `$ gpusched ...` lines, each followed by what
                                     it prints on stdout; run, and the output must match (times
                                     and rates, "in 0.004 s (2250 decisions/s)", are masked);
    <!-- docs-test: output exit=1 --> the same, and the command must exit 1

Every kind checks that the subcommand path and each flag exist (`gpusched <path> --help` lists
them), so a renamed or removed command or flag fails the test.
"""

import os
import re
import shlex
import subprocess

ROOT = os.environ.get("GPUSCHED_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROGRAMS = ("gpusched", "build/release/cmd/gpusched/gpusched")
MARKER = re.compile(r"<!--\s*docs-test:\s*(\w+)(?:\s+exit=(\d+))?\s*-->")
KINDS = ("run", "cluster", "synopsis", "output")
# Wall-clock figures in a transcript: masked on both sides before comparing.
VOLATILE = re.compile(r"in \d+\.\d+ s \(\d+ decisions/s\)")
# Where the docs' commands find the openb trace, and where it is: GPUSCHED_TRACE_DIR, else
# ../shared/traces/alibaba-gpu-v2023 beside the repository (README, "The openb trace").
TRACE_REF = "../shared/traces/alibaba-gpu-v2023"


def trace_dir():
    return os.environ.get("GPUSCHED_TRACE_DIR") or os.path.join(
        os.path.dirname(ROOT), "shared", "traces", "alibaba-gpu-v2023")


def has_trace():
    return os.path.isfile(os.path.join(trace_dir(), "openb_pod_list_default.csv"))


class DocCommand:
    def __init__(self, file, line, text, kind, exit_code=0):
        self.file, self.line, self.text, self.kind = file, line, text, kind
        self.exit_code = exit_code
        self.expected = []  # kind "output": the lines it prints

    def needs_trace(self):
        return TRACE_REF in self.text

    def where(self):
        return f"{self.file}:{self.line}"

    def argv(self):
        """The words after the program name, up to a shell operator (>, |, &&, ;)."""
        words = shlex.split(self.text, comments=False)
        if words[0] == "kubectl":
            words = words[1:]
        out = []
        for w in words[1:]:
            if w in (">", "|", "&&", ";", "2>&1", "<") or w.startswith(">"):
                break
            out.append(w)
        return out

    def __repr__(self):
        return f"{self.where()} [{self.kind}] {self.text}"


def markdown_files(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "*.md"], stdout=subprocess.PIPE,
                           text=True, check=True).stdout.split()
    return sorted(f for f in files if not f.startswith("build/"))


def _strip_comment(line):
    """Drops a trailing `# comment` outside quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _is_command(line):
    words = line.split()
    if not words:
        return False
    if words[0] == "kubectl" and len(words) > 1 and words[1] == "gpusched":
        return True
    return words[0] in PROGRAMS


def commands_in(root, rel):
    found, in_block, kind, exit_code, last = [], False, "run", 0, ""
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            if not in_block:
                m = MARKER.search(last)
                kind = m.group(1) if m else "run"
                exit_code = int(m.group(2)) if m and m.group(2) else 0
                if kind not in KINDS:
                    raise ValueError(f"{rel}:{i}: unknown docs-test kind {kind!r} (one of {KINDS})")
            in_block = not in_block
            i += 1
            continue
        if stripped:
            last = stripped
        if in_block and kind == "output":
            if line.startswith("$ ") and _is_command(line[2:]):
                found.append(DocCommand(rel, i + 1, _strip_comment(line[2:]), kind, exit_code))
            elif found and found[-1].kind == "output" and found[-1].file == rel:
                found[-1].expected.append(line)
        elif in_block:
            text = stripped[2:] if stripped.startswith("$ ") else stripped
            if _is_command(text):
                start = i + 1
                text = _strip_comment(text)
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1].rstrip() + " " + _strip_comment(lines[i].strip())
                found.append(DocCommand(rel, start, text, kind))
        i += 1
    return found


def mask(text):
    """The text with its wall-clock figures masked and trailing blanks dropped."""
    return "\n".join(VOLATILE.sub("in … s (… decisions/s)", l).rstrip() for l in text.splitlines()).rstrip("\n")


def all_commands(root):
    out = []
    for rel in markdown_files(root):
        out += commands_in(root, rel)
    return out


def help_text(binary, path):
    proc = subprocess.run([binary, *path, "--help"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=30)
    return proc.returncode, proc.stdout


def subcommands_of(help_out):
    """Names under the "Subcommands:" heading of CLI11's help."""
    names, inside = [], False
    for line in help_out.splitlines():
        if line.strip() == "Subcommands:":
            inside = True
            continue
        if inside:
            if not line.startswith("  "):
                break
            names.append(line.split()[0])
    return names


def check_syntax(binary, cmd, cache):
    """Problems with the command's subcommand path and flags; [] when they all exist."""
    argv = cmd.argv()
    path, helps = [], []
    rc, root_help = cache.setdefault((), help_text(binary, []))
    helps.append(root_help)
    rest = list(argv)
    if rest and rest[0] == "plan" and cmd.text.startswith("kubectl"):
        rest = ["deletion-cost"] + rest
    while rest and not rest[0].startswith("-") and rest[0] in subcommands_of(helps[-1]):
        path.append(rest.pop(0))
        rc, h = cache.setdefault(tuple(path), help_text(binary, path))
        if rc != 0:
            return [f"`gpusched {' '.join(path)} --help` exits {rc}"]
        helps.append(h)
    if not path and argv and argv[0] not in ("--version", "--help", "-h"):
        return [f"no subcommand {argv[0]!r} (gpusched has {subcommands_of(root_help)})"]
    problems = []
    for word in rest:
        if word == "--":
            break
        if not word.startswith("-") or re.fullmatch(r"-?\d+(\.\d+)?", word):
            continue
        flag = word.split("=", 1)[0]
        rx = re.compile(r"(^|[\s,])" + re.escape(flag) + r"([\s,=]|$)", re.M)
        if not any(rx.search(h) for h in helps):
            problems.append(f"flag {flag} is not an option of `gpusched {' '.join(path)}`")
    return problems


def scratch_root(tmp, binary_path):
    """tmp/repo: the repository's entries as symlinks (build/ replaced by the binary at the
    README's path), tmp/shared/traces/alibaba-gpu-v2023 -> the trace (trace_dir(), when it is
    there), tmp/bin/{gpusched,kubectl-gpusched} -> the binary."""
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    for name in os.listdir(ROOT):
        if name not in ("build", ".git"):
            os.symlink(os.path.join(ROOT, name), os.path.join(repo, name))
    release = os.path.join(repo, "build", "release", "cmd", "gpusched")
    os.makedirs(release)
    os.symlink(binary_path, os.path.join(release, "gpusched"))
    if has_trace():
        os.makedirs(os.path.join(tmp, "shared", "traces"))
        os.symlink(os.path.abspath(trace_dir()), os.path.join(tmp, TRACE_REF[3:]))
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    os.symlink(binary_path, os.path.join(bindir, "gpusched"))
    os.symlink(binary_path, os.path.join(bindir, "kubectl-gpusched"))
    return repo, bindir
