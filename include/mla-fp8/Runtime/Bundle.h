//===- Bundle.h - load an AOT kernel bundle at run time ---------*- C++ -*-===//
//
// Reads what mla-fp8-aot writes (docs/manifest.md): manifest.json, checked
// against its digest in manifest.sha256, and one code object per chip, each
// checked against the SHA-256 the manifest lists. Every manifest field is
// range-checked and checked against the code object's own metadata. The
// library depends on LLVM's Support and Object only, not on MLIR, so that a
// serving process can link it cheaply.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_RUNTIME_BUNDLE_H
#define MLA_FP8_RUNTIME_BUNDLE_H

#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace mlir::mlafp8::runtime {

/// Loads the bundle in directory `dir`. Fails, with a message naming the file
/// and the field, when manifest.json is missing or malformed, its
/// `schema_version` is not kSupportedManifestSchemaVersion, manifest.sha256
/// is missing or does not match, a code object is missing or differs from
/// the manifest's size or SHA-256, or any field is out of range or
/// contradicts the code object's metadata (docs/manifest.md lists every
/// check).
llvm::Expected<LoadedBundle> loadBundle(llvm::StringRef dir);

/// Same, from manifest text already in memory; the digest file and the code
/// objects are read from `dir`. `manifestName` names the manifest in
/// messages.
llvm::Expected<LoadedBundle>
loadBundleFromManifest(llvm::StringRef dir, llvm::StringRef manifest,
                       llvm::StringRef manifestName);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_RUNTIME_BUNDLE_H
