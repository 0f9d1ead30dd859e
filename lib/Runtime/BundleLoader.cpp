//===- BundleLoader.cpp - load an AOT kernel bundle at run time -----------===//

#include "mla-fp8/Runtime/Bundle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>

using namespace mlir::mlafp8::runtime;
namespace json = llvm::json;

uint64_t GridDim::evaluate(int64_t m, int64_t b) const {
  if (kind == Kind::Constant)
    return static_cast<uint64_t>(std::max<int64_t>(value, 0));
  int64_t var = std::max<int64_t>(kind == Kind::M ? m : b, 0);
  return static_cast<uint64_t>((var + value - 1) / value);
}

std::array<uint64_t, 3> KernelEntry::getGrid(int64_t m, int64_t b) const {
  return {grid[0].evaluate(m, b), grid[1].evaluate(m, b),
          grid[2].evaluate(m, b)};
}

const KernelArg *KernelEntry::findArg(std::string_view name) const {
  for (const KernelArg &arg : args)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

const LoadedChip *LoadedBundle::findChip(std::string_view chip) const {
  for (const LoadedChip &c : chips)
    if (c.chip == chip)
      return &c;
  return nullptr;
}

const KernelEntry *LoadedBundle::findKernel(const KernelQuery &q) const {
  const LoadedChip *chip = findChip(q.chip);
  if (!chip || q.m < 0)
    return nullptr;
  const KernelEntry *lowest = nullptr;
  for (const KernelEntry &e : chip->kernels) {
    if (e.n != q.n || e.k != q.k || e.outType != q.outType ||
        e.wScale != q.wScale || e.groupSize != q.groupSize ||
        e.inType != q.inType || e.hasBias != q.hasBias)
      continue;
    if (q.m > 0 && e.servesM(q.m))
      return &e;
    if (!lowest || e.minM < lowest->minM)
      lowest = &e;
  }
  // M = 0 launches nothing; any kernel of the shape describes that (empty)
  // launch, and a launcher should not mistake it for an unsupported shape.
  return q.m == 0 ? lowest : nullptr;
}

const KernelEntry *LoadedBundle::findKernel(std::string_view chip, int64_t n,
                                            int64_t k, int64_t m,
                                            std::string_view outType,
                                            std::string_view wScale,
                                            int64_t groupSize) const {
  KernelQuery q;
  q.chip = std::string(chip);
  q.n = n;
  q.k = k;
  q.m = m;
  q.outType = std::string(outType);
  q.wScale = std::string(wScale);
  q.groupSize = groupSize;
  return findKernel(q);
}

namespace {
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

  const json::Value *get(const json::Object &o, llvm::StringRef key,
                         const std::string &path) {
    const json::Value *v = o.get(key);
    if (!v)
      fail(join(path, key), "missing");
    return v;
  }
  int64_t getInt(const json::Object &o, llvm::StringRef key,
                 const std::string &path, int64_t min = 0) {
    const json::Value *v = get(o, key, path);
    if (!v)
      return 0;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      fail(join(path, key), "expected an integer");
    else if (*i < min)
      fail(join(path, key),
           llvm::formatv("expected at least {0}, got {1}", min, *i));
    return i.value_or(0);
  }
  std::string getString(const json::Object &o, llvm::StringRef key,
                        const std::string &path) {
    const json::Value *v = get(o, key, path);
    if (!v)
      return "";
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      fail(join(path, key), "expected a string");
    return s ? s->str() : "";
  }
  const json::Object *getObject(const json::Object &o, llvm::StringRef key,
                                const std::string &path) {
    const json::Value *v = get(o, key, path);
    const json::Object *obj = v ? v->getAsObject() : nullptr;
    if (v && !obj)
      fail(join(path, key), "expected an object");
    return obj;
  }
  const json::Array *getArray(const json::Object &o, llvm::StringRef key,
                              const std::string &path) {
    const json::Value *v = get(o, key, path);
    const json::Array *arr = v ? v->getAsArray() : nullptr;
    if (v && !arr)
      fail(join(path, key), "expected an array");
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
} // namespace

/// Parses one grid dimension: an integer, "M", "B" or "ceil(M/<n>)" /
/// "ceil(B/<n>)" with n >= 1.
static std::optional<GridDim> parseGridDim(const json::Value &v) {
  if (std::optional<int64_t> i = v.getAsInteger()) {
    if (*i < 0)
      return std::nullopt;
    return GridDim{GridDim::Kind::Constant, *i};
  }
  std::optional<llvm::StringRef> s = v.getAsString();
  if (!s)
    return std::nullopt;
  llvm::StringRef text = s->trim();
  auto varKind = [](llvm::StringRef var) -> std::optional<GridDim::Kind> {
    if (var == "M")
      return GridDim::Kind::M;
    if (var == "B")
      return GridDim::Kind::B;
    return std::nullopt;
  };
  if (std::optional<GridDim::Kind> kind = varKind(text))
    return GridDim{*kind, 1};
  if (!text.consume_front("ceil(") || !text.consume_back(")"))
    return std::nullopt;
  auto [var, divisor] = text.split('/');
  std::optional<GridDim::Kind> kind = varKind(var.trim());
  int64_t d;
  if (!kind || divisor.trim().getAsInteger(10, d) || d < 1)
    return std::nullopt;
  return GridDim{*kind, d};
}

static void readKernel(ManifestReader &r, const json::Object &o,
                       const std::string &path, KernelEntry &e) {
  e.symbol = r.getString(o, "symbol", path);
  e.projection = r.getString(o, "projection", path);
  e.n = r.getInt(o, "n", path, 1);
  e.k = r.getInt(o, "k", path, 1);
  e.groupSize = r.getInt(o, "group_size", path, 1);
  e.inType = r.getString(o, "in_type", path);
  e.fp8Type = r.getString(o, "fp8_type", path);
  e.outType = r.getString(o, "out_type", path);
  e.wScale = r.getString(o, "w_scale", path);
  e.minM = r.getInt(o, "min_m", path);
  e.maxM = r.getInt(o, "max_m", path);
  if (!r.failed() && e.maxM != 0 && e.maxM < e.minM)
    r.fail(ManifestReader::join(path, "max_m"),
           llvm::formatv("{0} is below min_m {1}", e.maxM, e.minM));
  if (const json::Object *tile = r.getObject(o, "tile", path))
    e.blockM =
        r.getInt(*tile, "block_m", ManifestReader::join(path, "tile"), 1);
  if (const json::Array *wg = r.getArray(o, "workgroup_size", path)) {
    std::string wgPath = ManifestReader::join(path, "workgroup_size");
    if (wg->size() != 3)
      r.fail(wgPath, "expected 3 integers");
    for (size_t i = 0; i < std::min<size_t>(wg->size(), 3); ++i) {
      std::optional<int64_t> v = (*wg)[i].getAsInteger();
      if (!v || *v < 1 || *v > 1024)
        r.fail(ManifestReader::index(wgPath, i),
               "expected an integer in [1, 1024]");
      else
        e.workgroupSize[i] = static_cast<uint32_t>(*v);
    }
  }
  if (const json::Object *grid = r.getObject(o, "grid", path)) {
    std::string gridPath = ManifestReader::join(path, "grid");
    const char *names[] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
      const json::Value *v = r.get(*grid, names[i], gridPath);
      if (!v)
        continue;
      std::optional<GridDim> dim = parseGridDim(*v);
      if (!dim)
        r.fail(ManifestReader::join(gridPath, names[i]),
               "expected an integer, \"M\", \"B\" or \"ceil(M/<n>)\"");
      else
        e.grid[i] = *dim;
    }
  }
  e.kernargSize = r.getInt(o, "kernarg_size", path, 1);
  e.kernargAlign = r.getInt(o, "kernarg_align", path, 1);
  e.ldsBytes = r.getInt(o, "lds_bytes", path);
  e.scratchBytes = r.getInt(o, "scratch_bytes", path);
  if (const json::Value *bias = o.get("has_bias")) {
    std::optional<bool> value = bias->getAsBoolean();
    if (!value)
      r.fail(ManifestReader::join(path, "has_bias"), "expected true or false");
    else
      e.hasBias = *value;
  }
  // Kernels without split-K need no workspace; manifests may omit the field.
  if (o.get("workspace_bytes_per_block"))
    e.workspaceBytesPerBlock = r.getInt(o, "workspace_bytes_per_block", path);
  const json::Array *args = r.getArray(o, "args", path);
  if (!args)
    return;
  std::string argsPath = ManifestReader::join(path, "args");
  for (size_t i = 0; i < args->size() && !r.failed(); ++i) {
    std::string argPath = ManifestReader::index(argsPath, i);
    const json::Object *a = (*args)[i].getAsObject();
    if (!a) {
      r.fail(argPath, "expected an object");
      break;
    }
    KernelArg arg;
    arg.offset = r.getInt(*a, "offset", argPath);
    arg.size = r.getInt(*a, "size", argPath, 1);
    arg.kind = r.getString(*a, "kind", argPath);
    if (std::optional<llvm::StringRef> meaning = a->getString("meaning"))
      arg.meaning = meaning->str();
    arg.name = arg.meaning.empty()
                   ? arg.kind
                   : llvm::StringRef(arg.meaning).split(':').first.trim().str();
    if (!r.failed() && uint64_t(arg.offset) + arg.size > e.kernargSize)
      r.fail(argPath, llvm::formatv("ends at {0}, past kernarg_size {1}",
                                    arg.offset + arg.size, e.kernargSize));
    e.args.push_back(std::move(arg));
  }
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundleFromManifest(llvm::StringRef dir,
                                              llvm::StringRef manifest,
                                              llvm::StringRef manifestName) {
  ManifestReader r(manifestName);
  llvm::Expected<json::Value> parsed = json::parse(manifest);
  if (!parsed)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        manifestName + ": malformed JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   manifestName +
                                       ": expected a JSON object at the top");

  LoadedBundle bundle;
  bundle.directory = dir.str();
  // The version first: a newer layout may fail every other check, and its
  // message must say why.
  bundle.schemaVersion = r.getInt(*root, "schema_version", "");
  if (r.failed())
    return r.takeError();
  if (bundle.schemaVersion != kSupportedManifestSchemaVersion)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: field 'schema_version': this loader reads schema "
                      "version {1}, the manifest has {2}; regenerate the "
                      "bundle with a matching mla-fp8-aot",
                      manifestName, kSupportedManifestSchemaVersion,
                      bundle.schemaVersion));
  if (const json::Value *v = root->get("compiler_version"))
    bundle.compilerVersion = v->getAsString().value_or("").str();
  if (const json::Value *v = root->get("model"))
    bundle.model = v->getAsString().value_or("").str();
  if (const json::Value *v = root->get("max_m"))
    bundle.maxM = v->getAsInteger().value_or(0);

  const json::Array *chips = r.getArray(*root, "chips", "");
  if (!chips)
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
    chip.sha256 = llvm::StringRef(r.getString(*o, "sha256", path)).lower();
    int64_t bytes = r.getInt(*o, "bytes", path);
    const json::Array *kernels = r.getArray(*o, "kernels", path);
    if (r.failed())
      return r.takeError();
    if (bundle.findChip(chip.chip)) {
      r.fail(ManifestReader::join(path, "chip"),
             "chip '" + chip.chip + "' is listed twice");
      return r.takeError();
    }
    // Code object names are plain file names: a manifest must not point
    // outside its bundle.
    if (chip.codeObjectFile.empty() ||
        llvm::sys::path::filename(chip.codeObjectFile) != chip.codeObjectFile) {
      r.fail(ManifestReader::join(path, "code_object"),
             "expected a file name inside the bundle, got '" +
                 chip.codeObjectFile + "'");
      return r.takeError();
    }

    llvm::SmallString<256> file(dir);
    llvm::sys::path::append(file, chip.codeObjectFile);
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError(
          buffer.getError(),
          "%s: cannot read code object of chip '%s' (%s): %s", file.c_str(),
          chip.chip.c_str(),
          (manifestName + ": " + path + ".code_object").str().c_str(),
          buffer.getError().message().c_str());
    llvm::StringRef data = (*buffer)->getBuffer();
    if (static_cast<int64_t>(data.size()) != bytes)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: size {1} differs from field '{2}.bytes' = {3} "
                        "in {4}",
                        file, data.size(), path, bytes, manifestName));
    std::string digest =
        llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(data)),
                    /*LowerCase=*/true);
    if (digest != chip.sha256)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: SHA-256 {1} differs from field '{2}.sha256' = "
                        "{3} in {4}: the file is damaged or from another "
                        "bundle",
                        file, digest, path, chip.sha256, manifestName));
    chip.codeObject = std::make_shared<const std::string>(data.str());

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
      readKernel(r, *k, kernelPath, entry);
      if (r.failed())
        return r.takeError();
      chip.kernels.push_back(std::move(entry));
    }
    bundle.chips.push_back(std::move(chip));
  }
  return bundle;
}

llvm::Expected<LoadedBundle>
mlir::mlafp8::runtime::loadBundle(llvm::StringRef dir) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "manifest.json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: cannot read: %s",
                                   path.c_str(),
                                   buffer.getError().message().c_str());
  return loadBundleFromManifest(dir, (*buffer)->getBuffer(), path);
}
