#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CEL's public conformance tests (cel.dev/expr tests/simple/testdata/*.textproto) against
gpusched's CEL evaluator (src/cel).

Reads the textproto files with a small generic parser, keeps the files and sections in scope
(SCOPE below: what DRA selectors use; the rest is listed with the reason it is out), turns each
test into a JSON case, runs them all through the C++ runner (cel_conformance_runner) and compares
values and errors. Prints "CEL conformance: N/M passed in scope", each failure, and the skipped
counts; fails when fewer than --min-pass cases pass or a case in scope crashes the runner.

The files come from the Go module cache: $GPUSCHED_CACHE_DIR/go/mod (default
~/.cache/gpusched/go/mod, scripts/testbin's GOMODCACHE); when cel.dev/expr@v0.25.1 is missing it
is fetched with `go mod download` (GOMODCACHE pointing there; Go at /usr/local/go/bin/go).

Usage: cel_conformance.py --runner PATH [--min-pass N] [--verbose]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = "cel.dev/expr"
VERSION = "v0.25.1"

# file -> sections left out (None: the whole file is in scope, minus the cases auto-skipped below).
SCOPE: dict[str, dict[str, str]] = {
    "basic": {},
    "comparisons": {"eq_wrapper": "protobuf wrapper types"},
    "conversions": {},
    "fp_math": {},
    "integer_math": {},
    "lists": {},
    "logic": {},
    "macros": {},
    "parse": {"struct_field_names": "protobuf message construction"},
    "plumbing": {},
    "string": {},
    "string_ext": {
        "format": "string.format() is not implemented",
        "format_errors": "string.format() is not implemented",
    },
    "bindings_ext": {},
    "fields": {"qualified_identifier_resolution": "containers and qualified variable names"},
}
OUT_OF_SCOPE = {
    "dynamic": "protobuf well-known types (Any, Struct, wrappers)",
    "enums": "protobuf enums",
    "proto2": "protobuf messages",
    "proto3": "protobuf messages",
    "proto2_ext": "protobuf extensions",
    "wrappers": "protobuf wrapper types",
    "timestamps": "timestamp and duration (not in DRA's device data)",
    "optionals": "optional types",
    "unknowns": "partial evaluation with unknowns",
    "namespace": "containers",
    "type_deduction": "checker type deduction (the checker here is a light one)",
    "macros2": "two-variable comprehensions",
    "math_ext": "cel-go math extension (not in the Kubernetes environment)",
    "encoders_ext": "cel-go encoders extension (not in the Kubernetes environment)",
    "block_ext": "cel.block (not in the Kubernetes environment)",
}
# Cases where the expected result is not what Kubernetes 1.35 does (its cel-go v0.26.0 differs
# from these tests), so gpusched follows Kubernetes.
UPSTREAM_DIFFERENCES = {
    "string_ext/value_errors/indexof_out_of_range":
        "cel-go v0.26 returns -1 for an offset past the end",
    "string_ext/value_errors/lastindexof_out_of_range":
        "cel-go v0.26 returns -1 for an offset past the end",
}
# Substrings of an expression that mark a case as out of scope wherever it is.
UNSUPPORTED_MARKERS = ("timestamp(", "duration(", "google.protobuf", "TestAllTypes", "cel.expr.",
                       "optional", ".?", "?.", "[?", "{?", "Duration", "Timestamp")


# --- textproto ------------------------------------------------------------------------------

class TextProtoError(Exception):
    pass


def tokenize(text: str) -> list[tuple[str, object]]:
    tokens: list[tuple[str, object]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "{}[]:,;<>":
            tokens.append(("p", c))
            i += 1
        elif c in "\"'":
            value, i = read_string(text, i)
            if tokens and tokens[-1][0] == "s":  # adjacent literals concatenate
                tokens[-1] = ("s", tokens[-1][1] + value)
            else:
                tokens.append(("s", value))
        else:
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_.+-/"):
                j += 1
            if j == i:
                raise TextProtoError(f"unexpected character {c!r} at {i}")
            tokens.append(("w", text[i:j]))
            i = j
    return tokens


def read_string(text: str, i: int) -> tuple[bytes, int]:
    quote = text[i]
    i += 1
    out = bytearray()
    simple = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39,
              '"': 34, "?": 63}
    while text[i] != quote:
        c = text[i]
        if c == "\\":
            e = text[i + 1]
            if e in simple:
                out.append(simple[e])
                i += 2
            elif e in "xX":
                j = i + 2
                while j < len(text) and j < i + 4 and text[j] in "0123456789abcdefABCDEF":
                    j += 1
                out.append(int(text[i + 2:j], 16))
                i = j
            elif e in "01234567":
                j = i + 1
                while j < len(text) and j < i + 4 and text[j] in "01234567":
                    j += 1
                out.append(int(text[i + 1:j], 8) & 0xFF)
                i = j
            elif e in "uU":
                width = 4 if e == "u" else 8
                out += chr(int(text[i + 2:i + 2 + width], 16)).encode("utf-8", "surrogatepass")
                i += 2 + width
            else:
                raise TextProtoError(f"bad escape \\{e}")
        else:
            out += c.encode("utf-8")
            i += 1
    return bytes(out), i + 1


def parse_message(tokens, pos: int, close: str | None):
    """Returns ({field: [values]}, pos). A value is bytes (string), str (scalar word) or dict."""
    msg: dict[str, list] = {}
    while True:
        if pos >= len(tokens):
            if close is None:
                return msg, pos
            raise TextProtoError("unexpected end")
        kind, tok = tokens[pos]
        if kind == "p" and tok == close:
            return msg, pos + 1
        if kind == "p" and tok in ",;":
            pos += 1
            continue
        if kind == "p" and tok == "[":  # [extension.name]
            end = pos
            while tokens[end] != ("p", "]"):
                end += 1
            name = "[" + "".join(str(t[1]) for t in tokens[pos + 1:end]) + "]"
            pos = end + 1
        elif kind == "w":
            name = tok
            pos += 1
        else:
            raise TextProtoError(f"expected a field name, got {tok!r}")
        if tokens[pos] == ("p", ":"):
            pos += 1
        values, pos = parse_value(tokens, pos)
        msg.setdefault(name, []).extend(values)


def parse_value(tokens, pos: int):
    kind, tok = tokens[pos]
    if kind == "p" and tok in "{<":
        sub, pos = parse_message(tokens, pos + 1, "}" if tok == "{" else ">")
        return [sub], pos
    if kind == "p" and tok == "[":
        items = []
        pos += 1
        while tokens[pos] != ("p", "]"):
            if tokens[pos] == ("p", ","):
                pos += 1
                continue
            vals, pos = parse_value(tokens, pos)
            items.extend(vals)
        return items, pos + 1
    if kind == "s":
        return [tok], pos + 1
    if kind == "w":
        return [tok], pos + 1
    raise TextProtoError(f"unexpected {tok!r}")


def parse_textproto(text: str) -> dict:
    msg, _ = parse_message(tokenize(text), 0, None)
    return msg


# --- cases ----------------------------------------------------------------------------------

class Unsupported(Exception):
    pass


def first(msg: dict, name: str, default=None):
    values = msg.get(name)
    return values[0] if values else default


def as_text(v) -> str:
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)


def parse_double(word: str) -> float:
    w = word.lower()
    if w in ("inf", "infinity", "+inf"):
        return math.inf
    if w in ("-inf", "-infinity"):
        return -math.inf
    if w == "nan":
        return math.nan
    return float(w)


def convert_value(v: dict):
    """A cel.expr.Value message -> the runner's typed JSON."""
    if "null_value" in v:
        return {"null": None}
    if "bool_value" in v:
        return {"bool": as_text(first(v, "bool_value")) == "true"}
    if "int64_value" in v:
        return {"int": str(int(as_text(first(v, "int64_value"))))}
    if "uint64_value" in v:
        return {"uint": str(int(as_text(first(v, "uint64_value"))))}
    if "double_value" in v:
        return {"double": encode_double(parse_double(as_text(first(v, "double_value"))))}
    if "string_value" in v:
        s = first(v, "string_value")
        return {"string": (s if isinstance(s, bytes) else str(s).encode()).hex()}
    if "bytes_value" in v:
        s = first(v, "bytes_value")
        return {"bytes": (s if isinstance(s, bytes) else str(s).encode()).hex()}
    if "list_value" in v:
        lv = first(v, "list_value")
        return {"list": [convert_value(x) for x in lv.get("values", [])]}
    if "map_value" in v:
        mv = first(v, "map_value")
        return {"map": [[convert_value(first(e, "key")), convert_value(first(e, "value"))]
                        for e in mv.get("entries", [])]}
    if "type_value" in v:
        return {"type": as_text(first(v, "type_value"))}
    raise Unsupported("value kind " + ",".join(v.keys()))


def encode_double(d: float) -> str:
    if math.isnan(d):
        return "nan"
    if math.isinf(d):
        return "inf" if d > 0 else "-inf"
    return repr(d)


def canonical(v):
    """Typed JSON -> a comparable form (maps unordered, NaN equal to NaN, -0.0 == 0.0)."""
    (kind, x), = v.items()
    if kind == "double":
        d = float(x)
        return ("double", "nan" if math.isnan(d) else d)
    if kind == "list":
        return ("list", tuple(canonical(e) for e in x))
    if kind == "map":
        return ("map", tuple(sorted((repr(canonical(k)), canonical(val)) for k, val in x)))
    return (kind, x)


def build_case(file: str, section: str, test: dict) -> dict:
    expr = as_text(first(test, "expr", ""))
    if first(test, "container"):
        raise Unsupported("container")
    if any(m in expr for m in UNSUPPORTED_MARKERS):
        raise Unsupported("expression uses an out-of-scope feature")
    for flag in ("check_only", "unknown", "any_unknowns", "disable_macros"):
        if flag in test:
            raise Unsupported(flag)
    variables = []
    for b in test.get("bindings", []):
        value = first(first(b, "value", {}), "value")
        if value is None:
            raise Unsupported("binding without a value")
        variables.append({"name": as_text(first(b, "key")), "value": convert_value(value)})
    bound = {v["name"] for v in variables}
    for decl in test.get("type_env", []):
        name = as_text(first(decl, "name", ""))
        if "function" in decl:
            raise Unsupported("declared function")
        if name and name not in bound:
            variables.append({"name": name})
    case = {"id": f"{file}/{section}/{as_text(first(test, 'name', '?'))}", "expr": expr,
            "check": as_text(first(test, "disable_check", "false")) != "true",
            "vars": variables}
    if "value" in test:
        case["want"] = convert_value(first(test, "value"))
    elif "typed_result" in test:
        case["want"] = convert_value(first(first(test, "typed_result"), "result"))
    elif "eval_error" in test or "any_eval_errors" in test:
        case["want_error"] = True
    else:
        case["want"] = {"bool": True}  # the proto's default: a test with no result expects true
    return case


def find_testdata() -> Path:
    cache = os.environ.get("GPUSCHED_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpusched")
    modcache = Path(cache) / "go" / "mod"
    testdata = modcache / f"{MODULE}@{VERSION}" / "tests" / "simple" / "testdata"
    if testdata.is_dir():
        return testdata
    go = shutil.which("go") or "/usr/local/go/bin/go"
    env = dict(os.environ, GOMODCACHE=str(modcache), GOFLAGS="-mod=mod")
    print(f"cel_conformance: fetching {MODULE}@{VERSION} into {modcache}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([go, "mod", "download", "-json", f"{MODULE}@{VERSION}"], cwd=tmp, env=env,
                       check=True, stdout=subprocess.DEVNULL)
    if not testdata.is_dir():
        sys.exit(f"cel_conformance: {testdata} is still missing after go mod download")
    return testdata


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runner", required=True)
    ap.add_argument("--min-pass", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    testdata = find_testdata()

    cases, skipped = [], {}
    for file, left_out in SCOPE.items():
        doc = parse_textproto((testdata / f"{file}.textproto").read_text(encoding="utf-8"))
        for section in doc.get("section", []):
            sname = as_text(first(section, "name", "?"))
            for test in section.get("test", []):
                if sname in left_out:
                    skipped[f"{file}/{sname}: {left_out[sname]}"] = skipped.get(
                        f"{file}/{sname}: {left_out[sname]}", 0) + 1
                    continue
                tname = as_text(first(test, "name", "?"))
                if f"{file}/{sname}/{tname}" in UPSTREAM_DIFFERENCES:
                    key = f"{file}/{sname}/{tname}: {UPSTREAM_DIFFERENCES[f'{file}/{sname}/{tname}']}"
                    skipped[key] = 1
                    continue
                try:
                    cases.append(build_case(file, sname, test))
                    cases[-1]["id"] += f"#{len(cases)}"  # names repeat within a section
                except Unsupported as e:
                    key = f"{file}: {e}"
                    skipped[key] = skipped.get(key, 0) + 1

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
        path = f.name
    try:
        proc = subprocess.run([args.runner, path], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        print(f"cel_conformance: the runner exited with {proc.returncode}")
        return 1
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[r["id"]] = r

    passed, failures = 0, []
    for c in cases:
        r = results.get(c["id"])
        if r is None:
            failures.append(f"{c['id']}: no result")
            continue
        if c.get("want_error"):
            ok = "error" in r
            got = r.get("result")
        else:
            ok = "result" in r and canonical(r["result"]) == canonical(c["want"])
            got = r.get("result", r.get("error"))
        if ok:
            passed += 1
        else:
            want = "an error" if c.get("want_error") else json.dumps(c["want"])
            failures.append(f"{c['id']}: {c['expr']!r}: want {want}, got {json.dumps(got)}")

    print(f"CEL conformance: {passed}/{len(cases)} passed in scope")
    for f in failures:
        print("  FAIL " + f)
    print(f"skipped (out of scope): {sum(skipped.values())} cases in the files in scope")
    for reason, n in sorted(skipped.items()):
        print(f"  {n:4d}  {reason}")
    print("files out of scope: " + ", ".join(f"{k} ({v})" for k, v in OUT_OF_SCOPE.items()))
    if passed < args.min_pass:
        print(f"cel_conformance: {passed} passed, fewer than the required {args.min_pass}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
