//===- Publish.h - safe replacement of a bundle directory -------*- C++ -*-===//
//
// A bundle is published the way a package manager installs: the output path
// may only be missing, an empty directory or an mla-fp8 bundle; the new
// bundle is staged beside it (same file system), every file written and
// synced, then swapped in with one renameat2(RENAME_EXCHANGE), so that a kill
// at any instant leaves the old or the new bundle. Writers lock with flock:
// `.<name>.lock` beside the directory for the swap, and
// `.<name>.tmp-XXXXXXXX.lock` for the life of each staging directory, which
// is how staging left by a dead writer is told apart from a live one.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_PUBLISH_H
#define MLA_FP8_AOT_PUBLISH_H

#include "mla-fp8/CodeObject/File.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// The names of a bundle's files besides the code objects (<chip>.hsaco).
inline constexpr llvm::StringLiteral kManifestFileName = "manifest.json";
inline constexpr llvm::StringLiteral kManifestDigestFileName =
    "manifest.sha256";
inline constexpr llvm::StringLiteral kHeaderFileName = "mla_fp8_kernels.h";

/// What an output path holds before it is replaced.
enum class OutputKind { Missing, EmptyDirectory, Bundle };

/// Makes `path` absolute against the current directory, removes `.` and `..`
/// and follows a symbolic link that names a directory; the parent of the
/// result is canonical when it exists. A dangling link is an error.
llvm::Expected<std::string> resolveOutputPath(llvm::StringRef path);

/// Says whether the absolute path `dir` may be replaced by a bundle: it is
/// missing, an empty directory, or a directory whose manifest.json parses and
/// says compiler "mla-fp8" and that holds nothing but the bundle's files
/// (manifest.json, manifest.sha256, mla_fp8_kernels.h and the .hsaco files
/// its manifest lists). `force` accepts other files in such a bundle; they
/// are deleted with it. Every refusal names the path and the reason.
llvm::Expected<OutputKind> checkOutputDirectory(llvm::StringRef dir,
                                                bool force);

/// The contents of manifest.sha256 for `manifest`, in sha256sum's format:
/// "<64 lower-case hex>  manifest.json\n".
std::string renderManifestDigest(llvm::StringRef manifest);

/// A staging directory beside an output directory, locked for its life.
class StagedDirectory {
public:
  /// Resolves and checks `dir` (checkOutputDirectory), creates its parents,
  /// removes staging directories of dead writers beside it and creates a
  /// fresh, locked staging directory. Nothing is created when `dir` may not
  /// be replaced.
  static llvm::Expected<std::unique_ptr<StagedDirectory>>
  create(llvm::StringRef dir, bool force);

  /// Removes the staging directory (or the old bundle it holds after a
  /// publish) and its lock.
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory &) = delete;
  StagedDirectory &operator=(const StagedDirectory &) = delete;

  /// The staging directory.
  llvm::StringRef getPath() const { return path; }
  /// The resolved output directory.
  llvm::StringRef getTarget() const { return target; }

  /// Writes, syncs and closes a new file `name` in the staging directory.
  llvm::Error writeFile(llvm::StringRef name, llvm::StringRef contents);

  /// Under the output's lock, checks the output again and swaps the staging
  /// directory in; then removes the old bundle.
  llvm::Error publish();

private:
  StagedDirectory() = default;

  std::string target, path;
  bool force = false, published = false;
  int lockFD = -1;
  std::string lockPath;
};

/// Writes `files` (name, contents) as the directory `dir` through a
/// StagedDirectory. `check`, if given, sees the staging directory first and
/// may refuse it; then the previous contents of `dir` stay as they were.
llvm::Error writeDirectoryAtomically(
    llvm::StringRef dir,
    const std::vector<std::pair<std::string, std::string>> &files,
    const std::function<llvm::Error(llvm::StringRef)> &check = nullptr,
    bool force = false);

/// Writes `contents` to `path` through a uniquely named temporary file in the
/// same directory (synced before use) and a rename, so readers never see a
/// partial file and concurrent writers never share a temporary file.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef contents);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_PUBLISH_H
