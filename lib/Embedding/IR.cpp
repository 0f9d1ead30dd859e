//===- IR.cpp - parse, print and run pipelines on IR text -----------------===//

#include "mla-fp8/Embedding/Compiler.h"

#include "mla-fp8/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

using namespace mlir;
using namespace mlir::mlafp8;

/// The dialects every context knows. Pass registration is global, so it
/// happens once per process.
static const DialectRegistry &getRegistry() {
  static DialectRegistry registry = [] {
    DialectRegistry r;
    registerMLAFP8PipelineDependencies(r);
    return r;
  }();
  static std::once_flag passesRegistered;
  std::call_once(passesRegistered, [] { registerMLAFP8Passes(); });
  return registry;
}

namespace {
/// A context with the project's dialects whose diagnostics, with their
/// source locations, go to a string.
struct TextSession {
  TextSession()
      : context(getRegistry(), MLIRContext::Threading::DISABLED),
        os(diagnostics), handler(sourceMgr, &context, os) {}

  /// Parses `ir` as a module named "<input>" in diagnostics.
  OwningOpRef<ModuleOp> parse(const std::string &ir) {
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(ir, "<input>"), llvm::SMLoc());
    ParserConfig config(&context);
    return parseSourceFile<ModuleOp>(sourceMgr, config);
  }

  embedding::TextResult print(ModuleOp module, bool generic) {
    embedding::TextResult result;
    result.ok = true;
    llvm::raw_string_ostream out(result.text);
    OpPrintingFlags flags;
    if (generic)
      flags.printGenericOpForm();
    module->print(out, flags);
    return result;
  }

  embedding::TextResult failure(llvm::StringRef fallback) {
    embedding::TextResult result;
    result.text = diagnostics.empty() ? fallback.str() : diagnostics;
    return result;
  }

  MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  llvm::raw_string_ostream os;
  SourceMgrDiagnosticHandler handler;
};
} // namespace

embedding::TextResult embedding::parseAndPrint(const std::string &ir,
                                               bool generic) {
  TextSession session;
  OwningOpRef<ModuleOp> module = session.parse(ir);
  if (!module)
    return session.failure("cannot parse the IR");
  return session.print(*module, generic);
}

embedding::TextResult embedding::runPipeline(const std::string &ir,
                                             const std::string &pipeline,
                                             bool generic) {
  TextSession session;
  std::string pipelineErrors;
  llvm::raw_string_ostream errors(pipelineErrors);
  FailureOr<OpPassManager> parsed = parsePassPipeline(pipeline, errors);
  if (failed(parsed)) {
    TextResult result;
    result.text = "invalid pass pipeline '" + pipeline + "': " + pipelineErrors;
    return result;
  }
  if (parsed->getOpAnchorName() != ModuleOp::getOperationName()) {
    TextResult result;
    result.text = "invalid pass pipeline '" + pipeline +
                  "': it must be anchored on builtin.module, e.g. "
                  "'builtin.module(mlafp8-fuse-prequant)'";
    return result;
  }
  OwningOpRef<ModuleOp> module = session.parse(ir);
  if (!module)
    return session.failure("cannot parse the IR");
  PassManager pm(&session.context, ModuleOp::getOperationName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  if (mlir::failed(pm.run(*module)))
    return session.failure("the pass pipeline failed");
  return session.print(*module, generic);
}
