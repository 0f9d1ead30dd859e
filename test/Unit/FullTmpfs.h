//===- FullTmpfs.h - a full file system for write-error tests ---*- C++ -*-===//
//
// Shared by the tests that show a full disk is an error, not an abort.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TEST_UNIT_FULLTMPFS_H
#define MLA_FP8_TEST_UNIT_FULLTMPFS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mount.h>
#include <unistd.h>

namespace mlir::mlafp8::test {

/// A tmpfs of `size` (e.g. "64k") mounted on a fresh directory and filled up,
/// so that every write in it fails with ENOSPC; `skipReason` says why there
/// is none (mounting needs CAP_SYS_ADMIN).
struct FullTmpfs {
  explicit FullTmpfs(const char *size) {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("mla-fp8-full", path)) {
      skipReason = "cannot create a directory to mount on";
      return;
    }
    dir = std::string(path);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0,
                (std::string("size=") + size).c_str()) != 0) {
      skipReason = "cannot mount a small tmpfs here (needs root): " +
                   std::string(strerror(errno));
      ::rmdir(dir.c_str());
      dir.clear();
      return;
    }
    mounted = true;
    int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT, 0600);
    std::string block(4096, 'x');
    while (fd >= 0 && ::write(fd, block.data(), block.size()) > 0)
      ;
    if (fd >= 0)
      ::close(fd);
  }
  ~FullTmpfs() {
    if (mounted)
      ::umount2(dir.c_str(), MNT_DETACH);
    if (!dir.empty())
      ::rmdir(dir.c_str());
  }
  std::string dir, skipReason;
  bool mounted = false;
};

} // namespace mlir::mlafp8::test

#endif // MLA_FP8_TEST_UNIT_FULLTMPFS_H
