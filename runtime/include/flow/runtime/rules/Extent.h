//===- Extent.h - Symbolic tensor extents -----------------------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// A dimension's extent when it is not a number: a polynomial with integer
// coefficients over named size symbols (`batch`, `seq`, `2*seq + 1`,
// `batch*seq`). Written once: the flow dialect's shape rules compute with it
// (its normal form makes equal extents compare equal), the `#flow.shape`
// encoding stores its text, and the runtime parses that text and evaluates
// it for the sizes a call binds. Header-only and plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_RUNTIME_RULES_EXTENT_H
#define FLOW_RUNTIME_RULES_EXTENT_H

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace flow {
namespace rules {

/// Whether `name` may name a size symbol: a letter or `_`, then letters,
/// digits or `_`.
inline bool isSymbolName(const std::string &name) {
  if (name.empty() || !(std::isalpha((unsigned char)name[0]) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum((unsigned char)c) || c == '_'))
      return false;
  return true;
}

/// Parses an extent from `tokens` (sums and products of integers, symbol
/// names and parenthesized extents; a leading '-' negates). `Tokens` has
///   bool eat(char c)              consumes `c` ('+', '-', '*', '(', ')')
///                                 when it comes next;
///   int number(int64_t &v)        1 for an integer read, 0 for none next,
///                                 -1 for one that is reported bad;
///   bool name(std::string &n)     reads a name when one comes next;
///   bool expectedFactor()         reports that no operand came; false;
///   bool fail(const std::string&) reports `what`; false.
/// Extent::parse reads text through it; the compiler's #flow.shape parser
/// reads MLIR tokens through it.
class Extent;
template <typename Tokens> bool parseExtent(Tokens &tokens, Extent &out);

/// An extent: a sum of terms, each a non-zero integer coefficient times a
/// product of symbols. The representation is a normal form: two extents
/// are the same polynomial exactly when they compare equal. Arithmetic that
/// overflows int64 leaves the extent invalid (`valid()` is false), and every
/// result computed from an invalid extent is invalid too.
class Extent {
public:
  /// A product of symbols: names sorted, a name repeated for its power.
  using Monomial = std::vector<std::string>;

  Extent() = default;
  Extent(int64_t value) {
    if (value)
      terms_[{}] = value;
  }
  static Extent symbol(const std::string &name) {
    Extent e;
    e.terms_[{name}] = 1;
    return e;
  }

  bool valid() const { return valid_; }
  bool isConstant() const {
    return valid_ && (terms_.empty() ||
                      (terms_.size() == 1 && terms_.begin()->first.empty()));
  }
  /// The value of a constant extent (0 for one that is not constant).
  int64_t constant() const {
    auto it = terms_.find({});
    return isConstant() && it != terms_.end() ? it->second : 0;
  }
  /// Whether this is exactly the constant `value`.
  bool is(int64_t value) const { return isConstant() && constant() == value; }

  const std::map<Monomial, int64_t> &terms() const { return terms_; }

  /// The symbols the extent mentions, sorted.
  std::vector<std::string> symbols() const {
    std::set<std::string> names;
    for (const auto &term : terms_)
      names.insert(term.first.begin(), term.first.end());
    return {names.begin(), names.end()};
  }

  friend Extent operator+(const Extent &a, const Extent &b) {
    Extent r = a;
    r.valid_ = a.valid_ && b.valid_;
    for (const auto &term : b.terms_)
      r.addTerm(term.first, term.second);
    return r;
  }
  friend Extent operator-(const Extent &a, const Extent &b) {
    return a + b * Extent(-1);
  }
  friend Extent operator*(const Extent &a, const Extent &b) {
    Extent r;
    r.valid_ = a.valid_ && b.valid_;
    for (const auto &x : a.terms_) {
      for (const auto &y : b.terms_) {
        int64_t c;
        if (__builtin_mul_overflow(x.second, y.second, &c)) {
          r.valid_ = false;
          continue;
        }
        Monomial m = x.first;
        m.insert(m.end(), y.first.begin(), y.first.end());
        std::sort(m.begin(), m.end());
        r.addTerm(m, c);
      }
    }
    return r;
  }
  friend bool operator==(const Extent &a, const Extent &b) {
    return a.valid_ == b.valid_ && a.terms_ == b.terms_;
  }
  friend bool operator!=(const Extent &a, const Extent &b) { return !(a == b); }

  /// This extent divided by `divisor` (> 0) when every coefficient is a
  /// multiple of it; false otherwise.
  bool divideExactly(int64_t divisor, Extent &out) const {
    if (divisor <= 0 || !valid_)
      return false;
    Extent r;
    for (const auto &term : terms_) {
      if (term.second % divisor)
        return false;
      r.terms_[term.first] = term.second / divisor;
    }
    out = r;
    return true;
  }

  /// The extent's text in its normal form: terms of higher degree first
  /// (names in order within a degree), the constant last: `batch*seq`,
  /// `2*seq + 1`, `seq - 1`.
  std::string str() const {
    if (!valid_)
      return "<overflow>";
    if (terms_.empty())
      return "0";
    std::vector<std::pair<Monomial, int64_t>> order(terms_.begin(),
                                                    terms_.end());
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) {
                       return a.first.size() > b.first.size();
                     });
    std::string s;
    for (size_t i = 0; i < order.size(); ++i) {
      const Monomial &m = order[i].first;
      int64_t c = order[i].second;
      bool negative = c < 0;
      uint64_t magnitude = negative ? 0 - (uint64_t)c : (uint64_t)c;
      if (i == 0)
        s += negative ? "-" : "";
      else
        s += negative ? " - " : " + ";
      std::string term;
      if (magnitude != 1 || m.empty())
        term = std::to_string(magnitude);
      for (const std::string &name : m)
        term += (term.empty() ? "" : "*") + name;
      s += term;
    }
    return s;
  }

  /// Parses an extent's text (any spacing; `+`, `-`, `*`, parentheses,
  /// integers and symbol names). Returns false with `error` set when the
  /// text is not an extent.
  static bool parse(const std::string &text, Extent &out, std::string &error) {
    TextTokens p{text, 0, error};
    Extent e;
    if (!parseExtent(p, e))
      return false;
    p.skipSpace();
    if (p.pos != text.size()) {
      error = "unexpected '" + text.substr(p.pos, 1) + "' at offset " +
              std::to_string(p.pos) + " of extent '" + text + "'";
      return false;
    }
    if (!e.valid()) {
      error = "extent '" + text + "' overflows a 64-bit integer";
      return false;
    }
    out = e;
    return true;
  }

  /// The extent's value when `lookup(name, value)` gives each symbol's
  /// value (returning false for a symbol it does not know). Returns false
  /// for an unknown symbol or an overflow.
  template <typename Lookup>
  bool evaluate(Lookup &&lookup, int64_t &out) const {
    if (!valid_)
      return false;
    int64_t sum = 0;
    for (const auto &term : terms_) {
      int64_t product = term.second;
      for (const std::string &name : term.first) {
        int64_t v;
        if (!lookup(name, v) || __builtin_mul_overflow(product, v, &product))
          return false;
      }
      if (__builtin_add_overflow(sum, product, &sum))
        return false;
    }
    out = sum;
    return true;
  }

  /// The least and greatest value over symbol ranges that
  /// `range(name, lo, hi)` gives (every symbol at least 0). Returns false
  /// for an unknown symbol or an overflow.
  template <typename Range>
  bool bounds(Range &&range, int64_t &lo, int64_t &hi) const {
    if (!valid_)
      return false;
    int64_t sumLo = 0, sumHi = 0;
    for (const auto &term : terms_) {
      int64_t pLo = 1, pHi = 1;
      for (const std::string &name : term.first) {
        int64_t a, b;
        if (!range(name, a, b) || a < 0 || b < a ||
            __builtin_mul_overflow(pLo, a, &pLo) ||
            __builtin_mul_overflow(pHi, b, &pHi))
          return false;
      }
      int64_t x, y;
      if (__builtin_mul_overflow(pLo, term.second, &x) ||
          __builtin_mul_overflow(pHi, term.second, &y))
        return false;
      if (x > y)
        std::swap(x, y);
      if (__builtin_add_overflow(sumLo, x, &sumLo) ||
          __builtin_add_overflow(sumHi, y, &sumHi))
        return false;
    }
    lo = sumLo;
    hi = sumHi;
    return true;
  }

private:
  void addTerm(const Monomial &m, int64_t c) {
    int64_t &slot = terms_[m];
    if (__builtin_add_overflow(slot, c, &slot))
      valid_ = false;
    if (slot == 0)
      terms_.erase(m);
  }

  /// The tokens of an extent's text, for parseExtent.
  struct TextTokens {
    const std::string &text;
    size_t pos;
    std::string &error;

    void skipSpace() {
      while (pos < text.size() && std::isspace((unsigned char)text[pos]))
        ++pos;
    }
    bool eat(char c) {
      skipSpace();
      if (pos < text.size() && text[pos] == c) {
        ++pos;
        return true;
      }
      return false;
    }
    int number(int64_t &v) {
      skipSpace();
      if (pos >= text.size() || !std::isdigit((unsigned char)text[pos]))
        return 0;
      v = 0;
      while (pos < text.size() && std::isdigit((unsigned char)text[pos])) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, text[pos] - '0', &v))
          return fail("an integer overflows"), -1;
        ++pos;
      }
      return 1;
    }
    bool name(std::string &n) {
      skipSpace();
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum((unsigned char)text[pos]) || text[pos] == '_'))
        ++pos;
      n = text.substr(start, pos - start);
      if (!n.empty())
        return true;
      pos = start;
      return false;
    }
    bool expectedFactor() {
      return fail("expected a number, a symbol name or '('");
    }
    bool fail(const std::string &what) {
      error = what + " at offset " + std::to_string(pos) + " of extent '" +
              text + "'";
      return false;
    }
  };

  std::map<Monomial, int64_t> terms_;
  bool valid_ = true;
};

template <typename Tokens> bool parseExtentFactor(Tokens &t, Extent &out) {
  if (t.eat('-')) {
    if (!parseExtentFactor(t, out))
      return false;
    out = out * Extent(-1);
    return true;
  }
  if (t.eat('('))
    return parseExtent(t, out) && (t.eat(')') || t.fail("expected ')'"));
  int64_t value;
  switch (t.number(value)) {
  case 1:
    out = Extent(value);
    return true;
  case -1:
    return false;
  default:
    break;
  }
  std::string name;
  if (!t.name(name))
    return t.expectedFactor();
  if (!isSymbolName(name))
    return t.fail("'" + name + "' is not a size symbol name");
  out = Extent::symbol(name);
  return true;
}

template <typename Tokens> bool parseExtentProduct(Tokens &t, Extent &out) {
  if (!parseExtentFactor(t, out))
    return false;
  while (t.eat('*')) {
    Extent rhs;
    if (!parseExtentFactor(t, rhs))
      return false;
    out = out * rhs;
  }
  return true;
}

template <typename Tokens> bool parseExtent(Tokens &t, Extent &out) {
  if (!parseExtentProduct(t, out))
    return false;
  for (;;) {
    bool plus = t.eat('+');
    if (!plus && !t.eat('-'))
      return true;
    Extent rhs;
    if (!parseExtentProduct(t, rhs))
      return false;
    out = plus ? out + rhs : out - rhs;
  }
}

/// An extent's text, as shape messages print a dimension.
inline std::string dimText(const Extent &e) { return e.str(); }

} // namespace rules
} // namespace flow

#endif // FLOW_RUNTIME_RULES_EXTENT_H
