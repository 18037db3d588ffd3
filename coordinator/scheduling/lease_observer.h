// What the lease manager tells about the cells it serves, for the mirrors that follow them
// (coordinator/mirror/: TensorBoard, MLflow): points of a cell were stored, an attempt of a cell
// ended. Each call names the study and the cell's id (its content hash).
//
// Implementations must return at once (the callers are the workers' RPCs): note the cell and
// do the work on a thread of their own. Called from any thread.
#pragma once

#include <string>
#include <vector>

namespace onset::coordinator {

class LeaseObserver {
 public:
  virtual ~LeaseObserver() = default;
  virtual void PointsStored(const std::string& study, const std::string& cell_id) = 0;
  virtual void AttemptEnded(const std::string& study, const std::string& cell_id) = 0;
};

// Several observers as one: each call goes to every one, in order.
class LeaseObservers : public LeaseObserver {
 public:
  // Every observer must outlive this one. Add all before the lease manager's first call.
  void Add(LeaseObserver* observer) { observers_.push_back(observer); }
  bool empty() const { return observers_.empty(); }

  void PointsStored(const std::string& study, const std::string& cell_id) override {
    for (LeaseObserver* o : observers_) o->PointsStored(study, cell_id);
  }
  void AttemptEnded(const std::string& study, const std::string& cell_id) override {
    for (LeaseObserver* o : observers_) o->AttemptEnded(study, cell_id);
  }

 private:
  std::vector<LeaseObserver*> observers_;
};

}  // namespace onset::coordinator
