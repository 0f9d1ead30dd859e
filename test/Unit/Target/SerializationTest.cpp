//===- SerializationTest.cpp - In-process code-object emission tests ------===//

#include "mla-fp8/Target/Serialization.h"
#include "mla-fp8/Target/CodeObject.h"

#include "../FullTmpfs.h"
#include "TestKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::mlafp8;
using namespace mlir::mlafp8::test;

namespace {

/// The same kind of kernel as a gpu.module in LLVM + ROCDL form, the shape
/// convert-gpu-to-rocdl leaves behind.
constexpr const char *kMfmaKernelMLIR = R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @mfma_kernel(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>)
        attributes {rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %zero = llvm.mlir.constant(0 : i32) : i32
      %pa = llvm.getelementptr %a[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i64
      %pb = llvm.getelementptr %b[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i64
      %va = llvm.load %pa : !llvm.ptr<1> -> i64
      %vb = llvm.load %pb : !llvm.ptr<1> -> i64
      %acc = llvm.mlir.zero : vector<4xf32>
      %r = rocdl.mfma.f32.16x16x32.fp8.fp8 %va, %vb, %acc, %zero, %zero, %zero
          : (i64, i64, vector<4xf32>, i32, i32, i32) -> vector<4xf32>
      %pc = llvm.getelementptr %c[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, vector<4xf32>
      llvm.store %r, %pc : vector<4xf32>, !llvm.ptr<1>
      llvm.return
    }
  }
}
)mlir";

std::unique_ptr<llvm::Module> parseIR(llvm::LLVMContext &context,
                                      const char *text) {
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(text, diagnostic, context);
  if (!module)
    ADD_FAILURE() << diagnostic.getMessage().str();
  return module;
}

/// Unwraps an Expected, failing the test with its message.
template <typename T> T take(llvm::Expected<T> value) {
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return T();
  }
  return std::move(*value);
}

struct ElfHeader {
  unsigned machine;
  unsigned flags;
  unsigned abiVersion;
  unsigned type;
};

ElfHeader readElfHeader(StringRef bytes) {
  auto file = llvm::object::ELF64LEFile::create(bytes);
  if (!file) {
    ADD_FAILURE() << llvm::toString(file.takeError());
    return {};
  }
  const auto &header = file->getHeader();
  return {header.e_machine, header.e_flags,
          header.e_ident[llvm::ELF::EI_ABIVERSION], header.e_type};
}

bool hasSymbol(StringRef bytes, StringRef name) {
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(bytes, "hsaco"));
  if (!object) {
    ADD_FAILURE() << llvm::toString(object.takeError());
    return false;
  }
  for (const llvm::object::SymbolRef &symbol : (*object)->symbols()) {
    auto symbolName = symbol.getName();
    if (symbolName && *symbolName == name)
      return true;
    if (!symbolName)
      llvm::consumeError(symbolName.takeError());
  }
  return false;
}

class SerializationTest : public ::testing::TestWithParam<const char *> {
protected:
  const ChipInfo &chip() const { return *lookupChip(GetParam()); }
};

} // namespace

TEST_P(SerializationTest, AssemblyHasTheMfma) {
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  ASSERT_TRUE(module);
  std::string assembly = take(emitAssembly(*module, chip()));
  EXPECT_NE(assembly.find("v_mfma_f32_16x16x32_fp8_fp8"), std::string::npos);
  EXPECT_NE(assembly.find(".amdgcn_target \"" + chip().getTargetID() + "\""),
            std::string::npos);
  EXPECT_NE(assembly.find(".amdhsa_code_object_version 5"), std::string::npos);
  // The caller's module is not touched: no triple was set on it.
  EXPECT_TRUE(module->getTargetTriple().empty());
}

TEST_P(SerializationTest, ObjectLinkAndMetadata) {
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  ASSERT_TRUE(module);
  std::string object = take(emitObject(*module, chip()));
  ASSERT_FALSE(object.empty());
  EXPECT_EQ(readElfHeader(object).type, unsigned(llvm::ELF::ET_REL));

  std::string hsaco = take(linkCodeObject(object));
  ASSERT_FALSE(hsaco.empty());
  ElfHeader header = readElfHeader(hsaco);
  EXPECT_EQ(header.machine, unsigned(llvm::ELF::EM_AMDGPU));
  EXPECT_EQ(header.type, unsigned(llvm::ELF::ET_DYN));
  EXPECT_EQ(header.flags & llvm::ELF::EF_AMDGPU_MACH, chip().elfMach);
  // The default, v5, loads on ROCm 6.0+ (v6 needs 6.3).
  EXPECT_EQ(header.abiVersion,
            unsigned(llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V5));
  EXPECT_TRUE(hasSymbol(hsaco, "mfma_kernel.kd"));
  EXPECT_TRUE(hasSymbol(hsaco, "mfma_kernel"));

  CodeObjectMetadata metadata = take(readCodeObjectMetadata(hsaco));
  EXPECT_EQ(metadata.targetID, chip().getTargetID());
  EXPECT_EQ(metadata.processor, chip().name);
  EXPECT_EQ(metadata.codeObjectVersion, 5u);
  EXPECT_EQ(metadata.elfFlags, header.flags);
  ASSERT_EQ(metadata.kernels.size(), 1u);
  const KernelMetadata *kernel = metadata.findKernel("mfma_kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->symbol, "mfma_kernel.kd");
  EXPECT_GT(kernel->vgprCount, 0u);
  EXPECT_EQ(kernel->vgprSpillCount, 0u);
  EXPECT_EQ(kernel->sgprSpillCount, 0u);
  EXPECT_EQ(kernel->privateSegmentFixedSize, 0u);
  EXPECT_EQ(kernel->groupSegmentFixedSize, 0u);
  EXPECT_EQ(kernel->wavefrontSize, 64u);
  EXPECT_GT(kernel->sgprCount, 0u);
  EXPECT_GT(kernel->maxFlatWorkgroupSize, 0u);
  EXPECT_FALSE(kernel->usesDynamicStack);
  EXPECT_EQ(kernel->kernargSegmentAlign, 8u);
  // Three pointers and an i32, then the hidden arguments from offset 32.
  ASSERT_GE(kernel->args.size(), 4u);
  const uint64_t offsets[] = {0, 8, 16, 24};
  const uint64_t sizes[] = {8, 8, 8, 4};
  const char *names[] = {"a", "b", "c", "n"};
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(kernel->args[i].offset, offsets[i]);
    EXPECT_EQ(kernel->args[i].size, sizes[i]);
    EXPECT_EQ(kernel->args[i].name.value_or(""), names[i]);
  }
  EXPECT_EQ(kernel->args[0].valueKind, "global_buffer");
  EXPECT_EQ(kernel->args[0].addressSpace.value_or(""), "global");
  EXPECT_EQ(kernel->args[3].valueKind, "by_value");
  if (kernel->args.size() > 4) {
    EXPECT_EQ(kernel->args[4].offset, 32u);
    EXPECT_EQ(kernel->args[4].valueKind, "hidden_block_count_x");
  }
  EXPECT_GE(kernel->kernargSegmentSize, 28u);

  KernelInstructionStats stats =
      take(countKernelInstructions(hsaco, "mfma_kernel"));
  EXPECT_EQ(stats.numMfma, 2u);
  EXPECT_GT(stats.numInstructions, stats.numMfma);
  EXPECT_EQ(stats.mnemonicCounts["v_mfma_f32_16x16x32_fp8_fp8"], 2u);
  EXPECT_EQ(stats.mnemonicCounts["s_endpgm"], 1u);
  EXPECT_GT(stats.codeBytes, 0u);

  // The relocatable object carries the same metadata and code.
  CodeObjectMetadata objectMetadata = take(readCodeObjectMetadata(object));
  ASSERT_EQ(objectMetadata.kernels.size(), 1u);
  EXPECT_EQ(objectMetadata.kernels[0].vgprCount, kernel->vgprCount);
  EXPECT_EQ(take(countKernelInstructions(object, "mfma_kernel")).numMfma, 2u);
}

TEST_P(SerializationTest, Deterministic) {
  auto build = [&]() {
    llvm::LLVMContext context;
    auto module = parseIR(context, kMfmaKernelIR);
    std::string object = take(emitObject(*module, chip()));
    return take(linkCodeObject(object));
  };
  std::string first = build();
  std::string second = build();
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(first == second) << "two builds differ";
}

TEST_P(SerializationTest, GPUModuleToCodeObject) {
  MLIRContext context;
  context
      .loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, ROCDL::ROCDLDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kMfmaKernelMLIR, &context);
  ASSERT_TRUE(module);
  auto gpuModule = *module->getOps<gpu::GPUModuleOp>().begin();

  llvm::LLVMContext llvmContext;
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateGPUModuleToLLVMIR(gpuModule, llvmContext);
  ASSERT_TRUE(succeeded(llvmModule));
  EXPECT_EQ((*llvmModule)->getTargetTriple().str(), "amdgcn-amd-amdhsa");
  EXPECT_FALSE((*llvmModule)->getDataLayoutStr().empty());
  auto *flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
      (*llvmModule)->getModuleFlag("amdhsa_code_object_version"));
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->getZExtValue(), 500u);

  SerializationOptions options;
  options.format = SerializationFormat::Assembly;
  FailureOr<std::string> assembly =
      serializeGPUModule(gpuModule, chip(), options);
  ASSERT_TRUE(succeeded(assembly));
  EXPECT_NE(assembly->find("v_mfma_f32_16x16x32_fp8_fp8"), std::string::npos);

  FailureOr<std::string> hsaco = serializeGPUModule(gpuModule, chip());
  ASSERT_TRUE(succeeded(hsaco));
  EXPECT_EQ(readElfHeader(*hsaco).flags & llvm::ELF::EF_AMDGPU_MACH,
            chip().elfMach);
  CodeObjectMetadata metadata = take(readCodeObjectMetadata(*hsaco));
  ASSERT_NE(metadata.findKernel("mfma_kernel"), nullptr);
  EXPECT_EQ(metadata.findKernel("mfma_kernel")->args.size(), 3u);
  EXPECT_EQ(take(countKernelInstructions(*hsaco, "mfma_kernel")).numMfma, 1u);

  FailureOr<std::string> again = serializeGPUModule(gpuModule, chip());
  ASSERT_TRUE(succeeded(again));
  EXPECT_TRUE(*hsaco == *again);
}

INSTANTIATE_TEST_SUITE_P(Chips, SerializationTest,
                         ::testing::Values("gfx942", "gfx950"));

TEST(SerializationErrorTest, CodeObjectVersion6) {
  MLIRContext context;
  context
      .loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, ROCDL::ROCDLDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kMfmaKernelMLIR, &context);
  ASSERT_TRUE(module);
  SerializationOptions options;
  options.codeObjectVersion = 6;
  FailureOr<std::string> hsaco =
      serializeGPUModule(*module->getOps<gpu::GPUModuleOp>().begin(),
                         *lookupChip("gfx942"), options);
  ASSERT_TRUE(succeeded(hsaco));
  EXPECT_EQ(readElfHeader(*hsaco).abiVersion,
            unsigned(llvm::ELF::ELFABIVERSION_AMDGPU_HSA_V6));
  EXPECT_EQ(take(readCodeObjectMetadata(*hsaco)).codeObjectVersion, 6u);
}

TEST(SerializationErrorTest, WrongChipTarget) {
  MLIRContext context;
  context
      .loadDialect<gpu::GPUDialect, LLVM::LLVMDialect, ROCDL::ROCDLDialect>();
  std::string text = kMfmaKernelMLIR;
  text.replace(text.find("gpu.module @kernels"), strlen("gpu.module @kernels"),
               "gpu.module @kernels [#rocdl.target<chip = \"gfx950\">]");
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    diagnostics += diagnostic.str();
    return success();
  });
  FailureOr<std::string> hsaco = serializeGPUModule(
      *module->getOps<gpu::GPUModuleOp>().begin(), *lookupChip("gfx942"));
  EXPECT_TRUE(failed(hsaco));
  EXPECT_EQ(diagnostics, "gpu.module targets gfx950 but is serialized for "
                         "gfx942");
}

TEST(SerializationErrorTest, FunctionForAnotherCpu) {
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  ASSERT_TRUE(module);
  module->getFunction("mfma_kernel")->addFnAttr("target-cpu", "gfx950");
  auto object = emitObject(*module, *lookupChip("gfx942"));
  ASSERT_FALSE(object);
  EXPECT_EQ(llvm::toString(object.takeError()),
            "function 'mfma_kernel' is for target-cpu 'gfx950', not gfx942");
}

TEST(SerializationErrorTest, BadOptions) {
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  ASSERT_TRUE(module);
  auto object = emitObject(*module, *lookupChip("gfx942"), /*optLevel=*/7);
  ASSERT_FALSE(object);
  EXPECT_NE(llvm::toString(object.takeError()).find("optimization level 7"),
            std::string::npos);
}

TEST(SerializationErrorTest, LinkGarbageReportsLldMessage) {
  // lld reads a file that is neither ELF nor archive as a linker script.
  auto script = linkCodeObject("this is not an ELF object");
  ASSERT_FALSE(script);
  std::string message = llvm::toString(script.takeError());
  EXPECT_NE(message.find("ld.lld (in-process) failed: ld.lld: error:"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("unknown directive"), std::string::npos) << message;

  // A truncated ELF header.
  std::string truncated("\x7f"
                        "ELF\x02\x01\x01\x40\x04",
                        9);
  truncated.resize(40, '\0');
  auto elf = linkCodeObject(truncated);
  ASSERT_FALSE(elf);
  message = llvm::toString(elf.takeError());
  EXPECT_NE(message.find("ld.lld: error:"), std::string::npos) << message;

  // lld is still usable after a failed link.
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  std::string object = take(emitObject(*module, *lookupChip("gfx942")));
  EXPECT_FALSE(take(linkCodeObject(object)).empty());
}

TEST(SerializationErrorTest, LinkLeavesNoTemporaryFiles) {
  // Point the temporary directory at a fresh one and check it stays empty.
  SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mla-fp8-tmp", dir));
  const char *oldTmp = getenv("TMPDIR");
  std::string savedTmp = oldTmp ? oldTmp : "";
  setenv("TMPDIR", dir.c_str(), 1);
  auto countFiles = [&] {
    unsigned count = 0;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      ++count;
    return count;
  };

  llvm::consumeError(linkCodeObject("garbage").takeError());
  EXPECT_EQ(countFiles(), 0u);
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  std::string object = take(emitObject(*module, *lookupChip("gfx950")));
  EXPECT_FALSE(take(linkCodeObject(object)).empty());
  EXPECT_EQ(countFiles(), 0u);

  if (oldTmp)
    setenv("TMPDIR", savedTmp.c_str(), 1);
  else
    unsetenv("TMPDIR");
  llvm::sys::fs::remove(dir);
}

TEST(SerializationErrorTest, ConcurrentLinksAgree) {
  // Compile on four threads at once; the links serialize on lld's lock.
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (std::string &result : results)
    threads.emplace_back([&result] {
      llvm::LLVMContext context;
      llvm::SMDiagnostic diagnostic;
      auto module =
          llvm::parseAssemblyString(kMfmaKernelIR, diagnostic, context);
      if (!module)
        return;
      auto object = emitObject(*module, *lookupChip("gfx950"));
      if (!object) {
        llvm::consumeError(object.takeError());
        return;
      }
      auto hsaco = linkCodeObject(*object);
      if (!hsaco) {
        llvm::consumeError(hsaco.takeError());
        return;
      }
      result = std::move(*hsaco);
    });
  for (std::thread &thread : threads)
    thread.join();
  ASSERT_FALSE(results[0].empty());
  for (const std::string &result : results)
    EXPECT_TRUE(result == results[0]);
}

namespace {
/// Points TMPDIR somewhere for the life of the object.
struct ScopedTmpDir {
  explicit ScopedTmpDir(const std::string &dir) {
    if (const char *old = getenv("TMPDIR"))
      saved = old;
    setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpDir() {
    if (saved)
      setenv("TMPDIR", saved->c_str(), 1);
    else
      unsetenv("TMPDIR");
  }
  std::optional<std::string> saved;
};
} // namespace

/// A full disk under the linker's temporary files is an error, not
/// "LLVM ERROR: IO failure on output stream", and lld links again after it.
/// Linking keeps its files in memory: a full $TMPDIR changes nothing (the
/// linker once wrote its output there through a shared mapping, and a full
/// file system killed the process with SIGBUS), and nothing is left there.
TEST(SerializationWriteErrors, FullTemporaryDirectoryIsNotUsed) {
  test::FullTmpfs full("64k");
  if (!full.mounted)
    GTEST_SKIP() << full.skipReason;
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  std::string object = take(emitObject(*module, *lookupChip("gfx942")));
  std::string inTmpfs, elsewhere;
  {
    ScopedTmpDir tmp(full.dir);
    inTmpfs = take(linkCodeObject(object));
  }
  elsewhere = take(linkCodeObject(object));
  EXPECT_FALSE(inTmpfs.empty());
  EXPECT_EQ(inTmpfs, elsewhere);
  std::error_code ec;
  unsigned entries = 0;
  for (llvm::sys::fs::directory_iterator it(full.dir, ec), end;
       it != end && !ec; it.increment(ec))
    ++entries;
  EXPECT_EQ(entries, 1u) << "only the filler file";
}

/// The same with a file-size limit, which needs no privileges: the process
/// (a child here, so that the limit stays there) gets an error back.
TEST(SerializationWriteErrors, FileSizeLimit) {
  llvm::LLVMContext context;
  auto module = parseIR(context, kMfmaKernelIR);
  std::string object = take(emitObject(*module, *lookupChip("gfx942")));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto linked = linkCodeObject(object);
    bool expected =
        !linked && llvm::toString(linked.takeError()).find("File too large") !=
                       std::string::npos;
    ::_exit(expected ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status))
      << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
