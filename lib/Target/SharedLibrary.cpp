//===- SharedLibrary.cpp - LLVM-dialect module to a shared object -*- C++
//-*-===//
//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// This file implements emitSharedLibrary: LLVM-dialect module -> LLVM IR ->
// optimized (-O2) host object file, in process -> shared object linked by the
// system C compiler (`cc`, or `$AUTOPAR_CC`).
//
//===----------------------------------------------------------------------===//

#include "autopar/Target/Target.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

#include <cstdlib>
#include <optional>

#define DEBUG_TYPE "autopar-codegen"

using namespace mlir;
using namespace mlir::autopar;

/// LLVM options of device-program code generation, set once per process:
/// loops of more than 4 iterations are not fully unrolled. The loop nests of
/// a device program have small constant trip counts, which full unrolling
/// turns into straight-line code that the SLP vectorizer then covers with
/// gathers (a 3x3 convolution over 16x16 planes ran 24x slower than with
/// the vectorized loop). `AUTOPAR_LLVM_OPTIONS` adds options (a research
/// knob, e.g. "-force-vector-width=8").
static void configureLLVMOptions() {
  static bool configured = [] {
    auto options = llvm::cl::getRegisteredOptions();
    auto it = options.find("unroll-full-max-count");
    if (it != options.end() && it->second->getNumOccurrences() == 0)
      (void)it->second->addOccurrence(0, "unroll-full-max-count", "4");
    if (const char *extra = std::getenv("AUTOPAR_LLVM_OPTIONS")) {
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(extra).split(parts, ' ', -1, /*KeepEmpty=*/false);
      std::vector<std::string> words = {"autopar"};
      for (llvm::StringRef part : parts)
        words.push_back(part.str());
      std::vector<const char *> argv;
      for (const std::string &word : words)
        argv.push_back(word.c_str());
      llvm::cl::ParseCommandLineOptions(argv.size(), argv.data());
    }
    return true;
  }();
  (void)configured;
}

/// Functions with more top-level loop nests than this get each nest outlined.
static constexpr unsigned kMaxTopLevelLoops = 16;

/// Whether an instruction of `region` produces or takes an AMX tile.
static bool usesAmxTiles(llvm::ArrayRef<llvm::BasicBlock *> region) {
  for (llvm::BasicBlock *block : region)
    for (llvm::Instruction &inst : *block) {
      if (inst.getType()->isX86_AMXTy())
        return true;
      for (llvm::Value *operand : inst.operands())
        if (operand->getType()->isX86_AMXTy())
          return true;
    }
  return false;
}

/// Whether `module` calls LLVM's AMX tile intrinsics.
static bool usesAmxTiles(const llvm::Module &module) {
  return llvm::any_of(module, [](const llvm::Function &function) {
    return function.isDeclaration() &&
           function.getName().starts_with("llvm.x86.tileloadd64");
  });
}

/// Whether the host CPU (whose features the target machine takes) has AMX
/// tiles for bf16.
static bool hostHasAmxTiles() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup("amx-tile") && features.lookup("amx-bf16");
}

/// Outlines every top-level loop nest of a function that has more than
/// kMaxTopLevelLoops of them into its own `noinline` function. A device
/// program is one function with a loop nest per op, one after the other; on
/// such a straight chain of hundreds of loops, the scalar-evolution queries
/// of -O2 (ScalarEvolution::isBasicBlockEntryGuardedByCond walks every
/// single-predecessor block back to the entry) take time quadratic in the
/// number of ops: a 374-op ShuffleNet spent most of its 50 s compile there.
/// Outlined, each nest is optimized on its own, as it would be anyway.
static void outlineLoopNests(llvm::Module &module) {
  llvm::SmallVector<llvm::Function *> functions;
  for (llvm::Function &function : module)
    if (!function.isDeclaration())
      functions.push_back(&function);
  for (llvm::Function *function : functions) {
    llvm::DominatorTree domTree(*function);
    llvm::LoopInfo loopInfo(domTree);
    if (loopInfo.getTopLevelLoops().size() <= kMaxTopLevelLoops)
      continue;
    // The regions first: extraction moves blocks and invalidates LoopInfo.
    llvm::SmallVector<llvm::SmallVector<llvm::BasicBlock *>> regions;
    for (llvm::Loop *loop : loopInfo.getTopLevelLoops())
      regions.emplace_back(loop->getBlocks().begin(), loop->getBlocks().end());
    // Built once (O(function size)): extraction does not invalidate it.
    llvm::CodeExtractorAnalysisCache cache(*function);
    unsigned outlined = 0;
    for (llvm::ArrayRef<llvm::BasicBlock *> region : regions) {
      // AMX tiles (x86_amx) cannot cross a call: a nest whose tiles live
      // across its boundary (accumulators loaded before the reduction loop,
      // stored after it) stays where it is.
      if (usesAmxTiles(region))
        continue;
      llvm::CodeExtractor extractor(region, &domTree, /*AggregateArgs=*/false,
                                    /*BFI=*/nullptr, /*BPI=*/nullptr,
                                    /*AC=*/nullptr, /*AllowVarArgs=*/false,
                                    /*AllowAlloca=*/false,
                                    /*AllocationBlock=*/nullptr, "nest");
      if (!extractor.isEligible())
        continue;
      if (llvm::Function *nest = extractor.extractCodeRegion(cache)) {
        nest->addFnAttr(llvm::Attribute::NoInline);
        ++outlined;
      }
    }
    LLVM_DEBUG(llvm::dbgs()
               << "outlined " << outlined << " of " << regions.size()
               << " loop nests of @" << function->getName() << "\n");
    (void)outlined;
  }
}

/// A TargetMachine for the host CPU (the device programs run where they are
/// compiled), position-independent for a shared object.
static std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(ModuleOp module) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    module.emitError() << "no LLVM target for host triple '" << triple.str()
                       << "': " << error;
    return nullptr;
  }
  llvm::SmallVector<std::string> features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), llvm::join(features, ","),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Default));
  if (!machine)
    module.emitError() << "cannot create a target machine for '" << triple.str()
                       << "'";
  return machine;
}

/// Writes the object code of `llvmModule` to `objPath`.
static LogicalResult emitObject(ModuleOp module, llvm::Module &llvmModule,
                                llvm::TargetMachine &machine,
                                StringRef objPath) {
  std::error_code ec;
  llvm::raw_fd_ostream os(objPath, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError()
           << "cannot open '" << objPath << "': " << ec.message();
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return module.emitError() << "the host target cannot emit object files";
  passes.run(llvmModule);
  os.flush();
  if (os.has_error())
    return module.emitError()
           << "cannot write '" << objPath << "': " << os.error().message();
  return success();
}

/// Links `objPath` into the shared object `soPath` with the C compiler.
static LogicalResult linkSharedObject(ModuleOp module, StringRef objPath,
                                      StringRef soPath) {
  std::string compiler;
  if (const char *fromEnv = std::getenv("AUTOPAR_CC"); fromEnv && *fromEnv) {
    compiler = fromEnv;
  } else {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("cc");
    if (!found)
      return module.emitError() << "no C compiler 'cc' on PATH to link '"
                                << soPath << "' (set AUTOPAR_CC)";
    compiler = *found;
  }
  // libm: math ops without an LLVM intrinsic and the intrinsics LLVM
  // expands to library calls (powf, f64 functions). libomp: the parallel
  // loops (OpenMP dialect), found at run time through the rpath; linked even
  // when no loop is parallel, so that the runner can always set the thread
  // count.
  llvm::StringRef libomp = AUTOPAR_LIBOMP_PATH;
  std::string rpath =
      ("-Wl,-rpath," + llvm::sys::path::parent_path(libomp)).str();
  llvm::SmallVector<llvm::StringRef> args = {
      compiler, "-shared", "-o", soPath, objPath, "-lm", "-Wl,--no-as-needed",
      libomp,   rpath};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(compiler, args, /*Env=*/std::nullopt,
                                     /*Redirects=*/{}, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &error);
  if (rc != 0)
    return module.emitError() << "linking '" << soPath << "' with '" << compiler
                              << "' failed (exit code " << rc << ")"
                              << (error.empty() ? "" : ": ") << error;
  return success();
}

LogicalResult mlir::autopar::emitSharedLibrary(ModuleOp module,
                                               StringRef soPath) {
  MLIRContext *ctx = module.getContext();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerOpenMPDialectTranslation(*ctx);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "autopar_program");
  if (!llvmModule)
    return module.emitError() << "cannot translate the module to LLVM IR";

  std::unique_ptr<llvm::TargetMachine> machine =
      createHostTargetMachine(module);
  if (!machine)
    return failure();
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple());
  // AMX tiles (isa=amx) on a CPU without them: LLVM cannot select the tile
  // instructions for the host and would abort. (Reported at the module's
  // location, not on it: the module itself is no help to the user.)
  if (usesAmxTiles(*llvmModule) && !hostHasAmxTiles())
    return mlir::emitError(module.getLoc())
           << "the program uses AMX tiles (isa=amx or AUTOPAR_CPU_ISA=amx) "
              "but this CPU has no amx-tile and amx-bf16; compile for its "
              "own ISA (isa=auto) or avx512bf16";

  configureLLVMOptions();
  outlineLoopNests(*llvmModule);
  auto optimize =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0, machine.get());
  if (llvm::Error error = optimize(llvmModule.get()))
    return module.emitError()
           << "LLVM optimization failed: " << llvm::toString(std::move(error));

  llvm::SmallString<128> objPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("autopar-program", "o", objPath))
    return module.emitError()
           << "cannot create a temporary object file: " << ec.message();
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(objPath); });
  if (failed(emitObject(module, *llvmModule, *machine, objPath)))
    return failure();
  return linkSharedObject(module, objPath, soPath);
}
