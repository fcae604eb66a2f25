#!/usr/bin/python3
"""Regenerates fuzz/corpus/, the seed corpus of the importer fuzzer.

Each seed is one format byte and a model (see fuzz/ImportFuzzer.cpp):
  text-NAME   'T' + test/Import/NAME.onnxtxt without its comment lines
  bin-NAME    'B' + the same model serialized as a binary ModelProto (when
              ONNX 1.12's parser reads it)
  bin-mlp     'B' + examples/mlp/model.onnx
Run with Debian's python3 (python3-onnx): /usr/bin/python3 fuzz/make_corpus.py
"""
import glob
import os
import shutil

import onnx.parser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "Import", "*.onnxtxt"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            text = "".join(l for l in f if not l.lstrip().startswith("#"))
        with open(os.path.join(OUT, "text-" + name), "wb") as f:
            f.write(b"T" + text.encode())
        try:
            model = onnx.parser.parse_model(text)
        except Exception:  # invalid-parse and friends: text seed only
            continue
        with open(os.path.join(OUT, "bin-" + name), "wb") as f:
            f.write(b"B" + model.SerializeToString())
    with open(os.path.join(ROOT, "examples", "mlp", "model.onnx"), "rb") as f:
        mlp = f.read()
    with open(os.path.join(OUT, "bin-mlp"), "wb") as f:
        f.write(b"B" + mlp)


if __name__ == "__main__":
    main()
