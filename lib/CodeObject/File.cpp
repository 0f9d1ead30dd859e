//===- File.cpp - bounded reads of regular files --------------------------===//

#include "mla-fp8/CodeObject/File.h"

#include "llvm/ADT/StringExtras.h"
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

/// Whether `token` is a number as JSON writes it:
/// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
static bool isJSONNumber(llvm::StringRef token) {
  auto digits = [&] {
    size_t n = 0;
    while (n < token.size() && llvm::isDigit(token[n]))
      ++n;
    token = token.drop_front(n);
    return n;
  };
  token.consume_front("-");
  if (token.consume_front("0")) {
    if (!token.empty() && llvm::isDigit(token[0]))
      return false;
  } else if (!digits()) {
    return false;
  }
  if (token.consume_front(".") && !digits())
    return false;
  if (token.consume_front("e") || token.consume_front("E")) {
    if (!token.consume_front("+"))
      token.consume_front("-");
    if (!digits())
      return false;
  }
  return token.empty();
}

llvm::Expected<llvm::json::Value>
mlir::mlafp8::parseJSONWithinDepth(llvm::StringRef text, unsigned maxDepth) {
  // Strings are skipped with their escapes, as the JSON lexer does, so the
  // count agrees with the parser on every prefix it accepts. Numbers are
  // checked against JSON's grammar: the parser also takes "+1", "01", "1."
  // and ".5", which no other reader of the same file would.
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
    } else if (llvm::isDigit(c) || c == '-' || c == '+' || c == '.') {
      size_t end = text.find_first_not_of("0123456789+-.eE", i);
      llvm::StringRef token = text.slice(i, end);
      if (!isJSONNumber(token))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            llvm::formatv("invalid number '{0}' (at byte {1})", token, i));
      i += token.size() - 1;
    }
  }
  return llvm::json::parse(text);
}
