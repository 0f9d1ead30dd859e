//===- DialectFuzzer.cpp - the mlafp8 parser, verifier and passes ---------===//
//
// Input: MLIR text, parsed with the dialects mla-fp8-opt registers and
// verified. A module that verifies must print and parse back, in the custom
// and in the generic form (a printer/parser mismatch aborts, so that the
// fuzzer reports it), and then goes through the dialect's own rewrites,
// mlafp8-fuse-prequant and mlafp8-select-tiles, which may fail but not crash.
// Seeds: test/Dialect/MLAFP8/*.mlir.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"
#include "mla-fp8/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

static const DialectRegistry &getRegistry() {
  static const DialectRegistry registry = [] {
    DialectRegistry r;
    mlafp8::registerMLAFP8PipelineDependencies(r);
    return r;
  }();
  return registry;
}

/// Prints `module` and parses the text back; aborts when it does not parse.
static void checkRoundTrip(ModuleOp module, bool generic,
                           const std::string &errors) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module.print(os, flags);
  size_t before = errors.size();
  OwningOpRef<ModuleOp> again =
      parseSourceString<ModuleOp>(printed, module.getContext());
  if (again)
    return;
  llvm::errs() << "dialect harness: the " << (generic ? "generic" : "custom")
               << " form of a verified module does not parse back: "
               << llvm::StringRef(errors).drop_front(before) << "\n"
               << printed << "\n";
  std::abort();
}

namespace mlir::mlafp8::fuzz {

const char *getHarnessName() { return "dialect"; }

Outcome runInput(llvm::ArrayRef<uint8_t> data) {
  MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
  std::string errors;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      errors += (errors.empty() ? "" : "; ") + diag.str();
    return success();
  });
  // A std::string, so that the lexer finds the terminating NUL it expects.
  std::string text(llvm::toStringRef(data));
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module)
    return Outcome::reject("parse: " + errors);

  checkRoundTrip(*module, /*generic=*/false, errors);
  checkRoundTrip(*module, /*generic=*/true, errors);

  PassManager pm(&context);
  pm.addPass(createMLAFP8FusePrequantPass());
  pm.addPass(createMLAFP8SelectTilesPass());
  if (failed(pm.run(*module)))
    return Outcome::reject("passes: " + errors);
  return Outcome::accept();
}

} // namespace mlir::mlafp8::fuzz
