"""autopar from Python: plan, compile, run and verify ONNX models over a grid.

The package binds autopar's driver library (the code behind the ``autopar``
command), so a plan or a compiled program is the same as the command's::

    import numpy as np
    import autopar

    model = autopar.load("examples/mlp/model.onnx")
    plan = autopar.plan(model, "2", cluster="cluster.json")
    print(plan.predicted["step_time_s"], plan.baselines.keys())
    plan.save("plan.json")                 # and plan.txt next to it
    open("plan.html", "w").write(plan.to_html())

    program = autopar.compile(model, "2", plan=plan)
    outputs = program.run({"input": np.ones((8, 16), np.float32)})

    result = autopar.verify(model, "2x2", plan="tensor")
    assert result.ok

Errors autopar reports raise :class:`AutoparError` with the message the
command prints after ``autopar: error:``. Running a program starts its ranks
with ``mpirun`` (one device: the runner alone), as ``autopar run`` does.

Subpackages: :mod:`autopar.models` (GPT decoders of any size, real models
exported from PyTorch, the bundled MLP) and :mod:`autopar.testing` (the ONNX
node-test sweep and the randomized partition test).
"""

import json as _json
import os as _os
import shutil as _shutil
import tempfile as _tempfile

from . import _config
from . import _autopar

__all__ = [
    "AutoparError",
    "Model",
    "Plan",
    "Program",
    "VerifyResult",
    "load",
    "plan",
    "compile",
    "verify",
]

__version__ = _autopar.__version__

AutoparError = _autopar.AutoparError

# The driver starts autopar-runner from the build tree or the install prefix.
if "AUTOPAR_RUNNER" not in _os.environ:
    _runner = _os.path.join(_config.BIN_DIR, "autopar-runner")
    if _os.access(_runner, _os.X_OK):
        _os.environ["AUTOPAR_RUNNER"] = _runner


def _grid_text(grid):
    """``"2x4"`` from ``"2x4"``, ``2``, ``(2, 4)`` or ``[2, 4]``."""
    if isinstance(grid, str):
        return grid
    if isinstance(grid, int) and not isinstance(grid, bool):
        return str(grid)
    if isinstance(grid, (tuple, list)) and grid and all(
            isinstance(g, int) and not isinstance(g, bool) for g in grid):
        return "x".join(str(g) for g in grid)
    raise TypeError(
        f"grid must be a string such as '2x4', an int or a tuple of ints, "
        f"got {grid!r}")


def _shape_tuple(name, shape):
    if isinstance(shape, str):
        try:
            return [int(d) for d in shape.split("x")]
        except ValueError:
            raise ValueError(
                f"input_shapes['{name}']: expected a shape such as '8x128', "
                f"got '{shape}'") from None
    try:
        return [int(d) for d in shape]
    except TypeError:
        raise TypeError(
            f"input_shapes['{name}']: expected a tuple of ints or a string "
            f"such as '8x128', got {shape!r}") from None


class _ClusterFile:
    """A cluster argument as a file path: a path as is, a dict written to a
    temporary JSON file (removed when this object goes)."""

    def __init__(self, cluster):
        self._dir = None
        if cluster is None:
            self.path = ""
        elif isinstance(cluster, (str, _os.PathLike)):
            self.path = _os.fspath(cluster)
        elif isinstance(cluster, dict):
            self._dir = _tempfile.mkdtemp(prefix="autopar-cluster-")
            self.path = _os.path.join(self._dir, "cluster.json")
            with open(self.path, "w") as f:
                _json.dump(cluster, f)
        else:
            raise TypeError(
                "cluster must be a path or a dict in the cluster-file "
                f"format, got {type(cluster).__name__}")

    def __del__(self):
        if self._dir:
            _shutil.rmtree(self._dir, ignore_errors=True)


class Model:
    """An imported ONNX model (see :func:`load`).

    Attributes:
        path: the model file.
        inputs, outputs: per runtime input and output, a dict with ``name``,
            ``dtype`` (``"f32"``, ``"i64"``, ...) and ``shape`` (-1 for a
            dimension that stays symbolic).
        sha256: the SHA-256 of the model file.
    """

    def __init__(self, handle):
        self._handle = handle

    @property
    def path(self):
        return self._handle.path

    @property
    def inputs(self):
        return self._handle.inputs

    @property
    def outputs(self):
        return self._handle.outputs

    @property
    def sha256(self):
        return self._handle.sha256

    def __repr__(self):
        return f"autopar.Model({self.path!r})"


def load(path, input_shapes=None, batch=None):
    """Imports the ONNX model at ``path`` (``.onnx`` or ONNX text syntax
    ``.onnxtxt``).

    Args:
        path: the model file. Weights may be shape-only (external data
            missing) for planning; compiling then fails naming the weight.
        input_shapes: ``{input name: shape}`` resolving symbolic dimensions
            of graph inputs, as ``--input-shape``; a shape is a tuple of ints
            or a string such as ``"8x128"``.
        batch: dimension 0 of every other runtime input, as ``--batch``.

    Returns:
        a :class:`Model`.

    Raises:
        AutoparError: the file is missing or malformed, an op is not
            supported, a shape does not fit the model.
    """
    shapes = {}
    for name, shape in (input_shapes or {}).items():
        shapes[str(name)] = _shape_tuple(name, shape)
    return Model(_autopar.load(_os.fspath(path), shapes, batch))


class Plan:
    """A parallel plan (see :func:`plan`): what plan.json holds.

    Attributes:
        json: the plan as a dict (docs/plan-format.md).
        grid: the device grid, a tuple.
        strategy: ``auto``, ``replicated``, ``data``, ``tensor``, ``fixed``
            or the plan file it was read from.
        mode: ``inference`` or ``training``.
        predicted: the predicted figures per device (``step_time_s``,
            ``compute_s``, ``comm_s``, ``peak_memory_bytes``, ``peak_at``,
            ``comm_bytes_per_device``); empty without a cluster.
        baselines: the replicated, data and tensor plans priced the same
            way (automatic plans).
        strategies: ``{node: strategy}`` per op (operand and result layouts,
            e.g. ``in [0,_] [_,1] -> out [0,1]``), over every stage of a
            pipeline.
        stages: the pipeline stages (1: no pipeline).
        stage_plans: a pipeline's stages, each a :class:`Plan` over its own
            slab of the grid (empty without a pipeline).
        memory_profile: ``[(node, bytes)]`` per device over program order
            (a pipeline's are its stage plans').
    """

    def __init__(self, text, model=None):
        self._text = text
        self._model = model
        self.json = _json.loads(text)

    @property
    def grid(self):
        return tuple(self.json.get("grid", []))

    @property
    def strategy(self):
        return self.json.get("strategy")

    @property
    def mode(self):
        return self.json.get("mode")

    @property
    def predicted(self):
        return dict(self.json.get("predicted", {}))

    @property
    def baselines(self):
        return dict(self.json.get("baselines", {}))

    @property
    def stage_plans(self):
        stages = (self.json.get("pipeline") or {}).get("stage_list", [])
        return [Plan(_json.dumps(stage["plan"]), self._model)
                for stage in stages if "plan" in stage]

    @property
    def strategies(self):
        result = {}
        for stage in self.stage_plans:
            result.update(stage.strategies)
        for op in self.json.get("ops", []):
            if "strategy" in op:
                result[op["node"]] = op["strategy"]
            else:
                ins = " ".join(o.get("sharding", "?")
                               for o in op.get("operands", []))
                outs = " ".join(r.get("sharding", "?")
                                for r in op.get("results", []))
                result[op["node"]] = f"in {ins} -> out {outs}".strip()
        return result

    @property
    def stages(self):
        pipeline = self.json.get("pipeline")
        if pipeline and "stages" in pipeline:
            return int(pipeline["stages"])
        return int(self.json.get("fixed", {}).get("pp", 1))

    @property
    def memory_profile(self):
        return [(node, size) for node, size in self.json.get(
            "memory_profile", [])]

    def to_json(self):
        """The text of plan.json (what ``autopar plan -o`` writes)."""
        return self._text

    def to_text(self):
        """The text of plan.txt, for people."""
        return _autopar.render_text(self._text)

    def to_html(self):
        """One self-contained HTML page (inline SVG, nothing fetched): the
        shardings per grid axis, memory over program order, compute against
        communication per op kind, the pipeline schedule, the baselines."""
        return _autopar.render_html(self._text)

    def save(self, path, html=None):
        """Writes plan.json to ``path`` and plan.txt next to it, as
        ``autopar plan -o path``; with ``html``, the page there too. The
        file can be given back as ``autopar.compile(..., plan=path)`` or
        ``autopar compile --plan path``."""
        path = _os.fspath(path)
        with open(path, "w") as f:
            f.write(self._text)
        with open(_os.path.splitext(path)[0] + ".txt", "w") as f:
            f.write(self.to_text())
        if html is not None:
            with open(_os.fspath(html), "w") as f:
                f.write(self.to_html())

    def __repr__(self):
        step = self.predicted.get("step_time_s")
        extra = f", step {step:.3e} s" if step is not None else ""
        return (f"<autopar.Plan grid {'x'.join(map(str, self.grid))}, "
                f"{self.strategy}{extra}>")


_PLAN_OPTIONS = {
    "precision": str,
    "loss": str,
    "microbatches": str,
    "recompute": str,
    "fixed": str,
    "stages": str,
    "schedule": str,
    "distributed_optimizer": bool,
    "fold": bool,
    "time_limit_s": int,
}


def plan(model, grid, cluster=None, mode="inference", plan=None,
         progress=False, **options):
    """Finds the fastest plan that fits in memory (``autopar plan``).

    Args:
        model: a :class:`Model` (from :func:`load`) or a model path.
        grid: the device grid, ``"2x4"``, ``8`` or ``(2, 4)``.
        cluster: the cluster description, a path or a dict in the
            cluster-file format (docs/cost-model.md); default: the
            calibrated description of this machine.
        mode: ``"inference"`` or ``"training"``.
        plan: ``"auto"`` (the search; the default unless ``fixed`` is
            given), or ``"replicated"``, ``"data"``, ``"tensor"`` or a plan
            file to price instead.
        progress: print the search's progress lines on stderr.
        **options: the command's other flags: ``precision`` (f32, f16,
            bf16), ``loss`` (cross_entropy, mse, output), ``microbatches``
            (a count or ``"auto"``), ``recompute`` (none, selective, full,
            full:K, auto), ``fixed`` (``"tp=8,pp=2,dp=2,micro_batch=2"``),
            ``stages`` (pipeline stages: a count or ``"auto"``),
            ``schedule`` (1f1b, zb, gpipe),
            ``distributed_optimizer``, ``fold`` (share strategies among
            repeated blocks, default True), ``time_limit_s``.

    Returns:
        a :class:`Plan`.

    Raises:
        AutoparError: with the message ``autopar plan`` prints.
        TypeError: an unknown option.
    """
    if not isinstance(model, Model):
        model = load(model)
    request = _autopar._PlanRequest()
    request.grid = _grid_text(grid)
    # As for the command: without --plan, the search, unless --fixed
    # chooses the plan.
    if plan is None and "fixed" not in options:
        plan = "auto"
    request.plan = "" if plan is None else _os.fspath(plan)
    request.mode = mode
    request.quiet = not progress
    cluster_file = _ClusterFile(cluster)
    request.cluster_path = cluster_file.path
    for key, value in options.items():
        if key not in _PLAN_OPTIONS:
            raise TypeError(
                f"plan() got an unknown option '{key}' (expected one of "
                f"{', '.join(sorted(_PLAN_OPTIONS))})")
        if _PLAN_OPTIONS[key] is str:
            value = str(value)
        setattr(request, key, value)
    text = _autopar.plan(model._handle, request)
    return Plan(text, model)


class Program:
    """A compiled program (see :func:`compile`): the directory ``autopar
    compile`` writes, removed with this object unless it was given.

    Attributes:
        directory: the output directory (program.so, weights, plan.json,
            manifest.json).
        manifest: the manifest as a dict (grid, devices, inputs, outputs).
        plan: the :class:`Plan` it was compiled with.
    """

    def __init__(self, handle, model, directory, owned):
        self._handle = handle
        self._model = model
        self.directory = directory
        self._owned = owned

    def __del__(self):
        if getattr(self, "_owned", False):
            _shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def manifest(self):
        return self._handle.manifest

    @property
    def plan(self):
        with open(_os.path.join(self.directory, "plan.json")) as f:
            return Plan(f.read(), self._model)

    def run(self, inputs, timeout=300, threads=0):
        """Runs the program on its ranks (``autopar run``).

        Args:
            inputs: ``{input name: numpy array}``, every runtime input, each
                of the dtype and shape the program takes.
            timeout: seconds before the job is stopped.
            threads: threads per rank (0: the runner's default).

        Returns:
            ``{output name: numpy array}``.

        Raises:
            AutoparError: the job failed or timed out (the runtime's lines).
            KeyError, TypeError, ValueError: a missing or unknown input, a
                wrong dtype or shape.
        """
        return _autopar.run(self._handle, dict(inputs), int(timeout),
                            int(threads))

    def random_inputs(self, seed=0):
        """The seeded random inputs ``autopar verify`` uses: floats uniform
        in [-1, 1], integer indices within the dimension they index."""
        return _autopar.random_inputs(self._handle, self._model._handle,
                                      int(seed))

    def __repr__(self):
        return f"<autopar.Program {self.directory!r}>"


def compile(model, grid, plan="replicated", cluster=None, fixed=None,
            output_dir=None, progress=False):
    """Compiles a model for a grid (``autopar compile``).

    Args:
        model: a :class:`Model` or a model path.
        grid: the device grid, ``"2x4"``, ``8`` or ``(2, 4)``.
        plan: a :class:`Plan`, ``"auto"`` (the search; needs a cluster),
            ``"replicated"``, ``"data"``, ``"tensor"`` or a plan file.
        cluster: a path or a dict in the cluster-file format.
        fixed: a hand configuration, ``"tp=T,pp=1,dp=D,micro_batch=b"``.
        output_dir: where to write the program; default: a temporary
            directory removed with the :class:`Program`.
        progress: print the planner's progress lines on stderr.

    Returns:
        a :class:`Program`.

    Raises:
        AutoparError: with the message ``autopar compile`` prints.
    """
    if not isinstance(model, Model):
        model = load(model)
    owned = output_dir is None
    directory = (_tempfile.mkdtemp(prefix="autopar-program-") if owned
                 else _os.fspath(output_dir))
    options = _autopar._CompileOptions()
    options.grid = _grid_text(grid)
    options.out_dir = directory
    options.quiet = not progress
    cluster_file = _ClusterFile(cluster)
    options.cluster_path = cluster_file.path
    plan_dir = None
    try:
        if isinstance(plan, Plan):
            plan_dir = _tempfile.mkdtemp(prefix="autopar-plan-")
            path = _os.path.join(plan_dir, "plan.json")
            with open(path, "w") as f:
                f.write(plan.to_json())
            options.plan = path
        else:
            options.plan = _os.fspath(plan)
        if fixed is not None:
            options.fixed = str(fixed)
        handle = _autopar.compile(model._handle, options)
    except BaseException:
        if owned:
            _shutil.rmtree(directory, ignore_errors=True)
        raise
    finally:
        if plan_dir:
            _shutil.rmtree(plan_dir, ignore_errors=True)
    return Program(handle, model, directory, owned)


class VerifyResult:
    """What :func:`verify` found.

    Attributes:
        ok: every output (and reference output) matches.
        outputs: ``{name: (max_abs_err, max_rel_err, ok)}`` of the
            partitioned run against the single-device run.
        references: the same for the single-device run against stored
            reference outputs, when given.
        partitioned_references: the same for the partitioned run against
            them (``autopar verify``'s ``partitioned_reference`` lines).
        max_abs_err, max_rel_err: over all outputs.
        plan: the :class:`Plan` of the partitioned program.
    """

    def __init__(self, outputs, references, plan,
                 partitioned_references=None):
        self.outputs = outputs
        self.references = references
        self.partitioned_references = partitioned_references or {}
        self.plan = plan
        self.ok = all(v[2] for v in outputs.values()) and all(
            v[2] for v in references.values()) and all(
                v[2] for v in self.partitioned_references.values())
        self.max_abs_err = max((v[0] for v in outputs.values()), default=0.0)
        self.max_rel_err = max((v[1] for v in outputs.values()), default=0.0)

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return (f"<autopar.VerifyResult ok={self.ok} max_abs_err="
                f"{self.max_abs_err:.3e} max_rel_err={self.max_rel_err:.3e}>")


def verify(model, grid, plan="replicated", inputs=None, references=None,
           seed=0, rtol=None, atol=None, cluster=None, timeout=300,
           fixed=None):
    """Compares the partitioned program with the single-device one
    (``autopar verify``): both are compiled and run on the same inputs.

    Args:
        model: a :class:`Model` or a model path.
        grid, plan, cluster, fixed: as for :func:`compile` (``fixed``
            with ``pp`` > 1: a pipeline, one program per stage).
        inputs: ``{name: numpy array}``; default: the seeded random inputs.
        references: ``{output name: numpy array}`` both programs' outputs
            are checked against too (e.g. PyTorch's).
        seed: the seed of the random inputs.
        rtol, atol: tolerances, ``|a - b| <= atol + rtol * |b|``; default
            per dtype (f32: 1e-4 and 1e-5).
        timeout: seconds before each job is stopped.

    Returns:
        a :class:`VerifyResult` (true when everything matches).

    Raises:
        AutoparError: compiling or running failed.
    """
    if not isinstance(model, Model):
        model = load(model)
    single = compile(model, 1, plan="replicated")
    partitioned = compile(model, grid, plan=plan, cluster=cluster,
                          fixed=fixed)
    if inputs is None:
        inputs = partitioned.random_inputs(seed)
    expected = single.run(inputs, timeout=timeout)
    actual = partitioned.run(inputs, timeout=timeout)
    outputs = {}
    for sig in partitioned.manifest["outputs"]:
        name = sig["name"]
        outputs[name] = _autopar.compare(f"output '{name}'", actual[name],
                                         expected[name], sig["dtype"], rtol,
                                         atol)
    checked, partitioned_checked = {}, {}
    for name, reference in (references or {}).items():
        sig = next((s for s in single.manifest["outputs"]
                    if s["name"] == name), None)
        if sig is None:
            raise KeyError(f"the model has no output '{name}'")
        checked[name] = _autopar.compare(f"reference output '{name}'",
                                         expected[name], reference,
                                         sig["dtype"], rtol, atol)
        partitioned_checked[name] = _autopar.compare(
            f"reference output '{name}' of the partitioned program",
            actual[name], reference, sig["dtype"], rtol, atol)
    return VerifyResult(outputs, checked, partitioned.plan,
                        partitioned_checked)
