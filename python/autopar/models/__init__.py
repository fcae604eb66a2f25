"""Models for autopar: each module is also a script.

- ``gpt_decoder``: GPT decoders of any size built with onnx.helper (with
  ``--shape-only``, weights without data, for planning at GPT-3 scale).
- ``model_zoo``: real architectures exported from PyTorch (python3-torch).
- ``export_mlp``: the bundled MLP of examples/mlp.
"""
