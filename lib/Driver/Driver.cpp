//===- Driver.cpp - autopar tool entry point and shared helpers -*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements the `autopar` entry point (subcommand dispatch), the
// per-subcommand command-line parsing, the diagnostic printer and the small
// helpers shared by the subcommands (grids, dtypes, files).
//
//===----------------------------------------------------------------------===//

#include "DriverInternal.h"

#include "autopar/Dialect/Autopar/IR/Autopar.h"

#include "mlir/IR/Location.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::autopar;
using namespace mlir::autopar::driver;

#ifndef AUTOPAR_VERSION_STRING
#error "AUTOPAR_VERSION_STRING must be defined by the build"
#endif

StringRef mlir::autopar::getAutoparVersion() { return AUTOPAR_VERSION_STRING; }

void mlir::autopar::registerDriverDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<AutoparDialect>();
}

//===----------------------------------------------------------------------===//
// Grids, dtypes, shapes
//===----------------------------------------------------------------------===//



std::optional<DType> driver::parseDTypeName(StringRef name) {
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8,
                      DType::U8, DType::Bool})
    if (getDTypeName(dtype) == name)
      return dtype;
  return std::nullopt;
}

std::string driver::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t size) {
        if (ShapedType::isDynamic(size))
          os << '?';
        else
          os << size;
      },
      "x");
  return text;
}

std::string driver::formatError(double value) {
  return llvm::formatv("{0:e3}", value).str();
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

void driver::printError(const Twine &message) {
  llvm::errs() << "autopar: error: " << message << "\n";
}

void driver::printNote(const Twine &message) {
  llvm::errs() << "autopar: note: " << message << "\n";
}

/// Describes `loc` for people: `file:line:col`, `'tensor'`, `node 'n'`; empty
/// for unknown locations.
static std::string describeLocation(Location loc) {
  if (isa<UnknownLoc>(loc))
    return "";
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" + Twine(fileLoc.getLine()) +
            ":" + Twine(fileLoc.getColumn()))
        .str();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    return ("'" + nameLoc.getName().getValue() + "'").str();
  if (auto fusedLoc = dyn_cast<FusedLoc>(loc)) {
    if (auto node = dyn_cast_or_null<StringAttr>(fusedLoc.getMetadata()))
      return ("node '" + node.getValue() + "'").str();
    for (Location inner : fusedLoc.getLocations()) {
      std::string text = describeLocation(inner);
      if (!text.empty())
        return text;
    }
    return "";
  }
  if (auto callLoc = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(callLoc.getCallee());
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

static StringRef getSeverityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  llvm_unreachable("unknown diagnostic severity");
}

DriverContext::DriverContext() {
  DialectRegistry registry;
  registerDriverDialects(registry);
  context = std::make_unique<MLIRContext>(registry);
  // The models are small and the machines shared: compile on one thread.
  context->disableMultithreading();
  handler = std::make_unique<ScopedDiagnosticHandler>(
      context.get(), [](Diagnostic &diag) {
        llvm::raw_ostream &os = llvm::errs();
        os << "autopar: " << getSeverityName(diag.getSeverity()) << ": "
           << diag.str() << "\n";
        // A file location without a line (an imported model's) says nothing
        // the message does not: no note for it.
        auto fileLoc = dyn_cast<FileLineColLoc>(diag.getLocation());
        std::string where = fileLoc && fileLoc.getLine() == 0
                                ? std::string()
                                : describeLocation(diag.getLocation());
        if (!where.empty())
          printNote("at " + where);
        for (Diagnostic &note : diag.getNotes()) {
          std::string noteWhere = describeLocation(note.getLocation());
          printNote(note.str() +
                    (noteWhere.empty() ? "" : " (at " + noteWhere + ")"));
        }
        return success();
      });
}

DriverContext::~DriverContext() = default;

ProgressLog::ProgressLog(bool enabled)
    : enabled(enabled), start(std::chrono::steady_clock::now()) {
  if (!enabled)
    return;
  std::optional<std::string> setting =
      llvm::sys::Process::GetEnv("AUTOPAR_PROGRESS");
  if (setting)
    this->enabled = *setting != "0";
  else
    this->enabled = llvm::errs().is_displayed();
}

void ProgressLog::step(const Twine &what) {
  if (!enabled)
    return;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::errs() << "autopar: " << what << " ("
               << llvm::formatv("{0:f1}", seconds) << " s)\n";
  llvm::errs().flush();
}

InFlightDiagnostic driver::emitDriverError(MLIRContext &ctx) {
  return mlir::emitError(UnknownLoc::get(&ctx));
}

//===----------------------------------------------------------------------===//
// Files and shared checks
//===----------------------------------------------------------------------===//

driver::TrainingFlags::TrainingFlags(llvm::cl::OptionCategory &category)
    : mode("mode",
           llvm::cl::desc("inference (default) or training: the program is "
                          "one training step (forward, backward, update)"),
           llvm::cl::value_desc("mode"), llvm::cl::init("inference"),
           llvm::cl::cat(category)),
      loss("loss",
           llvm::cl::desc("training loss: cross_entropy (int64 labels), mse "
                          "(float target) or output (the model's scalar "
                          "output)"),
           llvm::cl::value_desc("loss"), llvm::cl::cat(category)),
      optimizer("optimizer",
                llvm::cl::desc("training optimizer: sgd (default) or adam"),
                llvm::cl::value_desc("name"), llvm::cl::init("sgd"),
                llvm::cl::cat(category)),
      lr("lr", llvm::cl::desc("learning rate (default 0.01)"),
         llvm::cl::value_desc("x"), llvm::cl::init("0.01"),
         llvm::cl::cat(category)),
      weightDecay("weight-decay",
                  llvm::cl::desc("weight decay: sgd adds it to the gradient, "
                                 "adam becomes AdamW (default 0)"),
                  llvm::cl::value_desc("x"), llvm::cl::init("0"),
                  llvm::cl::cat(category)),
      freeze("freeze",
             llvm::cl::desc("float initializers not to train "
                            "(comma-separated)"),
             llvm::cl::value_desc("name,..."), llvm::cl::CommaSeparated,
             llvm::cl::ZeroOrMore, llvm::cl::cat(category)),
      distributedOptimizer(
          "distributed-optimizer",
          llvm::cl::desc("training: each weight's optimizer state and update "
                         "are split over the devices that hold replicas of "
                         "it (ZeRO-1); the gradient all-reduce becomes a "
                         "reduce-scatter and an all-gather of the weight"),
          llvm::cl::init(false), llvm::cl::cat(category)) {}

FailureOr<std::optional<TrainingStepOptions>>
driver::TrainingFlags::get() const {
  if (mode == "inference") {
    if (!loss.empty() || optimizer.getNumOccurrences() ||
        lr.getNumOccurrences() || weightDecay.getNumOccurrences() ||
        !freeze.empty() || distributedOptimizer) {
      printError("--loss, --optimizer, --lr, --weight-decay, --freeze and "
                 "--distributed-optimizer need --mode training");
      return failure();
    }
    return std::optional<TrainingStepOptions>();
  }
  if (mode != "training") {
    printError("unknown --mode '" + mode + "', expected inference or training");
    return failure();
  }
  TrainingStepOptions training;
  if (loss.empty()) {
    printError("--mode training needs --loss cross_entropy, mse or output");
    return failure();
  }
  training.loss = loss;
  training.optimizer = optimizer;
  FailureOr<double> rate = parseToleranceOption("lr", lr);
  FailureOr<double> decay = parseToleranceOption("weight-decay", weightDecay);
  if (failed(rate) || failed(decay))
    return failure();
  if (*rate <= 0) {
    printError("--lr must be positive, got '" + lr + "'");
    return failure();
  }
  training.learningRate = *rate;
  training.weightDecay = *decay;
  training.freeze.assign(freeze.begin(), freeze.end());
  training.distributedOptimizer = distributedOptimizer;
  return std::optional<TrainingStepOptions>(std::move(training));
}

FailureOr<InputShapes> driver::ModelPlanOptions::getInputShapes() const {
  InputShapes shapes;
  std::string error;
  for (const std::string &entry : inputShape) {
    if (failed(parseInputShape(entry, shapes, error))) {
      printError(error);
      return failure();
    }
  }
  if (batch.getNumOccurrences()) {
    int64_t size = 0;
    if (StringRef(batch).getAsInteger(10, size) || size <= 0) {
      printError("invalid --batch '" + batch +
                 "': expected a positive integer");
      return failure();
    }
    shapes.batch = size;
  }
  return shapes;
}

FailureOr<ImportedModel> driver::importModel(MLIRContext &ctx,
                                             StringRef modelPath,
                                             const InputShapes &inputShapes,
                                             bool requireWeightData,
                                             bool keepFloatInitializers,
                                             uint64_t seed, bool unmergeHeads) {
  if (!llvm::sys::fs::exists(modelPath)) {
    emitDriverError(ctx) << "model file '" << modelPath << "' does not exist";
    return failure();
  }
  if (llvm::sys::fs::is_directory(modelPath)) {
    emitDriverError(ctx) << "model path '" << modelPath
                         << "' is a directory, expected an .onnx file";
    return failure();
  }
  ImportOptions options;
  options.requireWeightData = requireWeightData;
  options.keepFloatInitializers = keepFloatInitializers;
  options.seed = seed;
  options.inputShapes = inputShapes;
  FailureOr<ImportedModel> model = importOnnxFile(modelPath, ctx, options);
  if (failed(model))
    return failure();
  if (!model->module) {
    emitDriverError(ctx) << "importing '" << modelPath
                         << "' produced no module";
    return failure();
  }
  if (failed(splitFusedProjections(ctx, *model, unmergeHeads)))
    return failure();
  return model;
}

bool driver::hasSeveralDevices(StringRef grid) {
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = parseGridShape(grid, error);
  if (failed(shape))
    return true;
  int64_t devices = 1;
  for (int64_t size : *shape)
    devices *= size;
  return devices > 1;
}

LogicalResult driver::checkPlanArgument(MLIRContext &ctx, StringRef plan) {
  if (plan == "replicated" || plan == "data" || plan == "tensor" ||
      plan == "auto")
    return success();
  if (plan.empty()) {
    emitDriverError(ctx) << "empty --plan: expected auto, replicated, data, "
                            "tensor or a plan file";
    return failure();
  }
  if (!llvm::sys::fs::exists(plan) || llvm::sys::fs::is_directory(plan)) {
    emitDriverError(ctx) << "plan file '" << plan
                         << "' does not exist (--plan takes auto, replicated, data, "
                            "tensor or a plan.json path)";
    return failure();
  }
  return success();
}

LogicalResult driver::writeFileBytes(MLIRContext &ctx, StringRef path,
                                     ArrayRef<char> bytes) {
  StringRef parent = llvm::sys::path::parent_path(path);
  if (!parent.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(parent)) {
      emitDriverError(ctx) << "cannot create directory '" << parent
                           << "': " << ec.message();
      return failure();
    }
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    emitDriverError(ctx) << "cannot write '" << path << "': " << ec.message();
    return failure();
  }
  os.write(bytes.data(), bytes.size());
  os.close();
  if (os.has_error()) {
    emitDriverError(ctx) << "cannot write '" << path
                         << "': " << os.error().message();
    os.clear_error();
    return failure();
  }
  return success();
}

FailureOr<std::string> driver::readPlanText(MLIRContext &ctx,
                                            StringRef outDir) {
  SmallString<256> path(outDir);
  llvm::sys::path::append(path, "plan.txt");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitDriverError(ctx) << "cannot read '" << path
                         << "': " << buffer.getError().message();
    return failure();
  }
  return (*buffer)->getBuffer().str();
}

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

FailureOr<uint64_t> driver::parseUnsignedOption(StringRef option,
                                                StringRef text) {
  uint64_t value = 0;
  if (text.empty() || text.getAsInteger(10, value)) {
    printError("invalid --" + option + " '" + text +
               "': expected a non-negative integer");
    return failure();
  }
  return value;
}

FailureOr<double> driver::parseToleranceOption(StringRef option,
                                               StringRef text) {
  double value = 0;
  if (text.empty() || text.getAsDouble(value) || !std::isfinite(value) ||
      value < 0) {
    printError("invalid --" + option + " '" + text +
               "': expected a non-negative number");
    return failure();
  }
  return value;
}

/// Options every subcommand accepts besides those of its category.
static bool isGenericOption(StringRef name) {
  return llvm::is_contained(
      {"help", "help-list", "help-hidden", "help-list-hidden", "version", "h"},
      name);
}

/// The first argument of `args` (after the program name) that looks like an
/// option but names none of `category`'s, or an empty string. Values of
/// options that take one (`--rtol -1`) and everything after `--` are skipped,
/// and so are negative numbers.
static std::string findUnknownOption(ArrayRef<const char *> args,
                                     llvm::cl::OptionCategory &category) {
  const auto &options = llvm::cl::getRegisteredOptions();
  for (size_t i = 1; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    double number;
    if (!arg.getAsDouble(number))
      continue;
    auto [name, value] = arg.ltrim('-').split('=');
    bool hasValue = arg.contains('=');
    if (isGenericOption(name))
      continue;
    llvm::cl::Option *option = options.lookup(name);
    if (!option || !llvm::is_contained(option->Categories, &category))
      return arg.split('=').first.str();
    if (!hasValue && option->getValueExpectedFlag() == llvm::cl::ValueRequired)
      ++i;
  }
  return "";
}

std::optional<int> driver::parseCommandLine(int argc, char **argv,
                                            StringRef command,
                                            StringRef overview,
                                            llvm::cl::OptionCategory &category,
                                            int errorExitCode) {
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "autopar " << getAutoparVersion() << "\n";
  });
  std::string programName = ("autopar " + command).str();
  SmallVector<const char *> args = {programName.c_str()};
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);

  // llvm::cl would misread an unknown option ("--mode training": "can
  // specify at most 1 positional arguments"); name it instead.
  std::string unknown = findUnknownOption(args, category);
  if (!unknown.empty()) {
    printError("unknown option '" + unknown + "' for 'autopar " + command +
               "' (see 'autopar " + command + " --help')");
    return errorExitCode;
  }

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (llvm::cl::ParseCommandLineOptions(args.size(), args.data(), overview,
                                        &errorStream))
    return std::nullopt;

  // llvm::cl reports `<program>: Message.  Try: '...'`; print it in
  // autopar's form: one lowercase error line, the rest as notes.
  SmallVector<StringRef> lines;
  StringRef(errors).split(lines, '\n', -1, /*KeepEmpty=*/false);
  bool first = true;
  for (StringRef line : lines) {
    line = line.trim();
    line.consume_front(programName);
    line = line.ltrim(": ").rtrim();
    if (line.empty())
      continue;
    StringRef hint;
    size_t tryPos = line.find("  Try: ");
    if (tryPos != StringRef::npos) {
      hint = line.drop_front(tryPos + 2);
      line = line.take_front(tryPos);
    }
    line = line.rtrim(".!");
    if (line.empty())
      continue;
    std::string message = line.str();
    message[0] = llvm::toLower(message[0]);
    if (first)
      printError(message);
    else
      printNote(message);
    first = false;
    if (!hint.empty())
      printNote(hint.lower());
  }
  if (first)
    printError("invalid command line for 'autopar " + command + "'");
  return errorExitCode;
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

static void printUsage(llvm::raw_ostream &os) {
  os << "OVERVIEW: autopar " << getAutoparVersion()
     << " - automatic parallelization of ONNX models over a device grid\n\n"
     << "USAGE: autopar <subcommand> [options]\n\n"
     << "SUBCOMMANDS:\n"
     << "  compile  MODEL.onnx --grid SHAPE [--plan P] [--cluster FILE] -o "
        "OUTDIR\n"
     << "           compile a model into per-device programs and weights\n"
     << "  plan     MODEL.onnx --grid SHAPE [--cluster FILE] [--mode M] "
        "[--batch N] -o plan.json\n"
     << "           find the fastest plan that fits in memory (no code "
        "generation)\n"
     << "  run      OUTDIR --inputs DIR --outputs DIR [--timeout S]\n"
     << "           run a compiled model with mpirun (one rank per device)\n"
     << "  train    OUTDIR --data DIR --steps N [--save MODEL_OUT.onnx]\n"
     << "           run training steps of a model compiled with --mode "
        "training\n"
     << "  verify   MODEL.onnx --grid SHAPE [--plan P] [--inputs DIR]\n"
     << "           compare the partitioned program with the single-device "
        "one\n"
     << "  import   MODEL.onnx [--emit imported|annotated|partitioned|llvm]\n"
     << "           print the IR after a compiler stage\n"
     << "  calibrate [-o cluster.json] [--grid N] [--quick]\n"
     << "           measure this machine and write its cluster description\n\n"
     << "Run 'autopar <subcommand> --help' for the options of a subcommand.\n";
}

int mlir::autopar::runMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  if (argc < 2) {
    printError("missing subcommand");
    printUsage(llvm::errs());
    return kErrorExitCode;
  }
  StringRef command = argv[1];
  if (command == "--help" || command == "-help" || command == "-h" ||
      command == "help") {
    printUsage(llvm::outs());
    return 0;
  }
  if (command == "--version" || command == "-version") {
    llvm::outs() << "autopar " << getAutoparVersion() << "\n";
    return 0;
  }
  int subArgc = argc - 1;
  char **subArgv = argv + 1;
  if (command == "compile")
    return compileCommand(subArgc, subArgv);
  if (command == "run")
    return runCommand(subArgc, subArgv);
  if (command == "verify")
    return verifyCommand(subArgc, subArgv);
  if (command == "train")
    return trainCommand(subArgc, subArgv);
  if (command == "import")
    return importCommand(subArgc, subArgv);
  if (command == "plan")
    return planCommand(subArgc, subArgv);
  if (command == "calibrate")
    return calibrateCommand(subArgc, subArgv);
  printError("unknown subcommand '" + command + "'");
  printNote("the subcommands are compile, plan, run, train, verify, import and "
            "calibrate; "
            "see 'autopar --help'");
  return kErrorExitCode;
}
