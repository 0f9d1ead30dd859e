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
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

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

namespace {
/// A file descriptor closed on scope exit.
struct FD {
  int fd = -1;
  FD() = default;
  explicit FD(int fd) : fd(fd) {}
  FD(const FD &) = delete;
  FD &operator=(const FD &) = delete;
  ~FD() { reset(); }
  void reset() {
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }
  std::string procPath() const { return "/proc/self/fd/" + std::to_string(fd); }
};
} // namespace

static std::string errnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

/// Links in memory: nothing of a link ever touches a file system, so a full
/// or read-only $TMPDIR cannot fail it and a killed process leaves nothing
/// behind. The relocatable object is an anonymous memory file (memfd) that
/// lld reads through /proc/self/fd. The output goes to a pipe: for a path
/// that is not a regular file lld builds the image in memory and writes it
/// with write(2) on commit, read here by a second thread. (Given a regular
/// file, lld writes through a shared mapping, and a full file system kills
/// the process with SIGBUS.)
llvm::Expected<std::string>
mlir::mlafp8::linkCodeObject(StringRef relocatableObject) {
  FD input(::memfd_create("mla-fp8-link-input", MFD_CLOEXEC));
  if (input.fd < 0)
    return makeError("cannot create the linker's in-memory input: " +
                     errnoText(errno));
  for (size_t done = 0; done < relocatableObject.size();) {
    ssize_t n = ::write(input.fd, relocatableObject.data() + done,
                        relocatableObject.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return makeError("cannot write the linker's in-memory input: " +
                       errnoText(n < 0 ? errno : EIO));
    done += size_t(n);
  }
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) < 0)
    return makeError("cannot create the linker's output pipe: " +
                     errnoText(errno));
  FD readEnd(ends[0]), writeEnd(ends[1]);

  // The reader drains the pipe while lld writes; it sees the end of the data
  // once lld has closed its descriptor and writeEnd is closed below.
  std::string image;
  int readError = 0;
  std::thread reader([&] {
    char chunk[1 << 16];
    for (;;) {
      ssize_t n = ::read(readEnd.fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        readError = errno;
      if (n <= 0)
        return;
      image.append(chunk, size_t(n));
    }
  });
  auto joinReader = llvm::make_scope_exit([&] {
    writeEnd.reset();
    reader.join();
  });

  std::string lldOutput;
  llvm::raw_string_ostream lldOS(lldOutput);
  {
    std::lock_guard<std::mutex> lock(lldMutex);
    if (lldUnusable)
      return makeError("ld.lld (in-process) crashed earlier in this process "
                       "and cannot link again");
    std::string inputPath = input.procPath(), outputPath = readEnd.procPath();
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
  joinReader.release();
  writeEnd.reset();
  reader.join();
  if (readError)
    return makeError("cannot read the linked code object: " +
                     errnoText(readError));
  if (image.empty())
    return makeError("ld.lld (in-process) wrote no code object");
  return image;
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
