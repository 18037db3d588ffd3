// One cell config and its id, pinned. The coordinator's tests (grid's CellId) and the trainer's
// (the "cell_id" an export carries) both check against this pin, as no suite links both: the
// two name every cell alike, and a change to the canonical text, which would rename every cell of
// every study, shows here.
#pragma once

namespace onset::testutil {

inline constexpr char kPinnedCellConfig[] =
    R"({"model": {"layers": 2, "d_model": 32, "heads": 2, "seq_len": 16, "arch": "full"},)"
    R"( "eval": {"niah_samples": 0}})";
inline constexpr char kPinnedCellId[] = "9dc95e587d68f315";

}  // namespace onset::testutil
