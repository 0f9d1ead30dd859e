//===- BundleLoader.cpp - load an AOT kernel bundle at run time -----------===//
//
// The loader trusts nothing it reads: the manifest is checked against its
// digest, every field is range-checked, and every fact the code object's own
// metadata states (the symbol, kernarg layout, LDS, scratch, workgroup size)
// or the kernel ABI implies (the symbol's name, grid, workspace) must agree
// with the manifest. docs/manifest.md lists the checks.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Runtime/Bundle.h"

#include "ManifestReader.h"

#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/CodeObject/Metadata.h"
#include "mla-fp8/Hardware/Chip.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <limits>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;
namespace json = llvm::json;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Reads manifest.sha256 beside the manifest and checks `manifest` against
/// it: one line, 64 lowercase hex digits, two spaces, "manifest.json".
static llvm::Expected<std::string>
checkManifestDigest(llvm::StringRef dir, llvm::StringRef manifest) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.sha256");
  llvm::Expected<std::string> text = readRegularFile(path, 256);
  if (!text)
    return makeError(llvm::toString(text.takeError()) +
                     " (a bundle records the SHA-256 of its manifest.json "
                     "there since schema 2)");
  llvm::StringRef line = *text;
  llvm::StringRef hex = line.take_front(64);
  if (line.size() != 64 + 2 + 13 + 1 ||
      !llvm::all_of(
          hex,
          [](char c) { return llvm::isDigit(c) || (c >= 'a' && c <= 'f'); }) ||
      line.drop_front(64) != "  manifest.json\n")
    return makeError(path + ": expected one line '<64 lowercase hex digits>  "
                            "manifest.json'");
  std::string digest =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(manifest)),
                  /*LowerCase=*/true);
  if (digest != hex)
    return makeError(llvm::formatv("{0}: manifest.json has SHA-256 {1}, the "
                                   "digest file records {2}: the manifest "
                                   "was changed or damaged",
                                   path, digest, hex));
  return digest;
}

/// Reads, checks and decodes one chip's code object.
static llvm::Error loadCodeObject(ManifestReader &r, llvm::StringRef dir,
                                  llvm::StringRef manifestName,
                                  const std::string &path, int64_t bytes,
                                  LoadedChip &chip,
                                  CodeObjectMetadata &metadata) {
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(file, chip.codeObjectFile);
  llvm::Expected<std::string> data = readRegularFile(file, kMaxCodeObjectBytes);
  if (!data)
    return makeError(llvm::toString(data.takeError()) + " (code object of " +
                     "chip '" + chip.chip + "', " + manifestName + ": " + path +
                     ".code_object)");
  if (static_cast<int64_t>(data->size()) != bytes)
    return makeError(llvm::formatv("{0}: size {1} differs from field "
                                   "'{2}.bytes' = {3} in {4}",
                                   file, data->size(), path, bytes,
                                   manifestName));
  std::string digest =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(*data)),
                  /*LowerCase=*/true);
  if (digest != chip.sha256)
    return makeError(llvm::formatv("{0}: SHA-256 {1} differs from field "
                                   "'{2}.sha256' = {3} in {4}: the file is "
                                   "damaged or from another bundle",
                                   file, digest, path, chip.sha256,
                                   manifestName));
  llvm::Expected<CodeObjectMetadata> read = readCodeObjectMetadata(*data);
  if (!read)
    return makeError(file + ": " + llvm::toString(read.takeError()));
  metadata = std::move(*read);
  if (metadata.processor != chip.chip) {
    r.fail(ManifestReader::join(path, "chip"),
           "'" + chip.chip + "', but " + chip.codeObjectFile + " is for '" +
               metadata.processor + "'");
    return r.takeError();
  }
  // Bundles written before the field existed do not have it; the version
  // is then the ELF header's alone.
  if (chip.codeObjectVersion != 0 &&
      chip.codeObjectVersion != metadata.codeObjectVersion) {
    r.fail(ManifestReader::join(path, "code_object_version"),
           llvm::formatv("{0}, but {1} is code object v{2} (ELF ABI version "
                         "{3})",
                         chip.codeObjectVersion, chip.codeObjectFile,
                         metadata.codeObjectVersion,
                         metadata.codeObjectVersion - 2));
    return r.takeError();
  }
  chip.codeObjectVersion = metadata.codeObjectVersion;
  chip.codeObject = std::make_shared<const std::string>(std::move(*data));
  return llvm::Error::success();
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundleFromManifest(llvm::StringRef dir,
                                              llvm::StringRef manifest,
                                              llvm::StringRef manifestName) {
  ManifestReader r(manifestName);
  if (manifest.size() > kMaxManifestBytes)
    return makeError(llvm::formatv("{0}: {1} bytes, more than the limit of "
                                   "{2}",
                                   manifestName, manifest.size(),
                                   kMaxManifestBytes));
  llvm::Expected<json::Value> parsed =
      parseJSONWithinDepth(manifest, kMaxManifestJSONDepth);
  if (!parsed)
    return makeError(manifestName +
                     ": malformed JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return makeError(manifestName + ": expected a JSON object at the top");

  LoadedBundle bundle;
  bundle.directory = dir.str();
  // The version first: another layout may fail every other check (an older
  // one has no digest file), and its message must say why.
  bundle.schemaVersion = r.getInt(*root, "schema_version", "", 0,
                                  std::numeric_limits<int32_t>::max());
  if (r.failed())
    return r.takeError();
  if (bundle.schemaVersion != kSupportedManifestSchemaVersion)
    return makeError(llvm::formatv(
        "{0}: field 'schema_version': the manifest has schema version {2}; "
        "this loader reads schema version {1} only. Regenerate the bundle "
        "with a matching mla-fp8-aot",
        manifestName, kSupportedManifestSchemaVersion, bundle.schemaVersion));
  llvm::Expected<std::string> digest = checkManifestDigest(dir, manifest);
  if (!digest)
    return digest.takeError();
  bundle.manifestSha256 = std::move(*digest);

  if (r.getString(*root, "compiler", "") != "mla-fp8" && !r.failed())
    r.fail("compiler", "expected \"mla-fp8\"");
  bundle.compilerVersion = r.getString(*root, "compiler_version", "");
  bundle.model = r.getString(*root, "model", "");
  bundle.maxM = r.getInt(*root, "max_m", "", 1, kMaxManifestM);
  const json::Array *chips = r.getArray(*root, "chips", "", kMaxManifestChips);
  if (r.failed())
    return r.takeError();
  for (size_t c = 0; c < chips->size(); ++c) {
    std::string path = ManifestReader::index("chips", c);
    const json::Object *o = (*chips)[c].getAsObject();
    if (!o) {
      r.fail(path, "expected an object");
      return r.takeError();
    }
    LoadedChip chip;
    chip.chip = r.getString(*o, "chip", path);
    chip.codeObjectFile = r.getString(*o, "code_object", path);
    chip.sha256 = r.getString(*o, "sha256", path);
    int64_t bytes = r.getInt(*o, "bytes", path, 1, kMaxCodeObjectBytes);
    if (o->get("code_object_version"))
      chip.codeObjectVersion =
          unsigned(r.getInt(*o, "code_object_version", path, 5, 6));
    const json::Array *kernels =
        r.getArray(*o, "kernels", path, kMaxManifestKernelsPerChip);
    if (r.failed())
      return r.takeError();
    if (!lookupChip(chip.chip)) {
      r.fail(ManifestReader::join(path, "chip"),
             describeUnsupportedChip(chip.chip));
      return r.takeError();
    }
    if (bundle.findChip(chip.chip)) {
      r.fail(ManifestReader::join(path, "chip"),
             "chip '" + chip.chip + "' is listed twice");
      return r.takeError();
    }
    if (chip.sha256.size() != 64 || !llvm::all_of(chip.sha256, [](char ch) {
          return llvm::isDigit(ch) || (ch >= 'a' && ch <= 'f');
        })) {
      r.fail(ManifestReader::join(path, "sha256"),
             "expected 64 lowercase hex digits");
      return r.takeError();
    }
    // Code object names are plain file names: a manifest must not point
    // outside its bundle.
    if (chip.codeObjectFile.empty() || chip.codeObjectFile == "." ||
        chip.codeObjectFile == ".." ||
        chip.codeObjectFile.find('\0') != std::string::npos ||
        llvm::sys::path::filename(chip.codeObjectFile) != chip.codeObjectFile) {
      r.fail(ManifestReader::join(path, "code_object"),
             "expected a file name inside the bundle, got '" +
                 chip.codeObjectFile + "'");
      return r.takeError();
    }
    CodeObjectMetadata metadata;
    if (llvm::Error error =
            loadCodeObject(r, dir, manifestName, path, bytes, chip, metadata))
      return std::move(error);

    std::string kernelsPath = ManifestReader::join(path, "kernels");
    for (size_t i = 0; i < kernels->size(); ++i) {
      std::string kernelPath = ManifestReader::index(kernelsPath, i);
      const json::Object *k = (*kernels)[i].getAsObject();
      if (!k) {
        r.fail(kernelPath, "expected an object");
        return r.takeError();
      }
      KernelEntry entry;
      entry.chip = chip.chip;
      entry.codeObject = chip.codeObject;
      std::array<kernel_abi::GridDim, 3> grid;
      readKernel(r, *k, kernelPath, entry, grid);
      if (!r.failed())
        checkKernelFields(r, kernelPath, entry, grid);
      if (!r.failed())
        checkKernelMetadata(r, kernelPath, entry, metadata,
                            chip.codeObjectFile);
      if (r.failed())
        return r.takeError();
      chip.kernels.push_back(std::move(entry));
    }
    checkOverlaps(r, kernelsPath, chip.kernels);
    if (r.failed())
      return r.takeError();
    bundle.chips.push_back(std::move(chip));
  }
  return bundle;
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundle(llvm::StringRef dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.json");
  llvm::Expected<std::string> text = readRegularFile(path, kMaxManifestBytes);
  if (!text)
    return text.takeError();
  return loadBundleFromManifest(dir, *text, path);
}
