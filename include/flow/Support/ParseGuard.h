//===- ParseGuard.h - Inputs the MLIR parser crashes on ---------*- C++ -*-===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//
//
// The MLIR 22 parser has inputs it crashes on instead of reporting an error.
// Flow's tools read untrusted text, so they look for the known ones first and
// refuse them with a located error; the Python extension also parses user
// text in a child process first (parseSurvives), so that an unknown parser
// crash becomes an exception rather than the end of the caller's process.
//
// Known today: a dense array attribute whose element type is `index`
// (`array<index: 1, 2>`, also through a type alias `!t = index`):
// Parser::parseDenseArrayAttr asks `index` for its bit width and segfaults.
//
//===----------------------------------------------------------------------===//

#ifndef FLOW_SUPPORT_PARSEGUARD_H
#define FLOW_SUPPORT_PARSEGUARD_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace mlir {
class DialectRegistry;
namespace flow {

/// A construct the MLIR parser would crash on: where it starts in the text,
/// and why it is refused.
struct ParserHazard {
  size_t offset = 0;
  std::string message;
};

/// The first known parser hazard in MLIR source \p text (outside string
/// literals and comments), or nothing.
std::optional<ParserHazard> findParserHazard(llvm::StringRef text);

/// "NAME:LINE:COL: error: MESSAGE" for \p hazard in \p text.
std::string formatParserHazard(llvm::StringRef name, llvm::StringRef text,
                               const ParserHazard &hazard);

/// Parses \p text (dialects from \p registry) in a forked child process and
/// reports whether the parser returned, with success or an error, rather
/// than crashing. When it crashed, \p why says how (the signal). The child
/// only parses; the caller then parses for real.
bool parseSurvives(llvm::StringRef text, const DialectRegistry &registry,
                   std::string &why);

} // namespace flow
} // namespace mlir

#endif // FLOW_SUPPORT_PARSEGUARD_H
