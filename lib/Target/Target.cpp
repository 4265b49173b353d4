//===- Target.cpp - The target registry -----------------------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Target/Target.h"
#include "flow/Dialect/Flow/IR/FlowDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringMap.h"

#include <mutex>

using namespace mlir;
using namespace mlir::flow;

Target::~Target() = default;

LogicalResult Target::verifyOptions(ModuleOp, const TargetOptions &) const {
  return success();
}

namespace {
struct Registry {
  std::mutex mutex;
  llvm::StringMap<std::unique_ptr<Target>> targets;
};
Registry &registry() {
  static Registry r;
  return r;
}
} // namespace

void mlir::flow::registerTarget(std::unique_ptr<Target> target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = target->getName().str();
  r.targets[name] = std::move(target);
}

const Target *mlir::flow::lookupTarget(StringRef name) {
  registerBuiltinTargets();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.targets.find(name);
  return it == r.targets.end() ? nullptr : it->second.get();
}

std::vector<std::string> mlir::flow::getTargetNames() {
  registerBuiltinTargets();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto &entry : r.targets)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

void mlir::flow::registerBuiltinTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTarget(createCpuTarget());
    registerTarget(createCudaTarget());
    registerTarget(createCudaEmulatedTarget());
  });
}

void mlir::flow::addFlowPipeline(OpPassManager &pm, StringRef text) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(text, pm, os)))
    llvm::report_fatal_error(llvm::Twine("bad Flow pipeline '") + text +
                             "': " + errors);
}

KernelInfo mlir::flow::readKernelAbi(Operation *kernel, FunctionType type,
                                     StringRef symbol) {
  KernelInfo info;
  info.symbol = symbol.str();
  if (auto sizes = kernel->getAttrOfType<DenseI64ArrayAttr>(
          FlowDialect::getBindingSizesAttrName()))
    info.bindingSizes.assign(sizes.asArrayRef().begin(),
                             sizes.asArrayRef().end());
  info.numBindings = info.bindingSizes.size();
  if (auto n = kernel->getAttrOfType<IntegerAttr>(
          FlowDialect::getNumOutputsAttrName()))
    info.numOutputs = n.getInt();
  // The bindings are the first arguments, as memrefs.
  for (Type t : type.getInputs().take_front(info.numBindings)) {
    auto memref = dyn_cast<MemRefType>(t);
    std::optional<uint8_t> dtype =
        memref ? executableDType(memref.getElementType()) : std::nullopt;
    if (!dtype)
      break;
    info.bindingDtypes.push_back(*dtype);
  }
  if (info.bindingDtypes.size() != info.numBindings)
    info.bindingDtypes.clear();
  return info;
}
