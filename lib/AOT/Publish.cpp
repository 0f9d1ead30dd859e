//===- Publish.cpp - safe replacement of a bundle directory ---------------===//

#include "mla-fp8/AOT/Publish.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::mlafp8;

// Older C libraries lack these; the values are the kernel's.
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string errnoMessage(int error) {
  return std::error_code(error, std::generic_category()).message();
}

/// The deepest JSON nesting that publishing parses.
static constexpr unsigned kMaxJSONDepth = 256;

static int retryOnEINTR(const std::function<int()> &call) {
  int result;
  do
    result = call();
  while (result < 0 && errno == EINTR);
  return result;
}

/// Writes all of `contents` to `fd`, syncs and closes it; names `path` in
/// errors. The descriptor is closed in every case.
static llvm::Error writeSyncClose(int fd, llvm::StringRef path,
                                  llvm::StringRef contents) {
  auto fail = [&](const char *what, int error) {
    ::close(fd);
    return makeError(
        llvm::formatv("cannot {0} '{1}': {2}", what, path, errnoMessage(error))
            .str());
  };
  const char *data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail("write", n < 0 ? errno : ENOSPC);
    data += n;
    left -= n;
  }
  if (retryOnEINTR([&] { return ::fsync(fd); }) < 0)
    return fail("write", errno);
  if (::close(fd) < 0)
    return makeError("cannot write '" + path + "': " + errnoMessage(errno));
  return llvm::Error::success();
}

/// Syncs a directory so that the entries just renamed in it survive a crash.
static void syncDirectory(llvm::StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  ::fsync(fd);
  ::close(fd);
}

llvm::Error mlir::mlafp8::writeFileAtomically(llvm::StringRef path,
                                              llvm::StringRef contents) {
  std::string model = (path + ".tmp-%%%%%%%%").str();
  llvm::SmallString<256> temp;
  int fd = -1;
  for (int attempt = 0; attempt < 64 && fd < 0; ++attempt) {
    llvm::sys::fs::createUniquePath(model, temp, /*MakeAbsolute=*/false);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      return makeError("cannot create '" + temp + "': " + errnoMessage(errno));
  }
  if (fd < 0)
    return makeError("cannot create a unique temporary file for '" + path +
                     "'");
  if (llvm::Error err = writeSyncClose(fd, temp, contents)) {
    ::unlink(temp.c_str());
    return err;
  }
  if (::rename(temp.c_str(), path.str().c_str()) < 0) {
    int error = errno;
    ::unlink(temp.c_str());
    return makeError("cannot rename '" + temp + "' to '" + path +
                     "': " + errnoMessage(error));
  }
  return llvm::Error::success();
}

std::string mlir::mlafp8::renderManifestDigest(llvm::StringRef manifest) {
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef(manifest));
  return llvm::toHex(hash, /*LowerCase=*/true) + "  " +
         kManifestFileName.str() + "\n";
}

llvm::Expected<std::string>
mlir::mlafp8::resolveOutputPath(llvm::StringRef path) {
  if (path.empty())
    return makeError("the output directory is an empty path");
  // Against the current directory, never the temporary directory (LLVM's
  // createUniqueDirectory puts a relative model under $TMPDIR).
  llvm::SmallString<256> absolute(path);
  if (std::error_code ec = llvm::sys::fs::make_absolute(absolute))
    return makeError("cannot resolve output path '" + path +
                     "': " + ec.message());
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  llvm::StringRef name = llvm::sys::path::filename(absolute);
  if (name.empty() || name == "/" ||
      !llvm::sys::path::has_parent_path(absolute))
    return makeError("output path '" + path +
                     "' names the root directory; give a directory below it");

  struct stat st;
  if (::lstat(absolute.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // A link to a directory: the bundle replaces the directory, the link
    // stays. A dangling link is refused: its target is unknown territory.
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(absolute, real))
      return makeError("output path '" + absolute +
                       "' is a dangling symbolic link");
    absolute = real;
  }
  llvm::SmallString<256> parent(llvm::sys::path::parent_path(absolute)), real;
  if (!llvm::sys::fs::real_path(parent, real)) {
    llvm::sys::path::append(real, llvm::sys::path::filename(absolute));
    absolute = real;
  }
  return std::string(absolute);
}

/// Why a directory that is not empty is not a replaceable bundle, or empty
/// when it is one; `extras` receives the entries the bundle format does not
/// name.
static std::string inspectBundle(llvm::StringRef dir,
                                 const std::vector<std::string> &entries,
                                 std::vector<std::string> &extras) {
  llvm::SmallString<256> manifestPath(dir);
  llvm::sys::path::append(manifestPath, kManifestFileName);
  if (!llvm::is_contained(entries, kManifestFileName.str()))
    return "it has no manifest.json";
  struct stat manifestStat;
  if (::lstat(manifestPath.c_str(), &manifestStat) < 0 ||
      !S_ISREG(manifestStat.st_mode))
    return "its manifest.json is not a regular file";
  llvm::Expected<std::string> text =
      readRegularFile(manifestPath, kMaxManifestBytes);
  if (!text)
    return "its manifest.json cannot be read: " +
           llvm::toString(text.takeError());
  llvm::Expected<llvm::json::Value> json =
      parseJSONWithinDepth(*text, kMaxJSONDepth);
  if (!json)
    return "its manifest.json is not valid JSON: " +
           llvm::toString(json.takeError());
  const llvm::json::Object *root = json->getAsObject();
  std::optional<llvm::StringRef> compiler =
      root ? root->getString("compiler") : std::nullopt;
  if (!compiler || *compiler != "mla-fp8")
    return "its manifest.json does not say \"compiler\": \"mla-fp8\"";

  std::vector<std::string> allowed = {kManifestFileName.str(),
                                      kManifestDigestFileName.str(),
                                      kHeaderFileName.str()};
  if (const llvm::json::Array *chips = root->getArray("chips"))
    for (const llvm::json::Value &chip : *chips)
      if (const llvm::json::Object *o = chip.getAsObject())
        if (std::optional<llvm::StringRef> file = o->getString("code_object"))
          if (file->ends_with(".hsaco") && !file->contains('/') &&
              *file != ".hsaco")
            allowed.push_back(file->str());
  for (const std::string &entry : entries) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, entry);
    struct stat st;
    bool regular = ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (!regular || !llvm::is_contained(allowed, entry))
      extras.push_back(entry);
  }
  return "";
}

llvm::Expected<OutputKind>
mlir::mlafp8::checkOutputDirectory(llvm::StringRef dir, bool force) {
  struct stat st;
  if (::lstat(dir.str().c_str(), &st) < 0) {
    if (errno == ENOENT)
      return OutputKind::Missing;
    if (errno == ENOTDIR)
      return makeError("output directory '" + dir +
                       "' is not writable: cannot create entries in '" +
                       llvm::sys::path::parent_path(dir) +
                       "': " + errnoMessage(ENOTDIR));
    return makeError("cannot inspect output path '" + dir +
                     "': " + errnoMessage(errno));
  }
  if (S_ISLNK(st.st_mode))
    return makeError("output path '" + dir + "' is a symbolic link");
  if (!S_ISDIR(st.st_mode))
    return makeError("output path '" + dir + "' exists and is not a directory");

  std::vector<std::string> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec, /*follow=*/false), end;
       it != end && !ec; it.increment(ec))
    entries.push_back(llvm::sys::path::filename(it->path()).str());
  if (ec)
    return makeError("cannot list output directory '" + dir +
                     "': " + ec.message());
  if (entries.empty())
    return OutputKind::EmptyDirectory;

  std::vector<std::string> extras;
  std::string notBundle = inspectBundle(dir, entries, extras);
  if (!notBundle.empty())
    return makeError("output directory '" + dir +
                     "' is not empty and is not an mla-fp8 bundle (" +
                     notBundle + "); refusing to replace it");
  // --force deletes extra files, never a directory (a tree of someone's
  // work) or a special file: those always stay refused.
  std::vector<std::string> kept;
  for (const std::string &entry : extras) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, entry);
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISLNK(st.st_mode))
      kept.push_back(entry);
  }
  if (!kept.empty()) {
    llvm::sort(kept);
    return makeError(
        "output directory '" + dir + "' is an mla-fp8 bundle but also holds '" +
        kept.front() + "'" +
        (kept.size() > 1 ? llvm::formatv(" and {0} more", kept.size() - 1).str()
                         : std::string()) +
        ", which is a directory or a special file; mla-fp8-aot "
        "never deletes those, even with --force: move it away");
  }
  if (!extras.empty() && !force) {
    llvm::sort(extras);
    std::string list = "'" + extras.front() + "'";
    if (extras.size() > 1)
      list += llvm::formatv(" and {0} more", extras.size() - 1).str();
    return makeError("output directory '" + dir +
                     "' is an mla-fp8 bundle but also holds " + list +
                     ", which the bundle format does not name; move it away, "
                     "or force the replacement (mla-fp8-aot --force), which "
                     "deletes it");
  }
  return OutputKind::Bundle;
}

/// The error for a file of someone else's where a lock file goes.
static llvm::Error foreignLockError(llvm::StringRef lock) {
  return makeError("'" + lock +
                   "' exists and is not an mla-fp8 lock file (an empty "
                   "regular file); move it away");
}

namespace {
enum class LockState { Locked, Busy, Missing, Failed, Foreign };
} // namespace

/// Opens and flocks `path`. A lock file is only ever unlinked by a process
/// that holds its lock, so after locking, the descriptor must still be the
/// file at `path`; otherwise it was replaced meanwhile and the lock is taken
/// again (`create`) or reported missing. Lock files are empty regular files;
/// anything else at `path` (a symbolic link, a user's file that happens to
/// have the name) is Foreign: neither followed, nor locked, nor removed.
static LockState lockFile(const std::string &path, bool create, bool wait,
                          int &fd, int &error) {
  for (;;) {
    fd = ::open(path.c_str(),
                O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0666);
    if (fd < 0) {
      error = errno;
      if (errno == ELOOP)
        return LockState::Foreign;
      return !create && errno == ENOENT ? LockState::Missing
                                        : LockState::Failed;
    }
    struct stat opened;
    if (::fstat(fd, &opened) < 0 || !S_ISREG(opened.st_mode) ||
        opened.st_size != 0) {
      ::close(fd);
      fd = -1;
      return LockState::Foreign;
    }
    if (retryOnEINTR(
            [&] { return ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)); }) < 0) {
      error = errno;
      ::close(fd);
      fd = -1;
      return error == EWOULDBLOCK ? LockState::Busy : LockState::Failed;
    }
    struct stat held, named;
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino)
      return LockState::Locked;
    ::close(fd);
    fd = -1;
    if (!create)
      return LockState::Missing;
  }
}

/// Unlinks a lock file this process holds, then releases it.
static void unlockAndRemove(const std::string &path, int fd) {
  ::unlink(path.c_str());
  ::close(fd);
}

/// Whether `rest` (what follows ".<name>.tmp-") is a staging suffix this code
/// makes (8 random lower-case hex digits) or an older version made
/// ("xxxxxx-xxxxxx", and the same with ".old" for the bundle it moved aside).
static bool isStagingSuffix(llvm::StringRef rest) {
  auto isHex = [](llvm::StringRef digits, size_t count) {
    return digits.size() == count && llvm::all_of(digits, [](char c) {
             return llvm::isDigit(c) || (c >= 'a' && c <= 'f');
           });
  };
  bool old = rest.consume_back(".old");
  auto [left, right] = rest.split('-');
  if (isHex(left, 6) && isHex(right, 6))
    return true;
  return !old && isHex(rest, 8);
}

/// Whether the staging directory `path` holds only what a writer puts there:
/// regular files with the names of a bundle's files. Anything else is not
/// ours to delete, whatever its name.
static bool holdsOnlyBundleFiles(llvm::StringRef path) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(path, ec, /*follow=*/false), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef entry = llvm::sys::path::filename(it->path());
    struct stat st;
    if (::lstat(it->path().c_str(), &st) < 0 || !S_ISREG(st.st_mode))
      return false;
    if (entry != kManifestFileName && entry != kManifestDigestFileName &&
        entry != kHeaderFileName && !entry.ends_with(".hsaco"))
      return false;
  }
  return !ec;
}

/// Removes the staging directories (and lock files) beside `parent/name` that
/// no live writer holds. A writer locks `<staging>.lock` before it creates
/// the staging directory and removes the directory before the lock, so a
/// staging directory whose lock is missing or free belongs to a dead writer.
static void removeDeadStaging(llvm::StringRef parent, llvm::StringRef name) {
  std::string prefix = ("." + name + ".tmp-").str();
  std::vector<std::string> candidates;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(parent, ec, /*follow=*/false), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef entry = llvm::sys::path::filename(it->path());
    if (entry.starts_with(prefix))
      candidates.push_back(entry.str());
  }
  for (const std::string &entry : candidates) {
    llvm::StringRef rest = llvm::StringRef(entry).drop_front(prefix.size());
    bool isLock = rest.consume_back(".lock");
    if (!isStagingSuffix(rest))
      continue;
    llvm::SmallString<256> path(parent);
    llvm::sys::path::append(path, entry);
    struct stat st;
    if (::lstat(path.c_str(), &st) < 0)
      continue;
    int fd, error;
    if (isLock) {
      // A lock without its directory: a writer that died between the two.
      std::string dir = path.str().drop_back(5).str();
      if (!S_ISREG(st.st_mode) || ::access(dir.c_str(), F_OK) == 0)
        continue;
      if (lockFile(path.str().str(), /*create=*/false, /*wait=*/false, fd,
                   error) == LockState::Locked) {
        if (::access(dir.c_str(), F_OK) != 0)
          unlockAndRemove(path.str().str(), fd);
        else
          ::close(fd);
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode) || !holdsOnlyBundleFiles(path))
      continue;
    std::string lock = (path + ".lock").str();
    switch (lockFile(lock, /*create=*/false, /*wait=*/false, fd, error)) {
    case LockState::Missing:
      llvm::sys::fs::remove_directories(path, /*IgnoreErrors=*/true);
      break;
    case LockState::Locked:
      llvm::sys::fs::remove_directories(path, /*IgnoreErrors=*/true);
      unlockAndRemove(lock, fd);
      break;
    case LockState::Busy:
    case LockState::Failed:
    case LockState::Foreign:
      break;
    }
  }
}

llvm::Expected<std::unique_ptr<StagedDirectory>>
StagedDirectory::create(llvm::StringRef dir, bool force) {
  llvm::Expected<std::string> target = resolveOutputPath(dir);
  if (!target)
    return target.takeError();
  llvm::Expected<OutputKind> kind = checkOutputDirectory(*target, force);
  if (!kind)
    return kind.takeError();

  std::unique_ptr<StagedDirectory> staged(new StagedDirectory());
  staged->target = *target;
  staged->force = force;
  llvm::StringRef parent = llvm::sys::path::parent_path(staged->target);
  llvm::StringRef name = llvm::sys::path::filename(staged->target);
  auto notWritable = [&](const llvm::Twine &why) {
    return makeError("output directory '" + staged->target +
                     "' is not writable: cannot create entries in '" + parent +
                     "': " + why);
  };
  if (std::error_code ec = llvm::sys::fs::create_directories(parent))
    return notWritable(ec.message());

  // A foreign file where the publish lock goes is refused now, before
  // anything is compiled, not only when the bundle is swapped in.
  std::string publishLock = (parent + "/." + name + ".lock").str();
  struct stat lockStat;
  if (::lstat(publishLock.c_str(), &lockStat) == 0 &&
      (!S_ISREG(lockStat.st_mode) || lockStat.st_size != 0))
    return foreignLockError(publishLock);

  removeDeadStaging(parent, name);

  // The lock first, then the directory: a staging directory never exists
  // without a lock that its live writer holds.
  std::string model = (parent + "/." + name + ".tmp-%%%%%%%%").str();
  for (int attempt = 0; attempt < 64 && staged->lockFD < 0; ++attempt) {
    llvm::SmallString<256> path;
    llvm::sys::fs::createUniquePath(model, path, /*MakeAbsolute=*/false);
    std::string lock = (path + ".lock").str();
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST)
        continue;
      return notWritable(errnoMessage(errno));
    }
    ::close(fd);
    int error;
    if (lockFile(lock, /*create=*/false, /*wait=*/true, fd, error) !=
        LockState::Locked)
      continue; // Removed by a cleaner before we locked it: another name.
    if (::mkdir(path.c_str(), 0777) < 0) {
      error = errno;
      unlockAndRemove(lock, fd);
      if (error == EEXIST)
        continue;
      return notWritable(errnoMessage(error));
    }
    staged->path = path.str().str();
    staged->lockPath = lock;
    staged->lockFD = fd;
  }
  if (staged->lockFD < 0)
    return notWritable("no unique staging name found");
  return staged;
}

StagedDirectory::~StagedDirectory() {
  if (lockFD < 0)
    return;
  // Before publishing: the abandoned staging; after: the old bundle.
  llvm::sys::fs::remove_directories(path, /*IgnoreErrors=*/true);
  unlockAndRemove(lockPath, lockFD);
}

llvm::Error StagedDirectory::writeFile(llvm::StringRef name,
                                       llvm::StringRef contents) {
  if (published)
    return makeError("the bundle in '" + target + "' is already published");
  if (name.empty() || name.contains('/') || name == "." || name == "..")
    return makeError("'" + name + "' is not a plain file name");
  llvm::SmallString<256> file(path);
  llvm::sys::path::append(file, name);
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return makeError("cannot write '" + file + "': " + errnoMessage(errno));
  return writeSyncClose(fd, file, contents);
}

llvm::Error StagedDirectory::publish() {
  if (published)
    return makeError("the bundle in '" + target + "' is already published");
  llvm::StringRef parent = llvm::sys::path::parent_path(target);
  std::string lock =
      (parent + "/." + llvm::sys::path::filename(target) + ".lock").str();
  int fd, error;
  switch (lockFile(lock, /*create=*/true, /*wait=*/true, fd, error)) {
  case LockState::Locked:
    break;
  case LockState::Foreign:
    return foreignLockError(lock);
  default:
    return makeError("cannot lock '" + lock + "': " + errnoMessage(error));
  }
  llvm::scope_exit unlock([&] { unlockAndRemove(lock, fd); });

  // The output may have changed while the bundle was compiled: another
  // writer published (fine) or someone put files there (refused).
  llvm::Expected<OutputKind> kind = checkOutputDirectory(target, force);
  if (!kind)
    return kind.takeError();
  // The new bundle keeps the directory's permissions (and, where this
  // process may set it, its owner), as editing it in place would.
  struct stat old;
  if (*kind != OutputKind::Missing && ::stat(target.c_str(), &old) == 0) {
    ::chmod(path.c_str(), old.st_mode & 07777);
    if (::chown(path.c_str(), old.st_uid, old.st_gid) < 0) {
      // Only the owner (or root) may give a directory away: keep ours.
    }
  }
  syncDirectory(path);
  unsigned flags =
      *kind == OutputKind::Missing ? RENAME_NOREPLACE : RENAME_EXCHANGE;
  if (::syscall(SYS_renameat2, AT_FDCWD, path.c_str(), AT_FDCWD, target.c_str(),
                flags) < 0) {
    error = errno;
    // How a kernel or file system without the flag answers.
    bool unsupported = error == EINVAL || error == ENOSYS ||
                       error == EOPNOTSUPP || error == ENOTSUP;
    // Without RENAME_NOREPLACE: under the lock, with the target checked
    // missing, a plain rename does the same.
    if (!(unsupported && *kind == OutputKind::Missing &&
          ::rename(path.c_str(), target.c_str()) == 0)) {
      if (unsupported && *kind != OutputKind::Missing)
        return makeError("cannot replace '" + target +
                         "': its file system cannot exchange two directories "
                         "atomically (renameat2 RENAME_EXCHANGE)");
      return makeError("cannot move the bundle into '" + target +
                       "': " + errnoMessage(error));
    }
  }
  published = true;
  syncDirectory(parent);
  // `path` now holds the old bundle (or the empty directory it replaced).
  llvm::sys::fs::remove_directories(path, /*IgnoreErrors=*/true);
  return llvm::Error::success();
}

llvm::Error mlir::mlafp8::writeDirectoryAtomically(
    llvm::StringRef dir,
    const std::vector<std::pair<std::string, std::string>> &files,
    const std::function<llvm::Error(llvm::StringRef)> &check, bool force) {
  llvm::Expected<std::unique_ptr<StagedDirectory>> staged =
      StagedDirectory::create(dir, force);
  if (!staged)
    return staged.takeError();
  for (const auto &[name, contents] : files)
    if (llvm::Error err = (*staged)->writeFile(name, contents))
      return err;
  if (check)
    if (llvm::Error err = check((*staged)->getPath()))
      return err;
  return (*staged)->publish();
}
