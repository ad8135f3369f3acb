#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets over files and messages from
outside: small slices of the datasets in data/ (plain and gzip), the topology
files, the events of docs/events.md, and the inputs the tests write (raw and
quoted string literals of the tests named below).

    make_seeds.py TARGET OUTDIR
"""
import glob
import gzip
import hashlib
import json
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def literals(*paths):
    """The string literals of C++ sources: R"(...)" and "..." (with adjacent
    quoted pieces joined, escapes decoded)."""
    out = []
    for path in paths:
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        out += re.findall(r'R"\((.*?)\)"', text, re.S)
        text = re.sub(r'R"\(.*?\)"', "", text, flags=re.S)
        for run in re.findall(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', text):
            pieces = re.findall(r'"((?:[^"\\\n]|\\.)*)"', run)
            joined = "".join(pieces)
            try:
                out.append(joined.encode("latin-1", "backslashreplace").decode("unicode_escape"))
            except UnicodeDecodeError:
                pass
    return out


def slices(doc, n):
    """The same dataset with only its first n configurations."""
    doc = dict(doc)
    if "cache" in doc:
        doc["cache"] = dict(list(doc["cache"].items())[:n])
    for key in ("results", "Results"):
        if key in doc:
            doc[key] = doc[key][:n]
    return doc


def write(outdir, data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)


def main():
    target, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    if target == "fuzz_replay_dataset":
        files = sorted(glob.glob(os.path.join(ROOT, "data/replay/*.json.gz")))
        files += sorted(glob.glob(os.path.join(ROOT, "data/datasets/*/*.json.gz")))
        for path in files:
            raw = gzip.open(path).read()
            try:
                doc = json.loads(raw)
            except ValueError:  # the truncated cache: its first bytes
                write(outdir, raw[:3000])
                continue
            small = json.dumps(slices(doc, 4))
            write(outdir, small)
            write(outdir, gzip.compress(small.encode(), mtime=0))
        for text in literals("tests/kernels/test_replay_dataset.cpp", "tests/kernels/replay_fixtures.hpp"):
            if text.lstrip().startswith("{"):
                write(outdir, text)
    elif target == "fuzz_task":
        sources = glob.glob(os.path.join(ROOT, "tests/**/*.cpp"), recursive=True)
        for text in literals(*[os.path.relpath(p, ROOT) for p in sources]):
            if re.match(r"(matmul|bmm|conv2d|gemm):", text):
                write(outdir, text)
    elif target == "fuzz_topology":
        for path in glob.glob(os.path.join(ROOT, "data/topologies/*.yaml")) + glob.glob(
                os.path.join(ROOT, "examples/*.yaml")):
            write(outdir, open(path, "rb").read())
        for text in literals("tests/storage/test_topology.cpp"):
            if ":" in text and "\n" in text:
                write(outdir, text)
    elif target == "fuzz_event":
        for line in open(os.path.join(ROOT, "docs/events.md"), encoding="utf-8"):
            if line.startswith('{"type"'):
                write(outdir, line.strip())
        for text in literals("tests/storage/test_event_stream.cpp"):
            if text.lstrip().startswith("{"):
                write(outdir, text)
    else:
        sys.exit("make_seeds.py: no seeds for " + target)


main()
