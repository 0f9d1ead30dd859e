//===- ManifestReader.h - typed, range-checked manifest fields --*- C++ -*-===//
//
// Private to the loader: the reader that remembers the first error with the
// manifest file and the field's JSON path, and the checks of one kernel entry
// (ManifestKernel.cpp) that BundleLoader.cpp runs for each.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_RUNTIME_MANIFESTREADER_H
#define MLA_FP8_LIB_RUNTIME_MANIFESTREADER_H

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/CodeObject/Metadata.h"
#include "mla-fp8/Runtime/KernelTable.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir::mlafp8::runtime {

/// Reads typed fields out of the manifest and remembers the first error, so
/// that every message names the manifest file and the field's JSON path.
class ManifestReader {
public:
  explicit ManifestReader(llvm::StringRef file) : file(file.str()) {}

  bool failed() const { return !message.empty(); }
  llvm::Error takeError() const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   file + ": " + message);
  }
  void fail(const std::string &path, const llvm::Twine &what) {
    if (message.empty())
      message = "field '" + path + "': " + what.str();
  }

  const llvm::json::Value *get(const llvm::json::Object &o, llvm::StringRef key,
                               const std::string &path) {
    const llvm::json::Value *v = o.get(key);
    if (!v)
      fail(join(path, key), "missing");
    return v;
  }
  /// An integer in [min, max].
  int64_t getInt(const llvm::json::Object &o, llvm::StringRef key,
                 const std::string &path, int64_t min, int64_t max) {
    const llvm::json::Value *v = get(o, key, path);
    if (!v)
      return 0;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      fail(join(path, key), "expected an integer");
    else if (*i < min || *i > max)
      fail(join(path, key),
           llvm::formatv("expected an integer in [{0}, {1}], got {2}", min, max,
                         *i));
    return (i && *i >= min && *i <= max) ? *i : 0;
  }
  std::string getString(const llvm::json::Object &o, llvm::StringRef key,
                        const std::string &path) {
    const llvm::json::Value *v = get(o, key, path);
    if (!v)
      return "";
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      fail(join(path, key), "expected a string");
    return s ? s->str() : "";
  }
  /// A string that is one of `choices`.
  std::string getChoice(const llvm::json::Object &o, llvm::StringRef key,
                        const std::string &path,
                        std::initializer_list<llvm::StringRef> choices) {
    std::string s = getString(o, key, path);
    if (failed() || llvm::is_contained(choices, s))
      return s;
    std::string list;
    for (llvm::StringRef c : choices)
      list += (list.empty() ? "\"" : ", \"") + c.str() + "\"";
    fail(join(path, key), "expected one of " + list + ", got \"" + s + "\"");
    return "";
  }
  bool getBool(const llvm::json::Object &o, llvm::StringRef key,
               const std::string &path) {
    const llvm::json::Value *v = get(o, key, path);
    std::optional<bool> b = v ? v->getAsBoolean() : std::nullopt;
    if (v && !b)
      fail(join(path, key), "expected true or false");
    return b.value_or(false);
  }
  const llvm::json::Object *getObject(const llvm::json::Object &o,
                                      llvm::StringRef key,
                                      const std::string &path) {
    const llvm::json::Value *v = get(o, key, path);
    const llvm::json::Object *obj = v ? v->getAsObject() : nullptr;
    if (v && !obj)
      fail(join(path, key), "expected an object");
    return obj;
  }
  /// An array of at most `maxSize` elements.
  const llvm::json::Array *getArray(const llvm::json::Object &o,
                                    llvm::StringRef key,
                                    const std::string &path, size_t maxSize) {
    const llvm::json::Value *v = get(o, key, path);
    const llvm::json::Array *arr = v ? v->getAsArray() : nullptr;
    if (v && !arr)
      fail(join(path, key), "expected an array");
    if (arr && arr->size() > maxSize) {
      fail(join(path, key), llvm::formatv("{0} entries, more than the limit "
                                          "of {1}",
                                          arr->size(), maxSize));
      return nullptr;
    }
    return arr;
  }

  static std::string join(const std::string &path, llvm::StringRef key) {
    return path.empty() ? key.str() : path + "." + key.str();
  }
  static std::string index(const std::string &path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

private:
  std::string file;
  std::string message;
};

/// Reads every field of one kernel entry, range-checked; the manifest's
/// `grid` goes to `grid` (the entry takes its grid from the kernel ABI).
void readKernel(ManifestReader &r, const llvm::json::Object &o,
                const std::string &path, KernelEntry &e,
                std::array<kernel_abi::GridDim, 3> &grid);

/// Checks what the kernel ABI implies from the entry's own fields: the
/// symbol's name, the workgroup size, the manifest's `grid` and the
/// workspace.
void checkKernelFields(ManifestReader &r, const std::string &path,
                       const KernelEntry &e,
                       const std::array<kernel_abi::GridDim, 3> &grid);

/// Checks the entry against the code object's metadata for its symbol.
void checkKernelMetadata(ManifestReader &r, const std::string &path,
                         const KernelEntry &e,
                         const CodeObjectMetadata &metadata,
                         llvm::StringRef codeObjectFile);

/// Two entries of one chip and projection that a lookup could both pick for
/// some M.
void checkOverlaps(ManifestReader &r, const std::string &kernelsPath,
                   const std::vector<KernelEntry> &kernels);

} // namespace mlir::mlafp8::runtime

#endif // MLA_FP8_LIB_RUNTIME_MANIFESTREADER_H
