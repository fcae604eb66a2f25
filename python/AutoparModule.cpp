//===- AutoparModule.cpp - the autopar._autopar extension ---------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The C++ half of the `autopar` Python package: binds the driver library's
// entry points (import, planModel, compileModel, runCompiledProgram, the
// random inputs and the comparison of `verify`, the plan's HTML page).
// Everything a person calls is in autopar/__init__.py, which wraps these
// functions in classes with docstrings. Errors the driver emits become
// autopar.AutoparError with the messages the command line prints.
//
//===----------------------------------------------------------------------===//

#include "autopar/Driver/Driver.h"
#include "autopar/Transforms/Planning/PlanReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <set>

namespace py = pybind11;
using namespace mlir;
using namespace mlir::autopar;

namespace {

/// The error type of the package (autopar.AutoparError), created when the
/// module is initialized and never released.
py::object *gErrorType = nullptr;
py::object &errorType() { return *gErrorType; }

/// One MLIRContext for the process, with the driver's dialects and a
/// handler that collects error messages (with their notes) instead of
/// printing them. The driver is single-threaded: calls hold `mutex`.
class Session {
public:
  static Session &get() {
    // Never destroyed: the interpreter may tear modules down in any order.
    static Session *session = new Session();
    return *session;
  }
  MLIRContext &context() { return *ctx; }
  std::mutex mutex;

  /// Clears the collected errors before a call.
  void reset() { messages.clear(); }
  /// The collected errors as one text, or `fallback` when none was emitted.
  std::string takeMessages(StringRef fallback) {
    std::string text = messages.empty() ? fallback.str() : messages;
    messages.clear();
    return text;
  }

private:
  Session() {
    DialectRegistry registry;
    registerDriverDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->disableMultithreading();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        ctx.get(), [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error) {
            if (!messages.empty())
              messages += "\n";
            messages += diag.str();
            for (Diagnostic &note : diag.getNotes())
              messages += "\n  note: " + note.str();
          } else if (diag.getSeverity() == DiagnosticSeverity::Warning) {
            llvm::errs() << "autopar: warning: " << diag.str() << "\n";
          }
          return success();
        });
  }
  std::unique_ptr<MLIRContext> ctx;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string messages;
};

/// Raises autopar.AutoparError with what the driver emitted.
[[noreturn]] void raiseError(Session &session, StringRef fallback) {
  std::string text = session.takeMessages(fallback);
  PyErr_SetString(errorType().ptr(), text.c_str());
  throw py::error_already_set();
}

/// An imported model: the module and weights the driver compiles, and the
/// shapes it was imported with.
struct Model {
  std::string path;
  InputShapes inputShapes;
  ImportedModel imported;
};

/// A compiled program directory and its manifest.
struct Program {
  std::string outDir;
  Manifest manifest;
};

InputShapes
toInputShapes(const std::map<std::string, std::vector<int64_t>> &shapes,
              std::optional<int64_t> batch) {
  InputShapes result;
  for (const auto &[name, shape] : shapes)
    result[name] = SmallVector<int64_t>(shape.begin(), shape.end());
  result.batch = batch;
  return result;
}

std::shared_ptr<Model>
loadModel(const std::string &path,
          const std::map<std::string, std::vector<int64_t>> &shapes,
          std::optional<int64_t> batch) {
  Session &session = Session::get();
  auto model = std::make_shared<Model>();
  model->path = path;
  model->inputShapes = toInputShapes(shapes, batch);
  if (batch && *batch <= 0)
    throw py::value_error("batch must be a positive integer, got " +
                          std::to_string(*batch));
  // The checks and messages of the command's import.
  if (!llvm::sys::fs::exists(path)) {
    PyErr_SetString(errorType().ptr(),
                    ("model file '" + path + "' does not exist").c_str());
    throw py::error_already_set();
  }
  if (llvm::sys::fs::is_directory(path)) {
    PyErr_SetString(
        errorType().ptr(),
        ("model path '" + path + "' is a directory, expected an .onnx file")
            .c_str());
    throw py::error_already_set();
  }
  FailureOr<ImportedModel> imported = failure();
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session.mutex);
    session.reset();
    ImportOptions options;
    // Shapes suffice for planning; compiling reads the weights and fails
    // with an error naming a weight without data.
    options.requireWeightData = false;
    options.inputShapes = model->inputShapes;
    imported = importOnnxFile(path, session.context(), options);
  }
  if (failed(imported) || !imported->module ||
      failed(splitFusedProjections(session.context(), *imported)))
    raiseError(session, "importing '" + path + "' failed");
  model->imported = std::move(*imported);
  return model;
}

py::dict signatureDict(const TensorSignature &sig) {
  py::dict d;
  d["name"] = sig.name;
  d["dtype"] = getDTypeName(sig.dtype).str();
  d["shape"] = py::tuple(
      py::cast(std::vector<int64_t>(sig.shape.begin(), sig.shape.end())));
  return d;
}

/// The signature of an imported model's runtime inputs or outputs, read
/// from @main's types.
py::list modelSignature(Model &model, bool inputs) {
  py::list list;
  auto main = model.imported.module->lookupSymbol<func::FuncOp>("main");
  if (!main)
    return list;
  TypeRange types = inputs ? TypeRange(main.getArgumentTypes())
                           : TypeRange(main.getResultTypes());
  const std::vector<std::string> &names =
      inputs ? model.imported.inputNames : model.imported.outputNames;
  for (auto [index, type] : llvm::enumerate(types)) {
    TensorSignature sig;
    sig.name = index < names.size() ? names[index] : "";
    if (auto ranked = dyn_cast<RankedTensorType>(type)) {
      sig.shape.assign(ranked.getShape().begin(), ranked.getShape().end());
      if (FailureOr<DType> dtype =
              getDTypeFromElementType(ranked.getElementType());
          succeeded(dtype))
        sig.dtype = *dtype;
    }
    list.append(signatureDict(sig));
  }
  return list;
}

std::string planToJsonText(const llvm::json::Value &plan) {
  return llvm::formatv("{0:2}", plan).str() + "\n";
}

std::string planModelBinding(const Model &model, const PlanRequest &base) {
  Session &session = Session::get();
  PlanRequest request = base;
  request.modelPath = model.path;
  request.inputShapes = model.inputShapes;
  FailureOr<llvm::json::Value> plan = failure();
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session.mutex);
    session.reset();
    plan = planModel(session.context(), request);
  }
  if (failed(plan))
    raiseError(session, "planning failed");
  return planToJsonText(*plan);
}

llvm::json::Value parsePlanText(const std::string &planText) {
  llvm::Expected<llvm::json::Value> plan = llvm::json::parse(planText);
  if (!plan) {
    std::string message = llvm::toString(plan.takeError());
    PyErr_SetString(errorType().ptr(),
                    ("the plan is not JSON: " + message).c_str());
    throw py::error_already_set();
  }
  return std::move(*plan);
}

std::shared_ptr<Program> compileBinding(Model &model,
                                        const CompileOptions &base) {
  Session &session = Session::get();
  CompileOptions options = base;
  options.inputShapes = model.inputShapes;
  // A pipeline with microbatches imports the model again at the batch of a
  // microbatch.
  options.modelPath = model.path;
  FailureOr<Manifest> manifest = failure();
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session.mutex);
    session.reset();
    manifest = compileModel(session.context(), model.imported, options);
  }
  if (failed(manifest))
    raiseError(session, "compiling failed");
  auto program = std::make_shared<Program>();
  program->outDir = options.outDir;
  program->manifest = std::move(*manifest);
  return program;
}

/// The numpy dtype of `dtype`.
py::dtype numpyDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return py::dtype::of<float>();
  case DType::F64:
    return py::dtype::of<double>();
  case DType::I64:
    return py::dtype::of<int64_t>();
  case DType::I32:
    return py::dtype::of<int32_t>();
  case DType::I8:
    return py::dtype::of<int8_t>();
  case DType::U8:
    return py::dtype::of<uint8_t>();
  case DType::Bool:
    return py::dtype::of<bool>();
  }
  return py::dtype::of<float>();
}

py::array toNumpy(const HostTensor &tensor) {
  std::vector<py::ssize_t> shape(tensor.shape.begin(), tensor.shape.end());
  py::array array(numpyDType(tensor.dtype), shape);
  if (!tensor.data.empty())
    std::memcpy(array.mutable_data(), tensor.data.data(), tensor.data.size());
  return array;
}

/// Converts `value` for runtime input `sig`: the dtype must be the one the
/// program takes (no silent narrowing), the shape the manifest's.
HostTensor fromNumpy(const TensorSignature &sig, const py::handle &value) {
  py::array array = py::array::ensure(value);
  if (!array)
    throw py::type_error("input '" + sig.name + "' is not an array");
  py::dtype expected = numpyDType(sig.dtype);
  if (!array.dtype().is(expected) && array.dtype().num() != expected.num())
    throw py::type_error(
        "input '" + sig.name + "' has dtype " +
        py::str(array.dtype()).cast<std::string>() + ", the program takes " +
        getDTypeName(sig.dtype).str() + " (numpy " +
        py::str(expected).cast<std::string>() + "): convert it with astype");
  array = py::array::ensure(array, py::array::c_style);
  HostTensor tensor;
  tensor.dtype = sig.dtype;
  for (py::ssize_t i = 0; i < array.ndim(); ++i)
    tensor.shape.push_back(array.shape(i));
  bool matches = tensor.shape.size() == sig.shape.size();
  for (size_t i = 0; matches && i < sig.shape.size(); ++i)
    matches = sig.shape[i] < 0 || sig.shape[i] == tensor.shape[i];
  if (!matches) {
    std::string want, got;
    for (auto [i, d] : llvm::enumerate(sig.shape))
      want += (i ? "x" : "") + (d < 0 ? std::string("?") : std::to_string(d));
    for (auto [i, d] : llvm::enumerate(tensor.shape))
      got += (i ? "x" : "") + std::to_string(d);
    throw py::value_error(
        "input '" + sig.name + "' has shape " + (got.empty() ? "scalar" : got) +
        ", the program takes " + (want.empty() ? "scalar" : want));
  }
  tensor.data.resize(tensor.getNumElements() * getDTypeSize(sig.dtype));
  if (!tensor.data.empty())
    std::memcpy(tensor.data.data(), array.data(), tensor.data.size());
  return tensor;
}

std::vector<HostTensor> inputsFromDict(const Program &program,
                                       const py::dict &inputs) {
  std::vector<HostTensor> tensors;
  std::set<std::string> known;
  for (const TensorSignature &sig : program.manifest.inputs) {
    known.insert(sig.name);
    py::str key(sig.name);
    if (!inputs.contains(key))
      throw py::key_error("missing input '" + sig.name + "'");
    tensors.push_back(fromNumpy(sig, inputs[key]));
  }
  for (auto item : inputs) {
    std::string name = py::str(item.first).cast<std::string>();
    if (!known.count(name))
      throw py::key_error("the program has no input '" + name + "'");
  }
  return tensors;
}

py::dict outputsToDict(const Program &program,
                       const std::vector<HostTensor> &outputs) {
  py::dict result;
  for (auto [index, tensor] : llvm::enumerate(outputs))
    result[py::str(program.manifest.outputs[index].name)] = toNumpy(tensor);
  return result;
}

py::dict runBinding(const Program &program, const py::dict &inputs,
                    unsigned timeout, unsigned threads) {
  Session &session = Session::get();
  std::vector<HostTensor> tensors = inputsFromDict(program, inputs);
  RunOptions options;
  options.timeoutSeconds = timeout;
  options.threads = threads;
  FailureOr<std::vector<HostTensor>> outputs = failure();
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(session.mutex);
    session.reset();
    outputs = runCompiledProgram(session.context(), program.outDir,
                                 program.manifest, tensors, options);
  }
  if (failed(outputs))
    raiseError(session, "running the program failed");
  return outputsToDict(program, *outputs);
}

py::dict randomInputs(const Program &program, Model &model, uint64_t seed) {
  Session &session = Session::get();
  std::lock_guard<std::mutex> lock(session.mutex);
  session.reset();
  FailureOr<std::vector<HostTensor>> tensors =
      generateRandomInputs(session.context(), program.manifest, seed,
                           getIntegerInputBounds(*model.imported.module));
  if (failed(tensors))
    raiseError(session, "generating inputs failed");
  py::dict result;
  for (auto [index, tensor] : llvm::enumerate(*tensors))
    result[py::str(program.manifest.inputs[index].name)] = toNumpy(tensor);
  return result;
}

/// compareTensors on two arrays of `dtype`: (max_abs_err, max_rel_err, ok).
py::tuple compare(const std::string &what, const py::handle &actual,
                  const py::handle &expected, const std::string &dtypeName,
                  std::optional<double> rtol, std::optional<double> atol) {
  std::optional<DType> dtype;
  for (DType d : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8,
                  DType::U8, DType::Bool})
    if (getDTypeName(d) == dtypeName)
      dtype = d;
  if (!dtype)
    throw py::value_error("unknown dtype '" + dtypeName + "'");
  TensorSignature sig;
  sig.name = what;
  sig.dtype = *dtype;
  py::array a = py::array::ensure(actual);
  if (!a)
    throw py::type_error(what + " is not an array");
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    sig.shape.push_back(a.shape(i));
  HostTensor lhs = fromNumpy(sig, actual);
  // The reference may differ in shape: compareTensors reports it.
  py::array b = py::array::ensure(expected);
  if (!b)
    throw py::type_error(what + " reference is not an array");
  TensorSignature refSig = sig;
  refSig.shape.clear();
  for (py::ssize_t i = 0; i < b.ndim(); ++i)
    refSig.shape.push_back(b.shape(i));
  HostTensor rhs = fromNumpy(refSig, expected);
  Tolerance tolerance = getDefaultTolerance(*dtype);
  if (rtol)
    tolerance.rtol = *rtol;
  if (atol)
    tolerance.atol = *atol;
  Session &session = Session::get();
  std::lock_guard<std::mutex> lock(session.mutex);
  session.reset();
  FailureOr<Comparison> result =
      compareTensors(session.context(), what, lhs, rhs, tolerance);
  if (failed(result))
    raiseError(session, "comparing " + what + " failed");
  return py::make_tuple(result->maxAbsErr, result->maxRelErr, result->ok);
}

py::dict manifestDict(const Program &program) {
  py::dict d;
  const Manifest &m = program.manifest;
  d["autopar_version"] = m.autoparVersion;
  d["plan"] = m.plan;
  d["grid"] = std::vector<int64_t>(m.grid.begin(), m.grid.end());
  d["num_devices"] = m.numDevices;
  py::list inputs, outputs;
  for (const TensorSignature &sig : m.inputs)
    inputs.append(signatureDict(sig));
  for (const TensorSignature &sig : m.outputs)
    outputs.append(signatureDict(sig));
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  return d;
}

} // namespace

PYBIND11_MODULE(_autopar, m) {
  m.doc() = "The C++ half of the autopar package (use `import autopar`).";
  gErrorType = new py::object(
      py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
          "autopar.AutoparError",
          "An error autopar reports: the message is the one the autopar "
          "command prints after 'autopar: error:'.",
          PyExc_RuntimeError, nullptr)));
  m.attr("AutoparError") = errorType();
  m.attr("__version__") = getAutoparVersion().str();

  py::class_<Model, std::shared_ptr<Model>>(m, "_Model")
      .def_readonly("path", &Model::path)
      .def_property_readonly(
          "sha256", [](const Model &model) { return model.imported.sha256; })
      .def_property_readonly(
          "inputs", [](Model &model) { return modelSignature(model, true); })
      .def_property_readonly(
          "outputs", [](Model &model) { return modelSignature(model, false); });

  py::class_<Program, std::shared_ptr<Program>>(m, "_Program")
      .def_readonly("out_dir", &Program::outDir)
      .def_property_readonly("manifest", &manifestDict);

  py::class_<PlanRequest>(m, "_PlanRequest")
      .def(py::init<>())
      .def_readwrite("grid", &PlanRequest::grid)
      .def_readwrite("plan", &PlanRequest::plan)
      .def_readwrite("cluster_path", &PlanRequest::clusterPath)
      .def_readwrite("mode", &PlanRequest::mode)
      .def_readwrite("precision", &PlanRequest::precision)
      .def_readwrite("loss", &PlanRequest::loss)
      .def_readwrite("microbatches", &PlanRequest::microbatches)
      .def_readwrite("recompute", &PlanRequest::recompute)
      .def_readwrite("fixed", &PlanRequest::fixed)
      .def_readwrite("stages", &PlanRequest::stages)
      .def_readwrite("schedule", &PlanRequest::schedule)
      .def_readwrite("distributed_optimizer",
                     &PlanRequest::distributedOptimizer)
      .def_readwrite("fold", &PlanRequest::fold)
      .def_readwrite("time_limit_s", &PlanRequest::timeLimitSeconds)
      .def_readwrite("quiet", &PlanRequest::quiet);

  py::class_<CompileOptions>(m, "_CompileOptions")
      .def(py::init<>())
      .def_readwrite("grid", &CompileOptions::grid)
      .def_readwrite("plan", &CompileOptions::plan)
      .def_readwrite("fixed", &CompileOptions::fixed)
      .def_readwrite("cluster_path", &CompileOptions::clusterPath)
      .def_readwrite("out_dir", &CompileOptions::outDir)
      .def_readwrite("quiet", &CompileOptions::quiet);

  m.def("load", &loadModel, py::arg("path"), py::arg("input_shapes"),
        py::arg("batch"), "Imports an ONNX model (see autopar.load).");
  m.def("plan", &planModelBinding, py::arg("model"), py::arg("request"),
        "Plans a model; returns plan.json's text (see autopar.plan).");
  m.def(
      "render_html",
      [](const std::string &text) {
        return renderPlanHtml(parsePlanText(text));
      },
      py::arg("plan_json"), "The plan's self-contained HTML page.");
  m.def(
      "render_text",
      [](const std::string &text) {
        return renderPlanText(parsePlanText(text));
      },
      py::arg("plan_json"), "The plan for people (plan.txt).");
  m.def("compile", &compileBinding, py::arg("model"), py::arg("options"),
        "Compiles a model into a directory (see autopar.compile).");
  m.def("run", &runBinding, py::arg("program"), py::arg("inputs"),
        py::arg("timeout"), py::arg("threads"),
        "Runs a compiled program on its ranks (see autopar.Program.run).");
  m.def("random_inputs", &randomInputs, py::arg("program"), py::arg("model"),
        py::arg("seed"), "The seeded random inputs autopar verify uses.");
  m.def("compare", &compare, py::arg("what"), py::arg("actual"),
        py::arg("expected"), py::arg("dtype"), py::arg("rtol"), py::arg("atol"),
        "autopar verify's comparison: (max_abs_err, max_rel_err, ok).");
}
