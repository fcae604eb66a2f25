#!/usr/bin/python3
"""Regenerates fuzz/corpus/, the seed corpus of the importer fuzzer.

Each seed is one format byte and a model (see fuzz/ImportFuzzer.cpp):
  text-NAME   'T' + test/Import/NAME.onnxtxt without its comment lines
  bin-NAME    'B' + the same model serialized as a binary ModelProto (when
              ONNX 1.12's parser reads it)
  text-TEST-PART, bin-TEST-PART
              the same for each `#--- PART.onnxtxt` section of a split-file
              test test/Import/TEST.test
  text-known-NAME, bin-known-NAME
              the same for fuzz/known-crashes/NAME.onnxtxt, the inputs that
              crashed the importer once (every run replays them)
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
    sources = [(p, "") for p in sorted(glob.glob(
        os.path.join(ROOT, "test", "Import", "*.onnxtxt")))]
    sources += [(p, "known-") for p in sorted(glob.glob(
        os.path.join(ROOT, "fuzz", "known-crashes", "*.onnxtxt")))]
    models = []
    for path, prefix in sources:
        with open(path) as f:
            models.append((prefix + os.path.splitext(os.path.basename(path))[0],
                           f.read()))
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "Import", "*.test"))):
        test = os.path.splitext(os.path.basename(path))[0]
        part = None
        with open(path) as f:
            for line in f:
                if line.startswith("#--- "):
                    part = line[5:].strip()
                    if part.endswith(".onnxtxt"):
                        models.append((test + "-" + part[:-len(".onnxtxt")], ""))
                    else:
                        part = None
                elif part is not None:
                    models[-1] = (models[-1][0], models[-1][1] + line)
    for name, source in models:
        text = "".join(l + "\n" for l in source.splitlines()
                       if not l.lstrip().startswith("#"))
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
