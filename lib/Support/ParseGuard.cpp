//===- ParseGuard.cpp - Inputs the MLIR parser crashes on -----------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Support/ParseGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::flow;

namespace {

bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

/// Walks MLIR source text, skipping string literals and `//` comments.
class Scanner {
public:
  explicit Scanner(llvm::StringRef text) : text(text) {}

  /// Moves to the next position that is code; false at the end.
  bool next() {
    if (pos < text.size())
      ++pos;
    skipNonCode();
    return pos < text.size();
  }
  bool start() {
    pos = 0;
    skipNonCode();
    return pos < text.size();
  }
  size_t position() const { return pos; }
  llvm::StringRef rest() const { return text.drop_front(pos); }
  /// True if a token starting here is not the tail of a longer identifier.
  bool atTokenStart() const {
    return pos == 0 || !isIdentifierChar(text[pos - 1]);
  }
  /// True if only whitespace precedes this position on its line.
  bool atLineStart() const {
    for (size_t i = pos; i > 0; --i) {
      char c = text[i - 1];
      if (c == '\n')
        return true;
      if (c != ' ' && c != '\t' && c != '\r')
        return false;
    }
    return true;
  }

private:
  void skipNonCode() {
    while (pos < text.size()) {
      if (text[pos] == '"') {
        // A string literal, with backslash escapes.
        for (++pos; pos < text.size() && text[pos] != '"'; ++pos)
          if (text[pos] == '\\')
            ++pos;
        if (pos < text.size())
          ++pos;
        continue;
      }
      if (text.drop_front(pos).starts_with("//")) {
        size_t end = text.find('\n', pos);
        pos = end == llvm::StringRef::npos ? text.size() : end + 1;
        continue;
      }
      return;
    }
  }

  llvm::StringRef text;
  size_t pos = 0;
};

/// Consumes \p word from the front of \p s if it is a whole token there.
bool consumeWord(llvm::StringRef &s, llvm::StringRef word) {
  if (!s.starts_with(word) ||
      (s.size() > word.size() && isIdentifierChar(s[word.size()])))
    return false;
  s = s.drop_front(word.size());
  return true;
}

/// Consumes `!name` from the front of \p s and returns the name.
std::optional<llvm::StringRef> consumeAlias(llvm::StringRef &s) {
  if (!s.consume_front("!"))
    return std::nullopt;
  size_t n = 0;
  while (n < s.size() && isIdentifierChar(s[n]))
    ++n;
  if (n == 0)
    return std::nullopt;
  llvm::StringRef name = s.take_front(n);
  s = s.drop_front(n);
  return name;
}

} // namespace

std::optional<ParserHazard> mlir::flow::findParserHazard(llvm::StringRef text) {
  // Type aliases that stand for `index`: `!a = index`, `!b = !a`.
  llvm::StringMap<std::string> aliasOf;
  llvm::StringSet<> indexAliases;
  Scanner scan(text);
  for (bool more = scan.start(); more; more = scan.next()) {
    if (text[scan.position()] != '!' || !scan.atLineStart())
      continue;
    llvm::StringRef s = scan.rest();
    std::optional<llvm::StringRef> name = consumeAlias(s);
    if (!name)
      continue;
    s = s.ltrim();
    if (!s.consume_front("="))
      continue;
    s = s.ltrim();
    if (consumeWord(s, "index"))
      indexAliases.insert(*name);
    else if (std::optional<llvm::StringRef> target = consumeAlias(s))
      aliasOf[*name] = target->str();
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &entry : aliasOf)
      if (indexAliases.contains(entry.getValue()) &&
          indexAliases.insert(entry.getKey()).second)
        changed = true;
  }

  // `array<index` or `array<!alias` with an alias of index.
  for (bool more = scan.start(); more; more = scan.next()) {
    if (text[scan.position()] != 'a' || !scan.atTokenStart())
      continue;
    llvm::StringRef s = scan.rest();
    if (!consumeWord(s, "array"))
      continue;
    s = s.ltrim();
    if (!s.consume_front("<"))
      continue;
    s = s.ltrim();
    bool isIndex = consumeWord(s, "index");
    if (!isIndex)
      if (std::optional<llvm::StringRef> alias = consumeAlias(s))
        isIndex = indexAliases.contains(*alias);
    if (isIndex)
      return ParserHazard{scan.position(),
                          "dense arrays of 'index' elements are not "
                          "supported (the MLIR 22 parser crashes on them); "
                          "use array<i64: ...>"};
  }
  return std::nullopt;
}

std::string mlir::flow::formatParserHazard(llvm::StringRef name,
                                           llvm::StringRef text,
                                           const ParserHazard &hazard) {
  llvm::StringRef before = text.take_front(hazard.offset);
  size_t line = before.count('\n') + 1;
  size_t lineStart = before.rfind('\n');
  size_t column = lineStart == llvm::StringRef::npos
                      ? hazard.offset + 1
                      : hazard.offset - lineStart;
  return (name + ":" + llvm::Twine(line) + ":" + llvm::Twine(column) +
          ": error: " + hazard.message)
      .str();
}

bool mlir::flow::parseSurvives(llvm::StringRef text,
                               const DialectRegistry &registry,
                               std::string &why) {
  pid_t child = ::fork();
  if (child < 0) {
    // No child to try it in: parse in this process, as without the guard.
    return true;
  }
  if (child == 0) {
    // The child: parse quietly, one thread, and leave without running any
    // of the parent's exit handlers. Tests make it crash on purpose to
    // check that the parent survives.
    if (std::getenv("FLOW_PARSE_GUARD_CRASH_FOR_TESTING"))
      std::raise(SIGSEGV);
    MLIRContext context(registry, MLIRContext::Threading::DISABLED);
    context.loadAllAvailableDialects();
    ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) {
      return success();
    });
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(text, "<input>",
                                         /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    ParserConfig config(&context, /*verifyAfterParse=*/true);
    (void)parseSourceFile<ModuleOp>(sourceMgr, config);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR)
      return true;
  }
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    why = "the MLIR parser crashed (signal " + std::to_string(signal) + ", " +
          strsignal(signal) + ") on this input";
    return false;
  }
  // The child exits 0 whatever the parser said; anything else is a crash a
  // handler turned into an exit (a sanitizer's, for instance).
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    why = "the MLIR parser crashed (its process exited with status " +
          std::to_string(WEXITSTATUS(status)) + ") on this input";
    return false;
  }
  return true;
}
