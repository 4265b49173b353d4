//===- Attention.h - Shapes of fused attention ------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The shape rule of attention, written once: flow.attention's type
// inference, host.attention's verifier and the runtime's check of an
// Attention command all apply it. Header-only and plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_ATTENTION_H
#define FLOW_RUNTIME_RULES_ATTENTION_H

#include <cstdint>
#include <string>
#include <vector>

namespace flow {
namespace rules {

inline std::string dimText(int64_t d) { return std::to_string(d); }

/// `[2, 3]`; `Dim` is int64_t or anything with a dimText overload (the
/// compiler's symbolic rules::Extent).
template <typename Dim> std::string shapeText(const std::vector<Dim> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + dimText(shape[i]);
  return s + "]";
}

/// Checks query [..., Lq, D], key [..., Lk, D], value [..., Lk, Dv] (one
/// rank of 2 or more, the same leading dimensions) and, with `mask`, a mask
/// that broadcasts (numpy rules) to the scores [..., Lq, Lk]. Returns why
/// they do not fit, or an empty string and the result's shape
/// [..., Lq, Dv] in `out`. `Dim` is int64_t (the runtime's sizes) or the
/// compiler's rules::Extent (sizes over symbols, where equal means
/// provably equal).
template <typename Dim>
std::string
attentionShapeError(const std::vector<Dim> &q, const std::vector<Dim> &k,
                    const std::vector<Dim> &v, const std::vector<Dim> *mask,
                    std::vector<Dim> &out) {
  size_t rank = q.size();
  if (rank < 2 || k.size() != rank || v.size() != rank)
    return "query, key and value need one rank of 2 or more, got ranks " +
           std::to_string(rank) + ", " + std::to_string(k.size()) + " and " +
           std::to_string(v.size());
  for (size_t i = 0; i + 2 < rank; ++i)
    if (k[i] != q[i] || v[i] != q[i])
      return "query, key and value need the same leading (batch and head) "
             "dimensions, got " +
             shapeText(q) + ", " + shapeText(k) + " and " + shapeText(v);
  if (k[rank - 1] != q[rank - 1])
    return "key rows have " + dimText(k[rank - 1]) +
           " elements but query rows have " + dimText(q[rank - 1]);
  if (v[rank - 2] != k[rank - 2])
    return "value has " + dimText(v[rank - 2]) + " rows but key has " +
           dimText(k[rank - 2]);
  if (mask) {
    std::vector<Dim> scores(q.begin(), q.end() - 1);
    scores.push_back(k[rank - 2]);
    bool fits = mask->size() <= rank;
    for (size_t i = 0; fits && i < mask->size(); ++i) {
      const Dim &m = (*mask)[i], &s = scores[rank - mask->size() + i];
      fits = m == Dim(1) || m == s;
    }
    if (!fits)
      return "mask " + shapeText(*mask) + " does not broadcast to the scores " +
             shapeText(scores);
  }
  out.assign(q.begin(), q.end() - 1);
  out.push_back(v[rank - 1]);
  return "";
}

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_ATTENTION_H
