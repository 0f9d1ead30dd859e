//===- File.h - bounded reads of regular files ------------------*- C++ -*-===//
//
// Every file the project reads from a bundle, a cache or a command line goes
// through readRegularFile: a FIFO would block forever, /dev/zero would never
// end and a directory has no contents, so only regular files of a bounded
// size are read. JSON from such files is parsed with a bounded nesting depth.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_CODEOBJECT_FILE_H
#define MLA_FP8_CODEOBJECT_FILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace mlir::mlafp8 {

/// The largest code object any reader accepts (a bundle's are about 1 MiB).
inline constexpr uint64_t kMaxCodeObjectBytes = uint64_t(256) << 20;
/// The largest manifest.json the loader, or publishing checking what it
/// replaces, reads (a bundle's are about 100 KiB).
inline constexpr uint64_t kMaxManifestBytes = uint64_t(16) << 20;

/// Reads the file at `path` (symbolic links followed) if it is a regular file
/// of at most `maxBytes` bytes. Anything else (a FIFO, a device, a directory,
/// a larger file, one that grows while it is read) is an error, "cannot read
/// '<path>': <why>"; nothing blocks and nothing larger than
/// `maxBytes` is allocated.
llvm::Expected<std::string> readRegularFile(llvm::StringRef path,
                                            uint64_t maxBytes);

/// Parses JSON whose arrays and objects nest at most `maxDepth` deep:
/// llvm::json::parse recurses once per level, so deeper input would overflow
/// the stack. Deeper input is the error "arrays and objects nest deeper than
/// <maxDepth> levels (at byte <offset>)"; anything else the parser's.
llvm::Expected<llvm::json::Value> parseJSONWithinDepth(llvm::StringRef text,
                                                       unsigned maxDepth);

} // namespace mlir::mlafp8

#endif // MLA_FP8_CODEOBJECT_FILE_H
