//===- ImportTest.cpp - ONNX importer unit tests --------------------------===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// DType helpers, TensorProto files, the weight store (inline, typed and
// external data) and import diagnostics. The external-data models are built
// with ONNX's protobuf classes, since ONNX text syntax cannot express them.
//
//===----------------------------------------------------------------------===//

#include "autopar/Import/Import.h"
#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace mlir;
using namespace mlir::autopar;

namespace {

/// A temporary directory removed at the end of the test.
struct TempDir {
  SmallString<128> path;
  TempDir() {
    REQUIRE(!llvm::sys::fs::createUniqueDirectory("autopar-import", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(StringRef name) const {
    SmallString<128> result(path);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }
};

/// Collects the diagnostics emitted on a context.
struct DiagnosticCollector {
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler;
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          messages.push_back(diag.str());
          return success();
        }) {}
  bool contains(StringRef needle) const {
    return llvm::any_of(messages, [&](const std::string &message) {
      return StringRef(message).contains(needle);
    });
  }
};

void writeFile(const std::string &path, StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  REQUIRE(!ec);
  os << bytes;
}

std::string floatBytes(ArrayRef<float> values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

std::vector<float> toFloats(ArrayRef<char> bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

void setTensorType(onnx::ValueInfoProto &info, StringRef name,
                   ArrayRef<int64_t> shape) {
  info.set_name(name.str());
  auto *tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : shape)
    tensor->mutable_shape()->add_dim()->set_dim_value(dim);
}

/// A model computing `y = Gemm(x[2x3], w[3x4], b[4])` whose initializers are
/// stored in `weights.bin` (w at offset 0, b at offset 48).
onnx::ModelProto makeExternalDataModel(StringRef location = "weights.bin") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("external");
  setTensorType(*graph->add_input(), "x", {2, 3});
  setTensorType(*graph->add_output(), "y", {2, 4});
  onnx::NodeProto *node = graph->add_node();
  node->set_name("gemm");
  node->set_op_type("Gemm");
  node->add_input("x");
  node->add_input("w");
  node->add_input("b");
  node->add_output("y");
  auto addExternal = [&](StringRef name, ArrayRef<int64_t> dims, int64_t offset,
                         int64_t length) {
    onnx::TensorProto *tensor = graph->add_initializer();
    tensor->set_name(name.str());
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t dim : dims)
      tensor->add_dims(dim);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    auto addEntry = [&](StringRef key, StringRef value) {
      auto *entry = tensor->add_external_data();
      entry->set_key(key.str());
      entry->set_value(value.str());
    };
    addEntry("location", location);
    addEntry("offset", std::to_string(offset));
    addEntry("length", std::to_string(length));
  };
  addExternal("w", {3, 4}, 0, 48);
  addExternal("b", {4}, 48, 16);
  return model;
}

std::vector<float> iota(int count, float start) {
  std::vector<float> values;
  for (int i = 0; i < count; ++i)
    values.push_back(start + static_cast<float>(i));
  return values;
}

/// The root of the source tree (test/Unit/CMakeLists.txt defines it).
std::string sourceRoot() { return AUTOPAR_SOURCE_ROOT; }

} // namespace

//===----------------------------------------------------------------------===//
// DType helpers
//===----------------------------------------------------------------------===//

TEST_CASE("dtype sizes and names", "[import][dtype]") {
  CHECK(getDTypeSize(DType::F32) == 4);
  CHECK(getDTypeSize(DType::F64) == 8);
  CHECK(getDTypeSize(DType::I64) == 8);
  CHECK(getDTypeSize(DType::I32) == 4);
  CHECK(getDTypeSize(DType::I8) == 1);
  CHECK(getDTypeSize(DType::Bool) == 1);
  CHECK(getDTypeName(DType::F32) == "f32");
  CHECK(getDTypeName(DType::I64) == "i64");
  CHECK(getDTypeName(DType::Bool) == "bool");
}

TEST_CASE("dtype element types round trip", "[import][dtype]") {
  MLIRContext ctx;
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8,
                      DType::Bool}) {
    Type type = getDTypeElementType(&ctx, dtype);
    FailureOr<DType> back = getDTypeFromElementType(type);
    REQUIRE(succeeded(back));
    CHECK(*back == dtype);
  }
  CHECK(getDTypeElementType(&ctx, DType::Bool).isInteger(1));
  CHECK(failed(getDTypeFromElementType(Float16Type::get(&ctx))));
  CHECK(failed(getDTypeFromElementType(IntegerType::get(&ctx, 16))));
  CHECK(failed(getDTypeFromElementType(
      IntegerType::get(&ctx, 32, IntegerType::Unsigned))));
}

TEST_CASE("host tensor element count", "[import][dtype]") {
  HostTensor tensor;
  CHECK(tensor.getNumElements() == 1);
  tensor.shape = {2, 3, 4};
  CHECK(tensor.getNumElements() == 24);
  tensor.shape = {5, 0};
  CHECK(tensor.getNumElements() == 0);
}

TEST_CASE("sha256 is lowercase hex", "[import]") {
  CHECK(computeSha256("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

//===----------------------------------------------------------------------===//
// TensorProto files
//===----------------------------------------------------------------------===//

TEST_CASE("tensor files round trip", "[import][tensorproto]") {
  TempDir dir;
  std::string error;

  HostTensor f32;
  f32.dtype = DType::F32;
  f32.shape = {2, 3};
  std::string bytes = floatBytes(iota(6, -1.5f));
  f32.data.assign(bytes.begin(), bytes.end());

  HostTensor i64;
  i64.dtype = DType::I64;
  i64.shape = {3};
  std::vector<int64_t> ints = {-1, 0, 1LL << 40};
  i64.data.assign(reinterpret_cast<const char *>(ints.data()),
                  reinterpret_cast<const char *>(ints.data() + ints.size()));

  HostTensor flags;
  flags.dtype = DType::Bool;
  flags.shape = {2, 2};
  flags.data = {1, 0, 0, 1};

  HostTensor scalar;
  scalar.dtype = DType::F64;
  double pi = 3.25;
  scalar.data.assign(reinterpret_cast<const char *>(&pi),
                     reinterpret_cast<const char *>(&pi + 1));

  for (const HostTensor *tensor : {&f32, &i64, &flags, &scalar}) {
    std::string path = dir.file("tensor.pb");
    REQUIRE(succeeded(writeTensorProtoFile(path, *tensor, "t", error)));
    FailureOr<HostTensor> back = readTensorProtoFile(path, error);
    REQUIRE(succeeded(back));
    CHECK(back->dtype == tensor->dtype);
    CHECK(back->shape == tensor->shape);
    CHECK(back->data == tensor->data);
  }
}

TEST_CASE("tensor file errors are one line", "[import][tensorproto]") {
  TempDir dir;
  std::string error;
  CHECK(failed(readTensorProtoFile(dir.file("missing.pb"), error)));
  CHECK(StringRef(error).starts_with("cannot open"));

  writeFile(dir.file("empty.pb"), "");
  CHECK(failed(readTensorProtoFile(dir.file("empty.pb"), error)));
  CHECK(StringRef(error).contains("is empty"));

  writeFile(dir.file("bad.pb"), StringRef("\x0a\x7f\x01", 3));
  CHECK(failed(readTensorProtoFile(dir.file("bad.pb"), error)));
  CHECK(StringRef(error).contains("malformed or truncated"));
  CHECK(!StringRef(error).contains("\n"));

  HostTensor wrong;
  wrong.shape = {4};
  wrong.data.resize(3);
  CHECK(failed(writeTensorProtoFile(dir.file("w.pb"), wrong, "w", error)));
  CHECK(StringRef(error).contains("expected 16"));
}

TEST_CASE("typed TensorProto fields are decoded", "[import][tensorproto]") {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(onnx::TensorProto::INT8);
  proto.add_dims(3);
  proto.add_int32_data(-3);
  proto.add_int32_data(0);
  proto.add_int32_data(127);
  std::string error;
  FailureOr<HostTensor> tensor =
      parseTensorProto(proto.SerializeAsString(), "t.pb", error);
  REQUIRE(succeeded(tensor));
  CHECK(tensor->dtype == DType::I8);
  CHECK(tensor->data == std::vector<char>{-3, 0, 127});

  proto.set_data_type(onnx::TensorProto::FLOAT16);
  CHECK(failed(parseTensorProto(proto.SerializeAsString(), "t.pb", error)));
  CHECK(StringRef(error).contains("unsupported element type FLOAT16"));
}

TEST_CASE("the example's test data reads back", "[import][tensorproto]") {
  std::string error;
  FailureOr<HostTensor> input = readTensorProtoFile(
      sourceRoot() + "/examples/mlp/test_data_set_0/input_0.pb", error);
  REQUIRE(succeeded(input));
  CHECK(input->dtype == DType::F32);
  CHECK(input->shape == SmallVector<int64_t>{8, 16});
  FailureOr<HostTensor> output = readTensorProtoFile(
      sourceRoot() + "/examples/mlp/test_data_set_0/output_0.pb", error);
  REQUIRE(succeeded(output));
  CHECK(output->shape == SmallVector<int64_t>{8, 8});
}

//===----------------------------------------------------------------------===//
// Weight store
//===----------------------------------------------------------------------===//

TEST_CASE("text initializers and large constants", "[import][weights]") {
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  std::string floats;
  for (int i = 0; i < 65; ++i)
    floats += (i ? ", " : "") + std::to_string(i) + ".0";
  std::string text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x, float[3,2] w = {1., 2., 3., 4., 5., 6.}) => (float[2,2] y,
                                                               float[65] c) {
  y = MatMul (x, w)
  c = Constant <value_floats = [)" +
                     floats +
                     R"(]> ()
})";
  FailureOr<ImportedModel> model = importOnnxBuffer(text, "model.onnxtxt", ctx);
  REQUIRE(succeeded(model));
  CHECK(model->inputNames == std::vector<std::string>{"x"});
  CHECK(model->outputNames == std::vector<std::string>{"y", "c"});
  CHECK(model->sha256 == computeSha256(text));

  ArrayRef<WeightStore::Weight> weights = model->weights->getWeights();
  REQUIRE(weights.size() == 2);
  CHECK(weights[0].name == "w");
  CHECK(weights[0].shape == SmallVector<int64_t>{3, 2});
  CHECK(weights[1].name == "c");
  REQUIRE(model->weights->lookup("c") != nullptr);
  CHECK(model->weights->lookup("x") == nullptr);

  std::string error;
  FailureOr<ArrayRef<char>> w = model->weights->getData("w", error);
  REQUIRE(succeeded(w));
  CHECK(toFloats(*w) == std::vector<float>{1, 2, 3, 4, 5, 6});
  FailureOr<ArrayRef<char>> c = model->weights->getData("c", error);
  REQUIRE(succeeded(c));
  CHECK(toFloats(*c) == iota(65, 0));
  CHECK(failed(model->weights->getData("nope", error)));
  CHECK(error == "no weight named 'nope'");

  // No weight data in the IR.
  std::string ir;
  llvm::raw_string_ostream os(ir);
  model->module->print(os);
  CHECK(!StringRef(ir).contains("dense"));
  CHECK(StringRef(ir).contains("autopar.weight \"w\""));
  CHECK(diags.messages.empty());
}

TEST_CASE("large computed values become weights", "[import][weights]") {
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  // Range folds at import; its 100 elements exceed an inline constant.
  FailureOr<ImportedModel> model =
      importOnnxBuffer(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[100] x) => (float[100] y) {
  start = Constant <value = float {0.0}> ()
  limit = Constant <value = float {50.0}> ()
  delta = Constant <value = float {0.5}> ()
  r = Range (start, limit, delta)
  y = Add (x, r)
})",
                       "model.onnxtxt", ctx);
  REQUIRE(succeeded(model));
  REQUIRE(model->weights->lookup("r") != nullptr);
  std::string error;
  FailureOr<ArrayRef<char>> r = model->weights->getData("r", error);
  REQUIRE(succeeded(r));
  std::vector<float> expected;
  for (int i = 0; i < 100; ++i)
    expected.push_back(0.5f * i);
  CHECK(toFloats(*r) == expected);
  std::string ir;
  llvm::raw_string_ostream os(ir);
  model->module->print(os);
  CHECK(StringRef(ir).contains("autopar.weight \"r\" : tensor<100xf32>"));
  CHECK(!StringRef(ir).contains("dense"));
  CHECK(diags.messages.empty());
}

TEST_CASE("raw_data weights of the bundled example", "[import][weights]") {
  MLIRContext ctx;
  std::string path = sourceRoot() + "/examples/mlp/model.onnx";
  FailureOr<ImportedModel> model = importOnnxFile(path, ctx);
  REQUIRE(succeeded(model));
  CHECK(model->weights->getWeights().size() == 6);
  std::string error;
  FailureOr<ArrayRef<char>> bias = model->weights->getData("0.bias", error);
  REQUIRE(succeeded(bias));
  CHECK(bias->size() == 32 * sizeof(float));
  CHECK(model->sha256.size() == 64);
  auto func = model->module->lookupSymbol<func::FuncOp>("main");
  REQUIRE(func);
  CHECK(func.getNumArguments() == 1);
  CHECK(getOnnxValueName(func.getArgument(0)) == "input");
}

TEST_CASE("external data is read relative to the model", "[import][weights]") {
  TempDir dir;
  std::vector<float> w = iota(12, 1), b = iota(4, 100);
  writeFile(dir.file("weights.bin"), floatBytes(w) + floatBytes(b));
  writeFile(dir.file("model.onnx"),
            makeExternalDataModel().SerializeAsString());

  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  FailureOr<ImportedModel> model = importOnnxFile(dir.file("model.onnx"), ctx);
  REQUIRE(succeeded(model));
  std::string error;
  FailureOr<ArrayRef<char>> wData = model->weights->getData("w", error);
  REQUIRE(succeeded(wData));
  CHECK(toFloats(*wData) == w);
  FailureOr<ArrayRef<char>> bData = model->weights->getData("b", error);
  REQUIRE(succeeded(bData));
  CHECK(toFloats(*bData) == b);
  CHECK(diags.messages.empty());
}

TEST_CASE("missing external data", "[import][weights]") {
  TempDir dir;
  writeFile(dir.file("model.onnx"),
            makeExternalDataModel().SerializeAsString());

  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  CHECK(failed(importOnnxFile(dir.file("model.onnx"), ctx)));
  CHECK(diags.contains("external data file"));
  CHECK(diags.contains("weights.bin"));

  // Planning-only imports go on without the data.
  diags.messages.clear();
  ImportOptions options;
  options.requireWeightData = false;
  FailureOr<ImportedModel> model =
      importOnnxFile(dir.file("model.onnx"), ctx, options);
  REQUIRE(succeeded(model));
  CHECK(diags.messages.empty());
  std::string error;
  CHECK(failed(model->weights->getData("w", error)));
  CHECK(StringRef(error).contains("weights.bin"));

  // A file too short for offset + length.
  writeFile(dir.file("weights.bin"), floatBytes(iota(13, 0)));
  diags.messages.clear();
  CHECK(failed(importOnnxFile(dir.file("model.onnx"), ctx)));
  CHECK(diags.contains("expected at least 64"));
}

TEST_CASE("external data must stay in the model directory",
          "[import][weights]") {
  TempDir dir;
  writeFile(dir.file("model.onnx"),
            makeExternalDataModel("../weights.bin").SerializeAsString());
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  ImportOptions options;
  options.requireWeightData = false;
  CHECK(failed(importOnnxFile(dir.file("model.onnx"), ctx, options)));
  CHECK(diags.contains("outside the model directory"));
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST_CASE("import errors are diagnostics", "[import]") {
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  CHECK(failed(importOnnxFile("/nonexistent/model.onnx", ctx)));
  CHECK(diags.contains("cannot open model file '/nonexistent/model.onnx'"));

  diags.messages.clear();
  CHECK(failed(importOnnxBuffer("", "empty.onnx", ctx)));
  CHECK(diags.contains("is empty"));

  diags.messages.clear();
  CHECK(failed(
      importOnnxBuffer(StringRef("\x08\x08\x3a\xff\x01", 5), "bad.onnx", ctx)));
  CHECK(diags.contains("malformed or truncated"));

  diags.messages.clear();
  CHECK(failed(importOnnxBuffer(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
  y = Unique (x)
})",
                                "m.onnxtxt", ctx)));
  CHECK(
      diags.contains("node '#0' (op Unique, opset 17): unsupported operator"));
  for (const std::string &message : diags.messages)
    CHECK(!StringRef(message).contains("\n"));
}

//===----------------------------------------------------------------------===//
// Input shapes
//===----------------------------------------------------------------------===//

TEST_CASE("input-shape entries parse and format", "[import][inputshape]") {
  InputShapes shapes;
  std::string error;
  REQUIRE(succeeded(parseInputShape("x=8x128", shapes, error)));
  REQUIRE(succeeded(parseInputShape("mask=8", shapes, error)));
  CHECK(shapes.at("x") == SmallVector<int64_t>{8, 128});
  CHECK(shapes.at("mask") == SmallVector<int64_t>{8});
  CHECK(formatInputShapes(shapes) == "mask=8,x=8x128");

  CHECK(failed(parseInputShape("x=8x128", shapes, error)));
  CHECK(error == "--input-shape gives input 'x' twice");
  CHECK(failed(parseInputShape("8x128", shapes, error)));
  CHECK(StringRef(error).contains("expected NAME=D0xD1x..."));
  CHECK(failed(parseInputShape("y=8x", shapes, error)));
  CHECK(StringRef(error).contains("'' is not an integer size"));
}

TEST_CASE("input shapes resolve symbolic dimensions", "[import][inputshape]") {
  const char *text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x) => (float[N, 4] y) {
  y = Relu (x)
})";
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  ImportOptions options;
  options.inputShapes["x"] = {8, 4};
  FailureOr<ImportedModel> model =
      importOnnxBuffer(text, "m.onnxtxt", ctx, options);
  REQUIRE(succeeded(model));
  auto func = model->module->lookupSymbol<func::FuncOp>("main");
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(func.getArgumentTypes()[0]).getShape();
  CHECK(SmallVector<int64_t>(shape) == SmallVector<int64_t>{8, 4});

  options.inputShapes["x"] = {8, 5};
  CHECK(failed(importOnnxBuffer(text, "m.onnxtxt", ctx, options)));
  CHECK(diags.contains("dimension 1 of input 'x' is 4 in the model, not 5"));
}

TEST_CASE("a batch sets dimension 0 of the other runtime inputs",
          "[import][inputshape]") {
  const char *text = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x, float[8, 2] m) => (float[N, 4] y, float[8, 2] n) {
  y = Relu (x)
  n = Neg (m)
})";
  MLIRContext ctx;
  DiagnosticCollector diags(ctx);
  auto argShapes = [](ImportedModel &model) {
    auto func = model.module->lookupSymbol<func::FuncOp>("main");
    std::vector<SmallVector<int64_t>> shapes;
    for (Type type : func.getArgumentTypes())
      shapes.emplace_back(cast<RankedTensorType>(type).getShape());
    return shapes;
  };
  ImportOptions options;
  options.inputShapes.batch = 3;
  FailureOr<ImportedModel> model =
      importOnnxBuffer(text, "m.onnxtxt", ctx, options);
  REQUIRE(succeeded(model));
  CHECK(argShapes(*model) == std::vector<SmallVector<int64_t>>{{3, 4}, {3, 2}});

  // A shape by name wins over the batch.
  options.inputShapes["m"] = {8, 2};
  model = importOnnxBuffer(text, "m.onnxtxt", ctx, options);
  REQUIRE(succeeded(model));
  CHECK(argShapes(*model) == std::vector<SmallVector<int64_t>>{{3, 4}, {8, 2}});
  CHECK(diags.messages.empty());

  options.inputShapes.batch = 0;
  CHECK(failed(importOnnxBuffer(text, "m.onnxtxt", ctx, options)));
  CHECK(diags.contains("--batch must be positive, got 0"));
}
