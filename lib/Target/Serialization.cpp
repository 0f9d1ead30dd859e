//===- Serialization.cpp - In-process AMDGPU code-object emission ---------===//

#include "mla-fp8/Target/Serialization.h"

#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "lld/Common/Driver.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>

LLD_HAS_DRIVER(elf)

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

void mlir::mlafp8::initializeAMDGPUTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
    LLVMInitializeAMDGPUDisassembler();
  });
}

void mlir::mlafp8::registerGPUModuleTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

static llvm::CodeGenOptLevel getCodeGenOptLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::Expected<const llvm::Target *> mlir::mlafp8::getAMDGPUTarget() {
  initializeAMDGPUTarget();
  std::string message;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(llvm::Triple(kAMDGPUTriple), message);
  if (!target)
    return makeError("cannot find the AMDGPU target: " + message);
  return target;
}

static llvm::Error checkOptLevel(unsigned optLevel) {
  if (optLevel > 3)
    return makeError("optimization level " + Twine(optLevel) +
                     " is out of range (0 to 3)");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::mlafp8::createTargetMachine(const ChipInfo &chip, unsigned optLevel) {
  if (llvm::Error error = checkOptLevel(optLevel))
    return std::move(error);
  llvm::Expected<const llvm::Target *> target = getAMDGPUTarget();
  if (!target)
    return target.takeError();
  llvm::Triple triple(kAMDGPUTriple);
  std::unique_ptr<llvm::TargetMachine> machine((*target)->createTargetMachine(
      triple, chip.name, chip.llvmFeatures, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, getCodeGenOptLevel(optLevel)));
  if (!machine)
    return makeError("cannot create the AMDGPU target machine for " +
                     chip.name);
  return machine;
}

static llvm::Error checkCodeObjectVersion(unsigned version) {
  if (version != 5 && version != 6)
    return makeError("unsupported code object version " + Twine(version) +
                     " (supported: 5, 6)");
  return llvm::Error::success();
}

/// Sets the triple, the AMDGPU data layout and the code-object version. The
/// flag holds version * 100 with behavior Error, as clang and upstream MLIR
/// write it, so linking modules that disagree fails loudly.
static llvm::Error setTargetProperties(llvm::Module &module,
                                       const llvm::TargetMachine &machine,
                                       unsigned codeObjectVersion) {
  if (llvm::Error error = checkCodeObjectVersion(codeObjectVersion))
    return error;
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  module.setModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                       codeObjectVersion * 100);
  return llvm::Error::success();
}

FailureOr<std::unique_ptr<llvm::Module>>
mlir::mlafp8::translateGPUModuleToLLVMIR(gpu::GPUModuleOp module,
                                         llvm::LLVMContext &llvmContext,
                                         unsigned codeObjectVersion) {
  DialectRegistry registry;
  registerGPUModuleTranslations(registry);
  module->getContext()->appendDialectRegistry(registry);

  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, module.getName());
  if (!llvmModule)
    return module.emitError("failed to translate the gpu.module to LLVM IR");

  // The data layout is the same for every amdgcn processor; any chip will do.
  auto machine = createTargetMachine(getSupportedChips().front(), 0);
  if (!machine)
    return module.emitError(llvm::toString(machine.takeError()));
  if (llvm::Error error =
          setTargetProperties(*llvmModule, **machine, codeObjectVersion))
    return module.emitError(llvm::toString(std::move(error)));
  return llvmModule;
}

/// Checks that no function asks for another processor than `chip`, then sets
/// the target properties from `machine`.
static llvm::Error prepareModule(llvm::Module &module, const ChipInfo &chip,
                                 const llvm::TargetMachine &machine,
                                 unsigned codeObjectVersion) {
  // A function compiled for one processor cannot run on another; catch a
  // mismatch here rather than getting code for the wrong chip.
  for (const llvm::Function &function : module) {
    llvm::Attribute cpu = function.getFnAttribute("target-cpu");
    if (cpu.isValid() && cpu.getValueAsString() != chip.name)
      return makeError("function '" + function.getName() +
                       "' is for target-cpu '" + cpu.getValueAsString() +
                       "', not " + chip.name);
  }
  return setTargetProperties(module, machine, codeObjectVersion);
}

llvm::Error mlir::mlafp8::prepareModuleForChip(llvm::Module &module,
                                               const ChipInfo &chip,
                                               unsigned codeObjectVersion) {
  auto machine = createTargetMachine(chip, 0);
  if (!machine)
    return machine.takeError();
  return prepareModule(module, chip, **machine, codeObjectVersion);
}

/// Returns the code-object version `module` asks for, or the default.
static unsigned getCodeObjectVersion(const llvm::Module &module) {
  if (auto *flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
          module.getModuleFlag("amdhsa_code_object_version")))
    return flag->getZExtValue() / 100;
  return kDefaultCodeObjectVersion;
}

static llvm::Error runOptimizationPipeline(llvm::Module &module,
                                           llvm::TargetMachine &machine,
                                           unsigned optLevel) {
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager cgsccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  // Passing the TargetMachine gives the pipeline AMDGPU's TTI and lets the
  // target add its own passes (address-space inference, attributor, ...).
  llvm::PassBuilder passBuilder(&machine);
  passBuilder.registerModuleAnalyses(moduleAnalyses);
  passBuilder.registerCGSCCAnalyses(cgsccAnalyses);
  passBuilder.registerFunctionAnalyses(functionAnalyses);
  passBuilder.registerLoopAnalyses(loopAnalyses);
  passBuilder.crossRegisterProxies(loopAnalyses, functionAnalyses,
                                   cgsccAnalyses, moduleAnalyses);

  static const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
      llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::ModulePassManager passes =
      optLevel == 0
          ? passBuilder.buildO0DefaultPipeline(levels[0])
          : passBuilder.buildPerModuleDefaultPipeline(levels[optLevel]);
  passes.run(module, moduleAnalyses);
  return llvm::Error::success();
}

llvm::Error mlir::mlafp8::optimizeModule(llvm::Module &module,
                                         const ChipInfo &chip,
                                         unsigned optLevel) {
  auto machine = createTargetMachine(chip, optLevel);
  if (!machine)
    return machine.takeError();
  return runOptimizationPipeline(module, **machine, optLevel);
}

/// Prepares, optimizes and compiles a copy of `module`. The copy keeps the
/// caller's module reusable: codegen lowers the IR it runs on.
static llvm::Expected<std::string> compile(const llvm::Module &module,
                                           const ChipInfo &chip,
                                           unsigned optLevel,
                                           llvm::CodeGenFileType fileType) {
  auto machine = createTargetMachine(chip, optLevel);
  if (!machine)
    return machine.takeError();

  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(module);
  if (llvm::Error error =
          prepareModule(*copy, chip, **machine, getCodeObjectVersion(module)))
    return std::move(error);
  if (llvm::Error error = runOptimizationPipeline(*copy, **machine, optLevel))
    return std::move(error);

  std::string result;
  {
    llvm::raw_string_ostream os(result);
    llvm::buffer_ostream bufferedOS(os);
    llvm::legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, bufferedOS, nullptr, fileType))
      return makeError("the AMDGPU target cannot emit this file type");
    codegen.run(*copy);
  }
  return result;
}

llvm::Expected<std::string>
mlir::mlafp8::emitAssembly(const llvm::Module &module, const ChipInfo &chip,
                           unsigned optLevel) {
  return compile(module, chip, optLevel, llvm::CodeGenFileType::AssemblyFile);
}

llvm::Expected<std::string> mlir::mlafp8::emitObject(const llvm::Module &module,
                                                     const ChipInfo &chip,
                                                     unsigned optLevel) {
  return compile(module, chip, optLevel, llvm::CodeGenFileType::ObjectFile);
}

/// lld keeps global state and is not documented as thread-safe: one link at
/// a time per process. If a link crashes lld says it cannot run again, and
/// every later link reports that instead of touching the broken state.
static std::mutex lldMutex;
static bool lldUnusable = false;

llvm::Expected<std::string>
mlir::mlafp8::linkCodeObject(StringRef relocatableObject) {
  SmallString<128> inputPath, outputPath;
  int inputFD;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "mla-fp8", "o", inputFD, inputPath))
    return makeError("cannot create a temporary file: " + ec.message());
  auto removeInput =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove(inputPath); });
  {
    llvm::raw_fd_ostream os(inputFD, /*shouldClose=*/true);
    os << relocatableObject;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      // An uncleared error makes the stream's destructor abort the process
      // ("IO failure on output stream"); a full disk must be an Error.
      os.clear_error();
      return makeError("cannot write " + inputPath + ": " + ec.message());
    }
  }
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("mla-fp8", "hsaco", outputPath))
    return makeError("cannot create a temporary file: " + ec.message());
  auto removeOutput =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove(outputPath); });

  std::string lldOutput;
  llvm::raw_string_ostream lldOS(lldOutput);
  {
    std::lock_guard<std::mutex> lock(lldMutex);
    if (lldUnusable)
      return makeError("ld.lld (in-process) crashed earlier in this process "
                       "and cannot link again");
    const char *args[] = {"ld.lld", "-shared", inputPath.c_str(), "-o",
                          outputPath.c_str()};
    lld::Result result =
        lld::lldMain(args, lldOS, lldOS, {{lld::Gnu, &lld::elf::link}});
    if (!result.canRunAgain)
      lldUnusable = true;
    if (result.retCode != 0)
      return makeError("ld.lld (in-process) failed: " +
                       StringRef(lldOutput).trim());
  }

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> output =
      llvm::MemoryBuffer::getFile(outputPath, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!output)
    return makeError("cannot read the linked code object " + outputPath + ": " +
                     output.getError().message());
  return (*output)->getBuffer().str();
}

/// Rejects a gpu.module whose #rocdl.target names another chip.
static LogicalResult checkAttachedTargets(gpu::GPUModuleOp module,
                                          const ChipInfo &chip) {
  ArrayAttr targets = module.getTargetsAttr();
  if (!targets)
    return success();
  for (Attribute target : targets) {
    auto rocdlTarget = dyn_cast<ROCDL::ROCDLTargetAttr>(target);
    if (rocdlTarget && rocdlTarget.getChip() != chip.name)
      return module.emitError()
             << "gpu.module targets " << rocdlTarget.getChip()
             << " but is serialized for " << chip.name;
  }
  return success();
}

FailureOr<std::string>
mlir::mlafp8::serializeGPUModule(gpu::GPUModuleOp module, const ChipInfo &chip,
                                 const SerializationOptions &options) {
  if (failed(checkAttachedTargets(module, chip)))
    return failure();
  llvm::LLVMContext llvmContext;
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateGPUModuleToLLVMIR(module, llvmContext,
                                 options.codeObjectVersion);
  if (failed(llvmModule))
    return failure();

  auto reportError = [&](llvm::Error error) -> FailureOr<std::string> {
    return module.emitError(llvm::toString(std::move(error)));
  };
  if (options.format == SerializationFormat::Assembly) {
    auto assembly = emitAssembly(**llvmModule, chip, options.optLevel);
    if (!assembly)
      return reportError(assembly.takeError());
    return std::move(*assembly);
  }
  auto object = emitObject(**llvmModule, chip, options.optLevel);
  if (!object)
    return reportError(object.takeError());
  if (options.format == SerializationFormat::Object)
    return std::move(*object);
  auto codeObject = linkCodeObject(*object);
  if (!codeObject)
    return reportError(codeObject.takeError());
  return std::move(*codeObject);
}
