//===- File.cpp - bounded reads of regular files --------------------------===//

#include "mla-fp8/CodeObject/File.h"

#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::mlafp8;

llvm::Expected<std::string> mlir::mlafp8::readRegularFile(llvm::StringRef path,
                                                          uint64_t maxBytes) {
  std::string name = path.str();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // before fstat could tell what it is.
  int fd = ::open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    std::error_code ec(errno, std::generic_category());
    return llvm::createStringError(ec, "cannot read '" + path +
                                           "': " + ec.message());
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return fail("cannot read '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return fail("'" + path + "' is not a regular file");
  if (info.st_size < 0 || uint64_t(info.st_size) > maxBytes)
    return fail("'" + path + "' is larger than " + llvm::Twine(maxBytes) +
                " bytes");
  // Reads one byte past the size fstat gave, to notice a file that grew.
  std::string data(size_t(info.st_size) + 1, '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t got = ::read(fd, data.data() + done, data.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fail("cannot read '" + path + "': " + std::strerror(errno));
    if (got == 0)
      break;
    done += size_t(got);
  }
  if (done > uint64_t(info.st_size))
    return fail("'" + path + "' grew while it was read");
  data.resize(done);
  return data;
}

llvm::Expected<llvm::json::Value>
mlir::mlafp8::parseJSONWithinDepth(llvm::StringRef text, unsigned maxDepth) {
  // Strings are skipped with their escapes, as the JSON lexer does, so the
  // count agrees with the parser on every prefix it accepts.
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("arrays and objects nest deeper than {0} levels (at "
                          "byte {1})",
                          maxDepth, i));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::json::parse(text);
}
