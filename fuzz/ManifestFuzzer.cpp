//===- ManifestFuzzer.cpp - the bundle loader on manifest text ------------===//
//
// Input: the text of a manifest.json. The code objects it names come from the
// bundle directory that MLAFP8_FUZZ_BUNDLE names (bench/fuzz.sh and the
// regression tests generate one with mla-fp8-aot), copied once into a private
// directory where each input's own digest is written as manifest.sha256. The
// text may write @SHA256(<file>)@ and @BYTES(<file>)@ for the digest and the
// size of a file of the bundle: mutations then reach the checks behind the
// digests instead of stopping at them. A bundle that loads is then queried as
// a launcher queries it: kernel lookup, grid and workspace for a few M and B.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "mla-fp8/Runtime/Bundle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

namespace {
/// The digest and size of one file of the bundle directory.
struct FileFacts {
  std::string sha256;
  std::string bytes;
};
} // namespace

static const std::string &getBundleDir() {
  static const std::string dir = [] {
    const char *env = std::getenv("MLAFP8_FUZZ_BUNDLE");
    if (!env || !*env) {
      llvm::errs() << "manifest harness: set MLAFP8_FUZZ_BUNDLE to a bundle "
                      "directory (mla-fp8-aot -o DIR)\n";
      std::exit(2);
    }
    return std::string(env);
  }();
  return dir;
}

namespace {
/// A private copy of the bundle's files but its manifest and digest, removed
/// at exit.
class WorkDir {
public:
  WorkDir() {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("mlafp8-fuzz-bundle", path))
      fatal("cannot create a directory: " + ec.message());
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(getBundleDir(), ec), end;
         it != end && !ec; it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name == "manifest.json" || name == "manifest.sha256" ||
          it->type() != llvm::sys::fs::file_type::regular_file)
        continue;
      llvm::SmallString<256> to(path);
      llvm::sys::path::append(to, name);
      if (std::error_code copyError = llvm::sys::fs::copy_file(it->path(), to))
        fatal("cannot copy " + it->path() + ": " + copyError.message());
    }
    if (ec)
      fatal("cannot list " + getBundleDir() + ": " + ec.message());
  }
  ~WorkDir() { llvm::sys::fs::remove_directories(path); }

  /// Writes the digest file of `manifest`, as mla-fp8-aot writes it.
  void writeDigest(llvm::StringRef manifest) const {
    llvm::SmallString<256> file(path);
    llvm::sys::path::append(file, "manifest.sha256");
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (ec)
      fatal("cannot write " + file.str().str() + ": " + ec.message());
    os << llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(manifest)),
                      /*LowerCase=*/true)
       << "  manifest.json\n";
  }

  llvm::StringRef getPath() const { return path; }

private:
  [[noreturn]] static void fatal(const std::string &message) {
    llvm::errs() << "manifest harness: " << message << "\n";
    std::exit(2);
  }

  llvm::SmallString<128> path;
};
} // namespace

/// Facts of `name` in the bundle directory, or null when it is not a plain
/// file name there.
static const FileFacts *getFileFacts(llvm::StringRef name) {
  static std::map<std::string, FileFacts, std::less<>> cache;
  if (auto it = cache.find(name); it != cache.end())
    return &it->second;
  if (name.empty() || llvm::sys::path::filename(name) != name)
    return nullptr;
  llvm::SmallString<256> path(getBundleDir());
  llvm::sys::path::append(path, name);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return nullptr;
  llvm::StringRef data = (*buffer)->getBuffer();
  FileFacts facts{
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(data)),
                  /*LowerCase=*/true),
      std::to_string(data.size())};
  return &cache.emplace(name.str(), std::move(facts)).first->second;
}

/// Replaces @SHA256(f)@ and @BYTES(f)@; unknown files stay as written.
static std::string expandTokens(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t at = text.find('@');
    out += text.take_front(at);
    if (at == llvm::StringRef::npos)
      break;
    text = text.drop_front(at);
    bool isSha = text.starts_with("@SHA256(");
    bool isBytes = text.starts_with("@BYTES(");
    size_t close = text.find(")@");
    if ((isSha || isBytes) && close != llvm::StringRef::npos) {
      size_t open = text.find('(') + 1;
      if (const FileFacts *facts = getFileFacts(text.slice(open, close))) {
        out += isSha ? facts->sha256 : facts->bytes;
        text = text.drop_front(close + 2);
        continue;
      }
    }
    out += '@';
    text = text.drop_front();
  }
  return out;
}

/// Asks what a launcher asks of every kernel; the answers must be computable
/// for any M and B, however odd the manifest.
static void queryKernels(const LoadedBundle &bundle) {
  const int64_t ms[] = {0, 1, 17, 1024, int64_t(1) << 31, int64_t(1) << 40};
  const int64_t bs[] = {1, 16, 1 << 20};
  for (const LoadedChip &chip : bundle.chips) {
    for (const KernelEntry &kernel : chip.kernels) {
      for (int64_t m : ms) {
        for (int64_t b : bs) {
          (void)kernel.getGrid(m, b);
          (void)kernel.getWorkspaceBytes(m, b);
          (void)kernel.checkLaunch(m, b);
        }
        KernelQuery query;
        static_cast<kernel_abi::KernelDescription &>(query) = kernel;
        query.m = m;
        (void)bundle.findKernel(query);
      }
      for (const KernelArg &arg : kernel.args)
        (void)kernel.findArg(arg.name);
    }
  }
}

namespace mlir::mlafp8::fuzz {

const char *getHarnessName() { return "manifest"; }

Outcome runInput(llvm::ArrayRef<uint8_t> data) {
  static const WorkDir workDir;
  std::string text = expandTokens(llvm::toStringRef(data));
  workDir.writeDigest(text);
  llvm::Expected<LoadedBundle> bundle =
      loadBundleFromManifest(workDir.getPath(), text, "manifest.json");
  if (!bundle)
    return Outcome::reject(llvm::toString(bundle.takeError()));
  queryKernels(*bundle);
  return Outcome::accept();
}

} // namespace mlir::mlafp8::fuzz
