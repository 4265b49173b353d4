//===- SbpPlanGraph.cpp - Draw a mesh function's SBP plan as SVG ----------===//
//
// Part of the Flow project.
//
// `flow-compile --sbp-plan-graph=FILE.svg`: every op of each mesh function
// in program order, one row each, filled by the SBP of its result; every
// use an edge on the right, red where the value is boxed by a collective
// (labelled with the collectives), blue and dashed where a device only
// takes its piece, grey where nothing moves.
//
//===----------------------------------------------------------------------===//

#include "flow/Dialect/Flow/IR/FlowOps.h"
#include "flow/Dialect/Flow/IR/FlowSbp.h"
#include "flow/Pipelines/Pipelines.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::flow;

namespace {
std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// A fill for a layout: grey all-B, orange with a partial value, else a
/// colour per split dimension (of the outermost split axis).
StringRef fill(ArrayRef<SbpDim> sbp) {
  static const char *splits[] = {"#8ecae6", "#a7c957", "#cdb4db", "#ffd166",
                                 "#90e0ef"};
  if (llvm::any_of(sbp, [](SbpDim d) { return d.isPartial(); }))
    return "#f4a261";
  for (SbpDim d : sbp)
    if (d.isSplit())
      return splits[std::min<int64_t>(d.dim, 4)];
  return "#e0e0e0";
}

std::optional<NdSbp> layoutOf(Value value, func::FuncOp func) {
  StringRef name = FlowDialect::getSbpAttrName();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (auto sbp = func.getArgAttrOfType<SbpAttr>(arg.getArgNumber(), name))
      return NdSbp(sbp.getDims());
    return std::nullopt;
  }
  Operation *op = value.getDefiningOp();
  if (auto annotate = dyn_cast<AnnotateOp>(op))
    return NdSbp(annotate.getSbp().getDims());
  auto results = op->getAttrOfType<ArrayAttr>(name);
  unsigned n = cast<OpResult>(value).getResultNumber();
  if (!results || n >= results.size())
    return std::nullopt;
  if (auto sbp = dyn_cast<SbpAttr>(results[n]))
    return NdSbp(sbp.getDims());
  return std::nullopt;
}

std::optional<NdSbp> wantedBy(OpOperand &use, func::FuncOp func) {
  Operation *user = use.getOwner();
  if (auto annotate = dyn_cast<AnnotateOp>(user))
    return NdSbp(annotate.getSbp().getDims());
  if (isa<func::ReturnOp>(user)) {
    if (auto sbp = func.getResultAttrOfType<SbpAttr>(
            use.getOperandNumber(), FlowDialect::getSbpAttrName()))
      return NdSbp(sbp.getDims());
    return std::nullopt;
  }
  auto operands =
      user->getAttrOfType<ArrayAttr>(FlowDialect::getOperandSbpAttrName());
  if (!operands || use.getOperandNumber() >= operands.size())
    return std::nullopt;
  if (auto sbp = dyn_cast<SbpAttr>(operands[use.getOperandNumber()]))
    return NdSbp(sbp.getDims());
  return std::nullopt;
}
} // namespace

bool mlir::flow::writeSbpPlanGraph(raw_ostream &os, ModuleOp module) {
  constexpr int kRow = 26, kBoxWidth = 420, kLeft = 60, kTop = 70;
  struct Row {
    std::string label, sbp;
    StringRef fill;
  };
  struct Edge {
    int from, to;
    std::string label;
    enum { None, Local, Collective } kind;
  };
  struct Graph {
    std::string name, mesh;
    std::vector<Row> rows;
    std::vector<Edge> edges;
  };
  std::vector<Graph> graphs;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto meshRef = func->getAttrOfType<FlatSymbolRefAttr>(
        FlowDialect::getMeshAttrName());
    MeshOp mesh = meshRef ? lookupMesh(func, meshRef) : MeshOp();
    if (!mesh || func.isExternal() || !func.getBody().hasOneBlock())
      continue;
    Graph g;
    g.name = func.getSymName().str();
    g.mesh = llvm::join(llvm::map_range(mesh.getShape(),
                                        [](int64_t n) { return std::to_string(n); }),
                        "x");
    DenseMap<Value, int> rowOf;
    auto typeText = [](Type type) {
      std::string s;
      llvm::raw_string_ostream os(s);
      if (auto t = dyn_cast<RankedTensorType>(type)) {
        for (int64_t n : t.getShape())
          os << n << "x";
        os << t.getElementType();
      }
      return s;
    };
    for (BlockArgument arg : func.getArguments()) {
      std::optional<NdSbp> sbp = layoutOf(arg, func);
      NdSbp layout = sbp ? *sbp : broadcastSbp(mesh.getShape().size());
      rowOf[arg] = g.rows.size();
      g.rows.push_back({"argument " + std::to_string(arg.getArgNumber()) +
                            " : " + typeText(arg.getType()),
                        ndSbpText(layout), fill(layout)});
    }
    Block &body = func.getBody().front();
    for (Operation &op : body) {
      if (op.getNumResults() == 0 && !isa<func::ReturnOp>(op))
        continue;
      int row = g.rows.size();
      if (isa<func::ReturnOp>(op)) {
        g.rows.push_back({"return", "", "#ffffff"});
      } else {
        std::optional<NdSbp> sbp = layoutOf(op.getResult(0), func);
        NdSbp layout = sbp ? *sbp : broadcastSbp(mesh.getShape().size());
        g.rows.push_back({op.getName().getStringRef().str() + " : " +
                              typeText(op.getResult(0).getType()),
                          ndSbpText(layout), fill(layout)});
        for (Value result : op.getResults())
          rowOf[result] = row;
      }
      for (OpOperand &use : op.getOpOperands()) {
        auto it = rowOf.find(use.get());
        if (it == rowOf.end())
          continue;
        Edge edge{it->second, row, "", Edge::None};
        std::optional<NdSbp> from = layoutOf(use.get(), func);
        std::optional<NdSbp> to = wantedBy(use, func);
        if (!from)
          from = broadcastSbp(mesh.getShape().size());
        if (!to)
          to = broadcastSbp(mesh.getShape().size());
        auto type = dyn_cast<RankedTensorType>(use.get().getType());
        if (type && *from != *to) {
          SmallVector<std::string> kinds;
          forEachBoxingStep(*from, *to, type, mesh.getShape(),
                            defaultMeshSpec(),
                            [&](unsigned axis, SbpDim a, SbpDim b, double) {
                              StringRef kind = boxingStepKind(a, b);
                              if (kind != "local")
                                kinds.push_back(kind.str() + " on axis " +
                                                std::to_string(axis));
                            });
          edge.kind = kinds.empty() ? Edge::Local : Edge::Collective;
          edge.label = kinds.empty() ? "slice " + ndSbpText(*from) + " -> " +
                                           ndSbpText(*to)
                                     : llvm::join(kinds, ", ");
        }
        g.edges.push_back(edge);
      }
    }
    graphs.push_back(std::move(g));
  }
  if (graphs.empty())
    return false;

  // Graphs side by side, each a column of rows with its edges to the
  // right.
  constexpr int kColumn = kBoxWidth + 520;
  size_t tallest = 0;
  for (const Graph &g : graphs)
    tallest = std::max(tallest, g.rows.size());
  int width = kLeft + kColumn * graphs.size();
  int height = kTop + kRow * tallest + 40;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"monospace\" "
     << "font-size=\"11\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // The legend.
  struct Key {
    const char *fill, *text;
  } keys[] = {{"#e0e0e0", "B"},        {"#8ecae6", "S(0)"},
              {"#a7c957", "S(1)"},     {"#cdb4db", "S(2)"},
              {"#ffd166", "S(3)"},     {"#f4a261", "P (partial)"}};
  int x = kLeft;
  for (const Key &k : keys) {
    os << "<rect x=\"" << x << "\" y=\"10\" width=\"14\" height=\"14\" fill=\""
       << k.fill << "\" stroke=\"#555\"/><text x=\"" << x + 18
       << "\" y=\"21\">" << escape(k.text) << "</text>\n";
    x += 90;
  }
  os << "<text x=\"" << x << "\" y=\"21\"><tspan fill=\"#c1121f\">red: a "
        "collective</tspan>, <tspan fill=\"#1d4ed8\">blue dashed: a local "
        "slice</tspan>, grey: nothing moves</text>\n";
  for (auto [gi, g] : llvm::enumerate(graphs)) {
    int left = kLeft + kColumn * gi;
    os << "<text x=\"" << left << "\" y=\"" << kTop - 14
       << "\" font-size=\"13\" font-weight=\"bold\">@" << escape(g.name)
       << " on a " << g.mesh << " mesh</text>\n";
    for (auto [i, row] : llvm::enumerate(g.rows)) {
      int y = kTop + kRow * i;
      os << "<rect x=\"" << left << "\" y=\"" << y << "\" width=\""
         << kBoxWidth << "\" height=\"" << kRow - 6 << "\" rx=\"3\" fill=\""
         << row.fill << "\" stroke=\"#555\"/>\n<text x=\"" << left + 6
         << "\" y=\"" << y + 14 << "\">" << escape(row.label)
         << "</text>\n<text x=\"" << left + kBoxWidth - 6 << "\" y=\""
         << y + 14 << "\" text-anchor=\"end\" font-weight=\"bold\">"
         << escape(row.sbp) << "</text>\n";
    }
    int right = left + kBoxWidth;
    for (const Edge &e : g.edges) {
      int y1 = kTop + kRow * e.from + (kRow - 6) / 2;
      int y2 = kTop + kRow * e.to + (kRow - 6) / 2;
      int bulge = std::min(40 + 6 * (e.to - e.from), 200);
      const char *colour = e.kind == Edge::Collective ? "#c1121f"
                           : e.kind == Edge::Local    ? "#1d4ed8"
                                                      : "#9e9e9e";
      os << "<path d=\"M " << right << " " << y1 << " C " << right + bulge
         << " " << y1 << ", " << right + bulge << " " << y2 << ", " << right
         << " " << y2 << "\" fill=\"none\" stroke=\"" << colour
         << "\" stroke-width=\"" << (e.kind == Edge::Collective ? 2 : 1)
         << "\"" << (e.kind == Edge::Local ? " stroke-dasharray=\"4 3\"" : "")
         << "/>\n";
      if (e.kind == Edge::Collective)
        os << "<text x=\"" << right + bulge * 3 / 4 + 4 << "\" y=\""
           << (y1 + y2) / 2 + 4 << "\" fill=\"#c1121f\">" << escape(e.label)
           << "</text>\n";
    }
  }
  os << "</svg>\n";
  return true;
}
