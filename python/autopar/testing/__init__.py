"""Test drivers for autopar: each module is also a script.

- ``onnx_node_tests``: the ONNX backend node-test sweep (libonnx-testdata).
- ``random_partition``: the randomized partition test.
"""
