//===- CompileReport.cpp - The compile report as JSON
//----------------------===//
//
// Part of the Flow project.
//
//===----------------------------------------------------------------------===//

#include "flow/Pipelines/Pipelines.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::flow;

void CompileReport::writeJson(raw_ostream &os) const {
  llvm::json::Object phases;
  double total = 0;
  for (const auto &[name, seconds] : phaseSeconds) {
    phases[name] = seconds;
    total += seconds;
  }
  llvm::json::Object root{
      {"phase_seconds", std::move(phases)},
      {"total_seconds", total},
      {"kernels", numKernels},
      {"dispatches", executable.numDispatches},
      {"gemms", executable.numGemms},
      {"convs", executable.numConvs},
      {"attentions", executable.numAttentions},
      {"pools", executable.numPools},
      {"gemm_epilogues", executable.numGemmEpilogues},
      {"copies", executable.numCopies},
      {"arena_bytes", executable.arenaBytes},
      {"transient_bytes", executable.transientBytes},
      {"constant_bytes", executable.constantBytes},
      {"parameter_bytes", executable.parameterBytes},
      {"collectives", executable.numCollectives},
      {"async_collectives", executable.numAsyncCollectives},
      {"placements",
       [&] {
         llvm::json::Array list;
         for (const auto &[function, value, sbp] : placements)
           list.push_back(llvm::json::Object{
               {"function", function}, {"value", value}, {"sbp", sbp}});
         return list;
       }()},
      {"mesh_spec", meshSpec},
      {"modeled_plans",
       [&] {
         llvm::json::Array list;
         auto figures = [](llvm::json::Object &o, const PlanFigures &f) {
           llvm::json::Object collectives;
           double total = f.computeSeconds;
           for (const auto &[kind, seconds] : f.collectiveSeconds) {
             collectives[kind] = seconds;
             total += seconds;
           }
           o["compute_seconds"] = f.computeSeconds;
           o["collective_seconds"] = std::move(collectives);
           o["total_seconds"] = total;
           o["memory_bytes"] = f.memoryBytes;
         };
         for (const ModeledPlan &p : modeledPlans) {
           llvm::json::Object plan{{"function", p.function},
                                   {"search", p.search}};
           figures(plan, p.figures);
           if (p.memoryLimitBytes > 0)
             plan["memory_limit_bytes"] = p.memoryLimitBytes;
           for (const auto &[name, f] : p.references) {
             llvm::json::Object reference;
             figures(reference, f);
             plan[name] = std::move(reference);
           }
           list.push_back(std::move(plan));
         }
         return list;
       }()},
      {"device_programs",
       [&] {
         llvm::json::Array list;
         for (const DeviceProgram &p : devicePrograms) {
           llvm::json::Array ranks;
           for (int64_t r : p.ranks)
             ranks.push_back(r);
           list.push_back(llvm::json::Object{{"function", p.function},
                                             {"partition_of", p.partitionOf},
                                             {"ranks", std::move(ranks)}});
         }
         return list;
       }()},
      {"collective_ops",
       [&] {
         llvm::json::Array list;
         for (const ExecutableStats::Collective &c : executable.collectives) {
           llvm::json::Array axes;
           for (int64_t a : c.meshAxes)
             axes.push_back(a);
           list.push_back(llvm::json::Object{{"function", c.function},
                                             {"op", c.op},
                                             {"mesh_axes", std::move(axes)},
                                             {"bytes_per_device", c.bytes},
                                             {"async", c.async}});
         }
         return list;
       }()},
      {"kernel_ops",
       [&] {
         llvm::json::Array list;
         for (const Kernel &k : kernels) {
           llvm::json::Array ops;
           for (const std::string &op : k.ops)
             ops.push_back(op);
           list.push_back(llvm::json::Object{{"kernel", k.name},
                                             {"rows", k.rows},
                                             {"bytes", k.bytes},
                                             {"ops", std::move(ops)}});
         }
         return list;
       }()},
      {"kernel_bytes",
       [&] {
         int64_t total = 0;
         for (const Kernel &k : kernels)
           total += k.bytes;
         return total;
       }()},
      {"fusion_refusals",
       [&] {
         llvm::json::Array list;
         for (const FusionRefusal &r : fusionRefusals)
           list.push_back(llvm::json::Object{
               {"op", r.op}, {"location", r.location}, {"reason", r.reason}});
         return list;
       }()},
      {"arena_lower_bound", executable.arenaLowerBound},
      {"in_place_buffers", executable.numInPlace},
      {"memory_plans",
       [&] {
         llvm::json::Array list;
         for (const ExecutableStats::FunctionPlan &p : executable.plans) {
           llvm::json::Array buffers;
           for (const PlannedBuffer &b : p.buffers)
             buffers.push_back(llvm::json::Object{{"value", b.name},
                                                  {"offset", b.offset},
                                                  {"size", b.size},
                                                  {"first", b.begin},
                                                  {"last", b.end},
                                                  {"in_place", b.reuses >= 0}});
           list.push_back(
               llvm::json::Object{{"function", p.function},
                                  {"arena_bytes", p.result.arenaBytes},
                                  {"lower_bound", p.result.lowerBound},
                                  {"unplanned_bytes", p.result.unplannedBytes},
                                  {"heuristic", p.result.heuristic},
                                  {"buffers", std::move(buffers)}});
         }
         return list;
       }()},
      {"kernel_library_bytes", kernelLibraryBytes},
      {"executable_bytes", executableBytes},
  };
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
