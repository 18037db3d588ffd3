// The per-layer make-up of a model: which mixer each layer is (the `arch` of a study expanded
// into a pattern of letters, one a layer) and which layers take RoPE or log-n scaling under a
// positional scheme (`pos`, `logn_scaling`). Plain functions of strings, so that the cell
// config (cell_config.h), the trainer and their tests share one definition.
#pragma once

#include <optional>
#include <string>

namespace onset::model {

// Layer mixers, one letter per layer in a pattern.
inline constexpr char kFullAttention = 'F';
inline constexpr char kSlidingWindow = 'S';
inline constexpr char kLinearAttention = 'L';  // decayed linear attention (linear_attention.h)
inline constexpr char kGatedDeltaNet = 'D';    // Gated DeltaNet (gated_delta_net.h)

// Where the full-attention layer sits in each group of a ratio arch (`swa:3`, `gdn:3`, ...).
inline constexpr const char* kFullLast = "last";    // SSSF
inline constexpr const char* kFullFirst = "first";  // FSSS

// Positional schemes of the `pos` axis (docs/science.md, "The grid axes").
inline constexpr const char* kPosRope = "rope";           // RoPE in every layer
inline constexpr const char* kPosNopeFull = "nope-full";  // NoPE in F layers, RoPE elsewhere
inline constexpr const char* kPosNope = "nope";           // no positional encoding anywhere

// Log-n scaling of queries in NoPE attention layers: none, the F layers, or F and S layers.
inline constexpr const char* kLognOff = "off";
inline constexpr const char* kLognFull = "full";
inline constexpr const char* kLognAll = "all";

// What model.short_conv: true names (a study's default): the recurrent layers, as in the
// reference implementations.
inline constexpr const char* kShortConvRecurrent = "LD";

// Resolves an `arch` value into a per-layer pattern for `layers` layers, or an error message:
//   "full"                     every layer F;
//   "swa", "lightning", "gdn"  ratio 3 of S, L or D layers per F layer (SSSF, LLLF, DDDF);
//   "swa:R", "lightning:R", "gdn:R"  R efficient layers per F layer; R = 0 means no F layer
//                              at all (a pure SWA, linear-attention or DeltaNet model);
//   a pattern of F/S/L/D letters, taken as written.
// The group repeats until `layers` are filled; its size must divide `layers`.
// `full_position` (kFullLast or kFullFirst) places the F layer of ratio archs.
std::optional<std::string> ResolvePattern(const std::string& arch, int layers, std::string* pattern,
                                          const std::string& full_position = kFullLast);

// Whether `full_position` changes the pattern of `arch`: only ratio archs with R >= 1 do.
bool ArchUsesFullPosition(const std::string& arch);

// Whether `pos` is the explicit per-type form: "F:rope", "S:nope,F:rope", ... (each type at
// most once).
bool IsExplicitPos(const std::string& pos);

// Whether `pos` names a scheme: rope, nope-full, nope or the explicit per-type form.
bool IsKnownPos(const std::string& pos);

// Whether a layer of kind `kind` (a pattern letter) applies RoPE under `pos`. L and D layers
// never do: their decay already orders the past. A type the explicit form leaves out takes RoPE.
bool KindUsesRope(char kind, const std::string& pos);

// Whether a layer of kind `kind` scales its queries by log-n under `pos` and `logn_scaling`:
// NoPE F layers unless it is off, NoPE S layers too when it is "all".
bool KindUsesLogn(char kind, const std::string& pos, const std::string& logn_scaling);

// The name of `pos` for a model of `pattern`: schemes that place RoPE in the same layers are
// one model, named by the first of rope, nope, nope-full that does, else "F:rope,S:nope".
std::string CanonicalPos(const std::string& pattern, const std::string& pos);

// The name of `logn_scaling` for a model of `pattern` under `pos`: "off" when it names no layer
// of the model, "full" when it touches F layers only.
std::string CanonicalLognScaling(const std::string& pattern, const std::string& pos,
                                 const std::string& logn_scaling);

}  // namespace onset::model
