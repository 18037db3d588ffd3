#include "db/snapshot_stream.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "db/sqlite.h"

namespace onset::db {
namespace {

constexpr char kVfsName[] = "onset-snapshot";
// The header's bytes 18 and 19, the file format's write and read versions: 1 for the rollback
// journal, 2 for WAL.
constexpr int kFormatWriteVersionOffset = 18;
constexpr int kFormatReadVersionOffset = 19;
// The largest page SQLite has: the first page is kept whole so that SQLite may read it back.
constexpr size_t kMaxPageBytes = 65536;

// One stream's destination: the pieces gathered so far and what went to the sink.
struct Stream {
  SnapshotSink* sink = nullptr;
  absl::Status failure;  // the sink's, or why the destination could not do what SQLite asked
  std::string piece;     // not yet handed to the sink
  int64_t piece_offset = 0;
  int64_t size = 0;        // one past the furthest byte written
  std::string first_page;  // as SQLite wrote it (SQLite reads it back to finish the copy)

  bool Flush() {
    if (piece.empty()) return failure.ok();
    if (failure.ok()) failure = sink->Piece(piece_offset, piece);
    piece.clear();
    return failure.ok();
  }
};

// Streams by name, so that the VFS's xOpen finds its stream: the destination is opened as
// "onset-snapshot-N".
std::mutex streams_mu;
std::map<std::string, Stream*>& Streams() {
  static auto* streams = new std::map<std::string, Stream*>();
  return *streams;
}

struct SinkFile {
  sqlite3_file base;
  Stream* stream;
};

Stream* Of(sqlite3_file* file) { return reinterpret_cast<SinkFile*>(file)->stream; }

int SinkClose(sqlite3_file* file) {
  Of(file)->Flush();
  return SQLITE_OK;
}

int SinkRead(sqlite3_file* file, void* out, int n, sqlite3_int64 offset) {
  Stream* s = Of(file);
  const auto end = static_cast<size_t>(offset) + static_cast<size_t>(n);
  if (end <= s->first_page.size()) {
    std::memcpy(out, s->first_page.data() + offset, static_cast<size_t>(n));
    return SQLITE_OK;
  }
  if (offset >= s->size) {  // never written: an empty file reads as zeros, short
    std::memset(out, 0, static_cast<size_t>(n));
    return SQLITE_IOERR_SHORT_READ;
  }
  // Pages other than the first went to the sink and are gone; SQLite's backup writes each once and
  // does not read it back, so this is a change in SQLite that the copy cannot follow.
  if (s->failure.ok()) {
    s->failure = absl::InternalError("the copy read back page bytes at offset " +
                                     std::to_string(offset) + " that it had already sent");
  }
  return SQLITE_IOERR_READ;
}

int SinkWrite(sqlite3_file* file, const void* data, int n, sqlite3_int64 offset) {
  Stream* s = Of(file);
  if (!s->failure.ok()) return SQLITE_IOERR_WRITE;
  const auto* bytes = static_cast<const char*>(data);
  if (offset == 0) s->first_page.assign(bytes, std::min(static_cast<size_t>(n), kMaxPageBytes));
  const bool follows = !s->piece.empty() &&
                       offset == s->piece_offset + static_cast<int64_t>(s->piece.size()) &&
                       s->piece.size() + static_cast<size_t>(n) <= kSnapshotPieceBytes;
  if (!follows) {
    if (!s->Flush()) return SQLITE_IOERR_WRITE;
    s->piece_offset = offset;
  }
  const size_t at = s->piece.size();
  s->piece.append(bytes, static_cast<size_t>(n));
  if (offset == 0 && n > kFormatReadVersionOffset) {
    // The copy is one file in rollback-journal mode, whatever the source's mode is.
    s->piece[at + kFormatWriteVersionOffset] = 1;
    s->piece[at + kFormatReadVersionOffset] = 1;
  }
  s->size = std::max<int64_t>(s->size, offset + n);
  return SQLITE_OK;
}

int SinkTruncate(sqlite3_file* file, sqlite3_int64 size) {
  Stream* s = Of(file);
  if (size >= s->size) return SQLITE_OK;
  if (s->failure.ok()) {
    s->failure = absl::InternalError("the copy was to shrink to " + std::to_string(size) +
                                     " bytes after sending " + std::to_string(s->size));
  }
  return SQLITE_IOERR_TRUNCATE;
}

int SinkSync(sqlite3_file* file, int /*flags*/) {
  return Of(file)->Flush() ? SQLITE_OK : SQLITE_IOERR_FSYNC;
}

int SinkFileSize(sqlite3_file* file, sqlite3_int64* size) {
  *size = Of(file)->size;
  return SQLITE_OK;
}

int SinkLock(sqlite3_file*, int) { return SQLITE_OK; }
int SinkCheckReservedLock(sqlite3_file*, int* out) {
  *out = 0;
  return SQLITE_OK;
}
int SinkFileControl(sqlite3_file*, int, void*) { return SQLITE_NOTFOUND; }
int SinkSectorSize(sqlite3_file*) { return 4096; }
int SinkDeviceCharacteristics(sqlite3_file*) { return 0; }

const sqlite3_io_methods kSinkMethods = {
    1,  // no shared memory, no memory mapping
    SinkClose,
    SinkRead,
    SinkWrite,
    SinkTruncate,
    SinkSync,
    SinkFileSize,
    SinkLock,
    SinkLock,
    SinkCheckReservedLock,
    SinkFileControl,
    SinkSectorSize,
    SinkDeviceCharacteristics,
    // Version 1: no shared memory, no memory mapping.
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

int VfsOpen(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  file->pMethods = nullptr;
  // The destination is opened with journal_mode=OFF: only its main file exists.
  if (name == nullptr || (flags & SQLITE_OPEN_MAIN_DB) == 0) return SQLITE_CANTOPEN;
  std::lock_guard<std::mutex> lock(streams_mu);
  auto it = Streams().find(name);
  if (it == Streams().end()) return SQLITE_CANTOPEN;
  auto* sink_file = reinterpret_cast<SinkFile*>(file);
  sink_file->stream = it->second;
  file->pMethods = &kSinkMethods;
  if (out_flags != nullptr) *out_flags = flags;
  return SQLITE_OK;
}

int VfsDelete(sqlite3_vfs*, const char*, int) { return SQLITE_OK; }

int VfsAccess(sqlite3_vfs*, const char*, int, int* out) {
  *out = 0;  // no journal or WAL beside the destination
  return SQLITE_OK;
}

int VfsFullPathname(sqlite3_vfs*, const char* name, int size, char* out) {
  sqlite3_snprintf(size, out, "%s", name);
  return SQLITE_OK;
}

// Registered once, never unregistered: the default VFS's randomness, sleep and clock, the sink's
// files.
sqlite3_vfs* SinkVfs() {
  static sqlite3_vfs* vfs = [] {
    sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
    auto* v = new sqlite3_vfs(*base);
    v->iVersion = 1;
    v->szOsFile = std::max<int>(static_cast<int>(sizeof(SinkFile)), base->szOsFile);
    v->pNext = nullptr;
    v->zName = kVfsName;
    v->pAppData = nullptr;
    v->xOpen = VfsOpen;
    v->xDelete = VfsDelete;
    v->xAccess = VfsAccess;
    v->xFullPathname = VfsFullPathname;
    v->xDlOpen = nullptr;
    v->xDlError = nullptr;
    v->xDlSym = nullptr;
    v->xDlClose = nullptr;
    sqlite3_vfs_register(v, /*makeDflt=*/0);
    return v;
  }();
  return vfs;
}

absl::StatusOr<int64_t> PragmaInt(Connection& db, const char* sql) {
  absl::StatusOr<Statement> stmt = db.Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError(std::string(sql) + " returned no row");
  return stmt->Int(0);
}

// Registers `stream` under a fresh name for as long as it lives.
class Registration {
 public:
  explicit Registration(Stream* stream) {
    static std::atomic<int64_t> next{0};
    name_ = std::string(kVfsName) + "-" + std::to_string(++next);
    std::lock_guard<std::mutex> lock(streams_mu);
    Streams()[name_] = stream;
  }
  ~Registration() {
    std::lock_guard<std::mutex> lock(streams_mu);
    Streams().erase(name_);
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace

absl::Status StreamSnapshot(const std::string& db_path, SnapshotSink& sink) {
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> source = Connection::Open(db_path, read_only);
  if (!source.ok()) return source.status();
  Connection& src = **source;
  // One read transaction for the size and the copy: the backup uses the one that is open.
  if (absl::Status s = src.Exec("BEGIN"); !s.ok()) return s;
  struct EndRead {
    Connection& db;
    ~EndRead() { (void)db.Exec("ROLLBACK"); }
  } end_read{src};
  absl::StatusOr<int64_t> schema_objects = PragmaInt(src, "SELECT COUNT(*) FROM sqlite_schema");
  if (!schema_objects.ok()) return schema_objects.status();
  SnapshotInfo info;
  absl::StatusOr<int64_t> page_size = PragmaInt(src, "PRAGMA page_size");
  if (!page_size.ok()) return page_size.status();
  absl::StatusOr<int64_t> pages = PragmaInt(src, "PRAGMA page_count");
  if (!pages.ok()) return pages.status();
  info.page_size = *page_size;
  info.bytes = *page_size * *pages;
  if (absl::Status s = sink.Start(info); !s.ok()) return s;

  Stream stream;
  stream.sink = &sink;
  stream.piece.reserve(kSnapshotPieceBytes);
  Registration registration(&stream);
  sqlite3* dest = nullptr;
  int rc = sqlite3_open_v2(registration.name().c_str(), &dest,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, SinkVfs()->zName);
  struct CloseDest {
    sqlite3*& db;
    ~CloseDest() { sqlite3_close(db); }
  } close_dest{dest};
  auto failed = [&](const std::string& what) -> absl::Status {
    if (!stream.failure.ok()) return stream.failure;
    return absl::InternalError("database " + db_path + ": " + what + ": " +
                               (dest != nullptr ? sqlite3_errmsg(dest) : sqlite3_errstr(rc)));
  };
  if (rc != SQLITE_OK) return failed("opening the copy's stream");
  // Nothing to roll back into: the copy has no journal, only pages.
  if (sqlite3_exec(dest, "PRAGMA journal_mode=OFF", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return failed("setting up the copy's stream");
  }
  sqlite3_backup* backup = sqlite3_backup_init(dest, "main", src.handle(), "main");
  if (backup == nullptr) return failed("starting the copy");
  rc = sqlite3_backup_step(backup, -1);
  const int finished = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE || finished != SQLITE_OK) return failed("copying");
  // The last piece goes when the destination closes.
  sqlite3_close(dest);
  dest = nullptr;
  if (!stream.failure.ok()) return stream.failure;
  if (stream.size != info.bytes) {
    return absl::InternalError("database " + db_path + ": the copy has " +
                               std::to_string(stream.size) + " bytes, not the " +
                               std::to_string(info.bytes) + " its pages make");
  }
  return absl::OkStatus();
}

}  // namespace onset::db
