//===- PublishTest.cpp - what may be replaced, and how --------------------===//

#include "mla-fp8/AOT/Publish.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <csignal>
#include <fcntl.h>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::mlafp8;

namespace {

class Publish : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-publish", root));
    ASSERT_FALSE(llvm::sys::fs::real_path(llvm::Twine(root), root));
    dir = path("bundle");
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> p(root);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  static std::string read(llvm::StringRef file) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    return buffer ? (*buffer)->getBuffer().str() : "<missing>";
  }
  static void write(llvm::StringRef file, llvm::StringRef contents) {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec) << file.str();
    os << contents;
  }
  static std::vector<std::string> entries(llvm::StringRef directory) {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(directory, ec), end;
         it != end && !ec; it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    llvm::sort(names);
    return names;
  }
  /// A bundle whose manifest and code object both carry `id`, so that a mix
  /// of two bundles is visible.
  static std::vector<std::pair<std::string, std::string>>
  bundle(llvm::StringRef id, size_t padding = 0) {
    std::string manifest = R"({"compiler": "mla-fp8", "id": ")" + id.str() +
                           R"(", "chips": [{"code_object": "gfx942.hsaco"}]})";
    return {{"gfx942.hsaco", id.str() + std::string(padding, '.')},
            {"manifest.json", manifest},
            {"manifest.sha256", renderManifestDigest(manifest)},
            {"mla_fp8_kernels.h", id.str()}};
  }
  /// The id of the complete bundle in `dir`, or "" when it is missing,
  /// partial or mixed.
  std::string bundleId() {
    std::string manifest = read(dir + "/manifest.json");
    size_t at = manifest.find("\"id\": \"");
    if (at == std::string::npos)
      return "";
    std::string id =
        manifest.substr(at + 7, manifest.find('"', at + 7) - at - 7);
    std::string object = read(dir + "/gfx942.hsaco");
    if (!llvm::StringRef(object).starts_with(id) ||
        read(dir + "/mla_fp8_kernels.h") != id ||
        read(dir + "/manifest.sha256") != renderManifestDigest(manifest) ||
        entries(dir).size() != 4)
      return "";
    return id;
  }
  std::string errorOf(llvm::Error err) {
    return err ? llvm::toString(std::move(err)) : "<success>";
  }

  llvm::SmallString<256> root;
  std::string dir;
};

TEST_F(Publish, ManifestDigestIsSha256sumFormat) {
  EXPECT_EQ(renderManifestDigest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            "  manifest.json\n");
}

TEST_F(Publish, MissingEmptyAndBundleAreReplaced) {
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("one"))), "<success>");
  EXPECT_EQ(bundleId(), "one");
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("two"))), "<success>");
  EXPECT_EQ(bundleId(), "two");
  std::string empty = path("empty");
  ASSERT_FALSE(llvm::sys::fs::create_directory(empty));
  ASSERT_EQ(errorOf(writeDirectoryAtomically(empty, bundle("three"))),
            "<success>");
  EXPECT_EQ(read(empty + "/mla_fp8_kernels.h"), "three");
  EXPECT_EQ(entries(root), (std::vector<std::string>{"bundle", "empty"}));
}

/// The data-loss finding: a directory that is not a bundle is never touched.
TEST_F(Publish, RefusesADirectoryThatIsNotABundle) {
  ASSERT_FALSE(llvm::sys::fs::create_directory(dir));
  write(dir + "/thesis.tex", "years of work");
  std::string message = errorOf(writeDirectoryAtomically(dir, bundle("x")));
  EXPECT_NE(message.find("output directory '" + dir +
                         "' is not empty and is not an mla-fp8 bundle (it "
                         "has no manifest.json)"),
            std::string::npos)
      << message;
  EXPECT_EQ(read(dir + "/thesis.tex"), "years of work");
  EXPECT_EQ(entries(dir), std::vector<std::string>{"thesis.tex"});
  EXPECT_EQ(entries(root), std::vector<std::string>{"bundle"});

  // A manifest of another program does not make it a bundle either.
  write(dir + "/manifest.json", R"({"compiler": "other"})");
  message = errorOf(writeDirectoryAtomically(dir, bundle("x"), nullptr,
                                             /*force=*/true));
  EXPECT_NE(message.find("does not say \"compiler\": \"mla-fp8\""),
            std::string::npos)
      << message;
  EXPECT_EQ(read(dir + "/thesis.tex"), "years of work");
}

TEST_F(Publish, ExtraFilesInABundleNeedForce) {
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("one"))), "<success>");
  write(dir + "/notes.txt", "mine");
  std::string message = errorOf(writeDirectoryAtomically(dir, bundle("two")));
  EXPECT_NE(message.find("is an mla-fp8 bundle but also holds 'notes.txt'"),
            std::string::npos)
      << message;
  EXPECT_EQ(bundleId(), "");
  EXPECT_EQ(read(dir + "/notes.txt"), "mine");
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("two"), nullptr,
                                             /*force=*/true)),
            "<success>");
  EXPECT_EQ(bundleId(), "two");
}

TEST_F(Publish, DeeplyNestedManifestIsRefusedNotACrash) {
  ASSERT_FALSE(llvm::sys::fs::create_directory(dir));
  write(dir + "/manifest.json", std::string(1000000, '['));
  std::string message = errorOf(writeDirectoryAtomically(dir, bundle("x")));
  EXPECT_NE(message.find("nest deeper than 256 levels"), std::string::npos)
      << message;
}

TEST_F(Publish, RelativePathIsResolvedAgainstTheCurrentDirectory) {
  llvm::SmallString<256> cwd;
  ASSERT_FALSE(llvm::sys::fs::current_path(cwd));
  ASSERT_FALSE(llvm::sys::fs::set_current_path(root));
  // The temporary directory plays no part: point it somewhere impossible.
  const char *oldTmp = getenv("TMPDIR");
  std::string savedTmp = oldTmp ? oldTmp : "";
  setenv("TMPDIR", "/nonexistent/mla-fp8-tmp", 1);
  std::string message =
      errorOf(writeDirectoryAtomically("out/r1", bundle("r")));
  if (oldTmp)
    setenv("TMPDIR", savedTmp.c_str(), 1);
  else
    unsetenv("TMPDIR");
  ASSERT_FALSE(llvm::sys::fs::set_current_path(cwd));
  EXPECT_EQ(message, "<success>");
  EXPECT_EQ(read(path("out/r1/mla_fp8_kernels.h")), "r");
  EXPECT_EQ(entries(path("out")), std::vector<std::string>{"r1"});
}

TEST_F(Publish, CurrentDirectoryIsCheckedLikeAnyOther) {
  ASSERT_FALSE(llvm::sys::fs::create_directory(dir));
  write(dir + "/keep", "x");
  llvm::SmallString<256> cwd;
  ASSERT_FALSE(llvm::sys::fs::current_path(cwd));
  ASSERT_FALSE(llvm::sys::fs::set_current_path(dir));
  std::string message = errorOf(writeDirectoryAtomically(".", bundle("x")));
  ASSERT_FALSE(llvm::sys::fs::set_current_path(cwd));
  EXPECT_NE(message.find("'" + dir + "' is not empty and is not an mla-fp8"),
            std::string::npos)
      << message;
  EXPECT_EQ(entries(dir), std::vector<std::string>{"keep"});
}

TEST_F(Publish, SymbolicLinks) {
  ASSERT_EQ(::symlink(path("nowhere").c_str(), dir.c_str()), 0);
  std::string message = errorOf(writeDirectoryAtomically(dir, bundle("x")));
  EXPECT_NE(message.find("is a dangling symbolic link"), std::string::npos)
      << message;
  EXPECT_EQ(entries(root), std::vector<std::string>{"bundle"});

  // A link to a bundle: the bundle is replaced, the link stays.
  ASSERT_EQ(::unlink(dir.c_str()), 0);
  std::string real = path("real");
  ASSERT_EQ(errorOf(writeDirectoryAtomically(real, bundle("one"))),
            "<success>");
  ASSERT_EQ(::symlink(real.c_str(), dir.c_str()), 0);
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("two"))), "<success>");
  EXPECT_EQ(read(real + "/mla_fp8_kernels.h"), "two");
  struct stat st;
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

/// Staging of dead writers goes, staging of a live writer (its lock held)
/// stays, whatever their age; names that are not staging names stay.
TEST_F(Publish, DeadStagingIsRemovedByItsLock) {
  std::string deadNoLock = path(".bundle.tmp-0123abcd");
  std::string deadFreeLock = path(".bundle.tmp-0123abce");
  std::string alive = path(".bundle.tmp-0123abcf");
  std::string oldFormat = path(".bundle.tmp-a1b2c3-d4e5f6.old");
  std::string orphanLock = path(".bundle.tmp-0123abd0.lock");
  std::string userFile = path(".bundle.tmp-notes");
  for (const std::string &d : {deadNoLock, deadFreeLock, alive, oldFormat}) {
    ASSERT_FALSE(llvm::sys::fs::create_directory(d));
    write(d + "/gfx942.hsaco", "stale");
  }
  write(deadFreeLock + ".lock", "");
  write(orphanLock, "");
  write(userFile, "keep");
  write(alive + ".lock", "");
  int fd = ::open((alive + ".lock").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);

  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("one"))), "<success>");
  EXPECT_EQ(entries(root),
            (std::vector<std::string>{".bundle.tmp-0123abcf",
                                      ".bundle.tmp-0123abcf.lock",
                                      ".bundle.tmp-notes", "bundle"}));
  ::close(fd);
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("two"))), "<success>");
  EXPECT_EQ(entries(root),
            (std::vector<std::string>{".bundle.tmp-notes", "bundle"}));
}

TEST_F(Publish, RefusedBeforeAnythingIsCreated) {
  ASSERT_FALSE(llvm::sys::fs::create_directory(dir));
  write(dir + "/x", "x");
  llvm::Expected<std::unique_ptr<StagedDirectory>> staged =
      StagedDirectory::create(dir + "/../bundle", false);
  ASSERT_FALSE(static_cast<bool>(staged));
  llvm::consumeError(staged.takeError());
  EXPECT_EQ(entries(root), std::vector<std::string>{"bundle"});
}

TEST_F(Publish, ReadRegularFileRefusesAFifo) {
  std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string message = errorOf(readRegularFile(fifo, 1024).takeError());
  EXPECT_NE(message.find("is not a regular file"), std::string::npos)
      << message;
}

/// Concurrent writers: each succeeds, and one complete bundle remains with
/// nothing else beside it.
TEST_F(Publish, ConcurrentWritersLeaveOneCompleteBundle) {
  std::vector<pid_t> children;
  for (int w = 0; w < 6; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 5; ++i)
        if (llvm::Error err = writeDirectoryAtomically(
                dir, bundle("w" + std::to_string(w), 4096 * w))) {
          llvm::errs() << llvm::toString(std::move(err)) << "\n";
          ::_exit(1);
        }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(bundleId().substr(0, 1), "w");
  EXPECT_EQ(entries(root), std::vector<std::string>{"bundle"});
}

/// SIGKILL at random instants of publishing leaves the old or the new bundle,
/// never a missing or mixed one; the next writer removes what the dead one
/// left.
TEST_F(Publish, KillAtAnyInstantLeavesOldOrNew) {
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("v0"))), "<success>");
  std::mt19937 random(12345);
  for (int round = 0; round < 60; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0;; ++i)
        llvm::consumeError(writeDirectoryAtomically(
            dir, bundle("v" + std::to_string(i % 7), 65536 * (i % 3))));
    }
    ::usleep(random() % 20000);
    ::kill(pid, SIGKILL);
    int status;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    std::string id = bundleId();
    ASSERT_NE(id, "") << "round " << round << ": the bundle is missing or "
                      << "mixed";
  }
  ASSERT_EQ(errorOf(writeDirectoryAtomically(dir, bundle("last"))),
            "<success>");
  EXPECT_EQ(bundleId(), "last");
  EXPECT_EQ(entries(root), std::vector<std::string>{"bundle"});
}

} // namespace
