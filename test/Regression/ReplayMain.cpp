//===- ReplayMain.cpp - run a fuzz harness on the regression corpus -------===//
//
// Linked with one harness of fuzz/, this runs the harness on files and on
// inputs it generates, in any build (gcc, clang, sanitizers), and checks what
// each input must give:
//   reject-*           must be refused (an error, no crash);
//   accept-*           must be accepted;
//   anything else      must not crash (accepted or refused);
//   <input>.expect     (beside a reject-* file) a text the error must contain,
//                      so that a refusal for an unrelated reason fails.
// Usage: replay [--expect=accept|reject|any] [--generate=KIND:ARG] PATH...
// where PATH is a file or a directory of inputs, --expect overrides the
// expectation of the paths after it, and the generated kinds are
//   nested-arrays:N    "[[[...]]]" N deep (must be refused)
//   nested-objects:N   {"a":{"a":...}} N deep (must be refused)
//   note-bit-flips:F   the ELF file F with each single bit of its notes
//                      flipped, one input per bit (must not crash)
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) ||                                        \
    __has_feature(undefined_behavior_sanitizer)
#include <sanitizer/common_interface_defs.h>
#define MLAFP8_HAS_SANITIZER 1
#endif
#endif

using namespace mlir::mlafp8::fuzz;

namespace {
enum class Expect { Any, Accept, Reject };

/// One input and what it must give.
struct Input {
  std::string name;
  std::vector<uint8_t> data;
  Expect expect = Expect::Any;
  /// For Expect::Reject: a text the error must contain (may be empty).
  std::string errorMustContain;
};
} // namespace

/// The input being run, for the crash message: a crash must name its input.
static char currentInput[512];

static void printCurrentInput() {
  std::fprintf(stderr, "replay: crashed on input %s\n", currentInput);
}

static void setCurrentInput(llvm::StringRef name) {
  size_t n = std::min(name.size(), sizeof(currentInput) - 1);
  std::memcpy(currentInput, name.data(), n);
  currentInput[n] = 0;
}

static std::optional<std::vector<uint8_t>> readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    llvm::errs() << "replay: cannot read '" << path
                 << "': " << buffer.getError().message() << "\n";
    return std::nullopt;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

static Expect expectFromName(llvm::StringRef fileName) {
  if (fileName.starts_with("reject-"))
    return Expect::Reject;
  if (fileName.starts_with("accept-"))
    return Expect::Accept;
  return Expect::Any;
}

/// Adds the input file `path`, or every input of the directory `path`.
static bool addPath(llvm::StringRef path, std::optional<Expect> override,
                    std::vector<Input> &inputs) {
  if (llvm::sys::fs::is_directory(path)) {
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name.ends_with(".expect") || name.starts_with(".") ||
          name == "README.md")
        continue;
      files.push_back(it->path());
    }
    if (ec) {
      llvm::errs() << "replay: cannot list '" << path << "': " << ec.message()
                   << "\n";
      return false;
    }
    llvm::sort(files);
    for (const std::string &file : files)
      if (!addPath(file, override, inputs))
        return false;
    return true;
  }
  std::optional<std::vector<uint8_t>> data = readFile(path);
  if (!data)
    return false;
  Input input;
  input.name = path.str();
  input.data = std::move(*data);
  input.expect =
      override.value_or(expectFromName(llvm::sys::path::filename(path)));
  std::string sidecar = (path + ".expect").str();
  if (llvm::sys::fs::exists(sidecar)) {
    std::optional<std::vector<uint8_t>> text = readFile(sidecar);
    if (!text)
      return false;
    input.errorMustContain =
        llvm::StringRef(llvm::toStringRef(*text)).trim().str();
  }
  inputs.push_back(std::move(input));
  return true;
}

static std::vector<uint8_t> nested(size_t depth, llvm::StringRef open,
                                   llvm::StringRef close) {
  std::vector<uint8_t> out;
  out.reserve(depth * (open.size() + close.size()));
  for (size_t i = 0; i < depth; ++i)
    out.insert(out.end(), open.begin(), open.end());
  for (size_t i = 0; i < depth; ++i)
    out.insert(out.end(), close.begin(), close.end());
  return out;
}

/// One input per bit of every SHT_NOTE section of the ELF file `path`.
static bool addNoteBitFlips(llvm::StringRef path, std::vector<Input> &inputs) {
  std::optional<std::vector<uint8_t>> data = readFile(path);
  if (!data)
    return false;
  auto elf = llvm::object::ELF64LEFile::create(llvm::toStringRef(*data));
  if (!elf) {
    llvm::errs() << "replay: '" << path
                 << "': " << llvm::toString(elf.takeError()) << "\n";
    return false;
  }
  auto sections = elf->sections();
  if (!sections) {
    llvm::errs() << "replay: '" << path
                 << "': " << llvm::toString(sections.takeError()) << "\n";
    return false;
  }
  size_t before = inputs.size();
  for (const auto &section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    uint64_t begin = section.sh_offset;
    uint64_t end = std::min<uint64_t>(begin + section.sh_size, data->size());
    for (uint64_t byte = begin; byte < end; ++byte) {
      for (unsigned bit = 0; bit < 8; ++bit) {
        Input input;
        input.name = (path + " with bit " + llvm::Twine(bit) + " of byte " +
                      llvm::Twine(byte) + " flipped")
                         .str();
        input.data = *data;
        input.data[byte] ^= uint8_t(1u << bit);
        inputs.push_back(std::move(input));
      }
    }
  }
  if (inputs.size() == before) {
    llvm::errs() << "replay: '" << path << "' has no note section\n";
    return false;
  }
  return true;
}

static bool addGenerated(llvm::StringRef spec, std::vector<Input> &inputs) {
  auto [kind, arg] = spec.split(':');
  size_t depth = 0;
  if (kind == "nested-arrays" || kind == "nested-objects") {
    if (arg.getAsInteger(10, depth) || depth == 0 || depth > (1u << 24)) {
      llvm::errs() << "replay: '" << spec << "': expected a depth\n";
      return false;
    }
    Input input;
    input.name = spec.str();
    input.expect = Expect::Reject;
    input.data = kind == "nested-arrays" ? nested(depth, "[", "]")
                                         : nested(depth, "{\"a\":", "}");
    // The innermost object needs a value.
    if (kind == "nested-objects")
      input.data.insert(input.data.begin() + depth * 5, {'0'});
    inputs.push_back(std::move(input));
    return true;
  }
  if (kind == "note-bit-flips")
    return addNoteBitFlips(arg, inputs);
  llvm::errs() << "replay: unknown generated input '" << spec << "'\n";
  return false;
}

/// Runs one input; returns whether it gave what it must.
static bool runOne(const Input &input, bool verbose, unsigned &accepted) {
  setCurrentInput(input.name);
  Outcome outcome = runInput(input.data);
  accepted += outcome.accepted;
  std::string problem;
  if (input.expect == Expect::Accept && !outcome.accepted)
    problem = "expected to be accepted, refused: " + outcome.message;
  if (input.expect == Expect::Reject) {
    if (outcome.accepted)
      problem = "expected to be refused, accepted";
    else if (!llvm::StringRef(outcome.message).contains(input.errorMustContain))
      problem = "refused, but the error does not mention '" +
                input.errorMustContain + "': " + outcome.message;
  }
  if (!problem.empty()) {
    llvm::outs() << "FAIL " << input.name << ": " << problem << "\n";
    return false;
  }
  if (verbose)
    llvm::outs() << "PASS " << input.name << ": "
                 << (outcome.accepted ? "accepted"
                                      : "refused: " + outcome.message)
                 << "\n";
  return true;
}

int main(int argc, char **argv) {
  llvm::sys::PrintStackTraceOnErrorSignal(argv[0]);
  llvm::sys::AddSignalHandler([](void *) { printCurrentInput(); }, nullptr);
#ifdef MLAFP8_HAS_SANITIZER
  __sanitizer_set_death_callback(printCurrentInput);
#endif

  std::vector<Input> inputs;
  std::optional<Expect> override;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg.consume_front("--expect=")) {
      if (arg == "any")
        override = Expect::Any;
      else if (arg == "accept")
        override = Expect::Accept;
      else if (arg == "reject")
        override = Expect::Reject;
      else {
        llvm::errs() << "replay: --expect takes accept, reject or any\n";
        return 2;
      }
    } else if (arg.consume_front("--generate=")) {
      if (!addGenerated(arg, inputs))
        return 2;
    } else if (!addPath(arg, override, inputs)) {
      return 2;
    }
  }
  if (inputs.empty()) {
    llvm::errs() << "usage: " << argv[0]
                 << " [--expect=accept|reject|any] [--generate=KIND:ARG] "
                    "PATH...\n";
    return 2;
  }

  // Per-input lines for a few files; a summary for thousands of bit flips.
  bool verbose = inputs.size() <= 64;
  unsigned failed = 0, accepted = 0;
  for (const Input &input : inputs)
    failed += !runOne(input, verbose, accepted);
  llvm::outs() << getHarnessName() << ": " << inputs.size() << " inputs ("
               << accepted << " accepted, " << inputs.size() - accepted
               << " refused), " << failed << " failed\n";
  return failed ? 1 : 0;
}
