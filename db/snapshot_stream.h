// A database as it is at one commit, streamed in pieces rather than written to a file: what the
// Backup call sends to a client and what a rotating backup writes into its directory, with no
// copy of the database on the database's own disk (docs/operating-onsetd.md, "Backup and
// restore").
//
// How: a read-only connection of its own opens one read transaction on the database, and
// SQLite's online backup API copies every page under it into a destination whose file is no
// file: an SQLite VFS ("onset-snapshot") whose writes go to the SnapshotSink instead of a disk.
// In WAL mode the read blocks no writer (leases, heartbeats and points go on; the WAL grows until
// the copy ends, since no checkpoint can pass it). Writes of neighbouring pages are gathered into
// pieces of at most kSnapshotPieceBytes, so a sink sees few calls and the memory the stream holds
// is one piece.
//
// The pieces are the bytes of a database file at their offsets: in ascending order, except that
// the first page (the header) may come again at the end. Written at their offsets they make a
// whole database in rollback-journal mode (the header's file format bytes say so, whatever the
// source's journal mode), which SQLite opens as it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace onset::db {

inline constexpr size_t kSnapshotPieceBytes = 1 << 20;

// What the copy is: its size is known before the first piece.
struct SnapshotInfo {
  int64_t bytes = 0;
  int64_t page_size = 0;  // 0 when not known (a stream received from elsewhere)
};

// Receives one stream. Called on the thread that runs StreamSnapshot.
class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // Before the first piece. Returning a status other than OK stops the stream with it.
  virtual absl::Status Start(const SnapshotInfo& info) = 0;
  // The bytes of the copy at `offset`. Returning a status other than OK stops the stream with it.
  virtual absl::Status Piece(int64_t offset, std::string_view bytes) = 0;
};

// Streams the database at `db_path` into `sink` as of one commit. OK once every byte of the copy
// went to the sink; the sink's own status when it stopped the stream; otherwise an error naming
// the database. Thread-safe: streams of several databases, or of one, may run at once.
absl::Status StreamSnapshot(const std::string& db_path, SnapshotSink& sink);

}  // namespace onset::db
