//===- mla-fp8-opt.cpp - the mla-fp8 lowering driver ----------------------===//
//
// mlir-opt with the mlafp8 dialect, its passes and pipelines, and the upstream
// dialects and passes that the kernel lowering uses.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "mla-fp8-opt") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::DialectRegistry registry;
  mlir::mlafp8::registerMLAFP8PipelineDependencies(registry);
  mlir::mlafp8::registerMLAFP8Passes();
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "mla-fp8 lowering driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes writes no output file.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));

  // The output is opened here rather than inside MlirOptMain so that a write
  // error (a full disk, /dev/full) is one error line and exit 1: a stream
  // destroyed with its error still set ends the process in "LLVM ERROR".
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &message);
  if (!input)
    return fail(message);
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &message);
  if (!output)
    return fail(message);
  llvm::raw_fd_ostream &os = output->os();
  bool ok = mlir::succeeded(
      mlir::MlirOptMain(os, std::move(input), registry, config));
  os.flush();
  if (os.has_error()) {
    std::string reason = os.error().message();
    os.clear_error();
    return fail("cannot write '" + outputFile + "': " + reason);
  }
  if (!ok)
    return 1;
  output->keep();
  return 0;
}
