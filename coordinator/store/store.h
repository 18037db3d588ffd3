// The coordinator's durable state, as domain operations, by area: each area is an interface of
// its own with its records (study_store.h, worker_store.h, lease_store.h, cell_request_store.h,
// result_store.h, feed_store.h, log_store.h, instance_store.h, access_store.h), and every
// consumer takes only the areas it uses. No gRPC or SQLite here: SqliteStore implements them
// together (so that one transaction can span areas where the cell lifecycle needs it); tests fake
// only the areas they change.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include "coordinator/store/access_store.h"
#include "coordinator/store/cell_request_store.h"
#include "coordinator/store/feed_store.h"
#include "coordinator/store/instance_store.h"
#include "coordinator/store/lease_store.h"
#include "coordinator/store/log_store.h"
#include "coordinator/store/result_store.h"
#include "coordinator/store/study_store.h"
#include "coordinator/store/worker_store.h"

namespace onset::coordinator {

// Every area at once: what an implementation provides and what wiring passes around.
class Store : public StudyStore,
              public WorkerStore,
              public LeaseStore,
              public CellRequestStore,
              public ResultStore,
              public FeedStore,
              public LogStore,
              public InstanceStore,
              public AccessStore {
 public:
  ~Store() override = default;
};

}  // namespace onset::coordinator
