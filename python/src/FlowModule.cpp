//===- FlowModule.cpp - Flow's Python extension ---------------------------===//
//
// Part of the Flow project.
//
// `flow._flow`: the compiler (MLIR text -> executable bytes, or the IR of a
// phase) and the runtime (load an executable, run it on numpy arrays without
// copying the inputs). Compiled with exceptions (pybind11 needs them); the
// compiler and runtime below report errors as values, which become
// `flow.FlowError` here and never cross into MLIR.
//
//===----------------------------------------------------------------------===//

#include "flow/Frontend/ProgramBuilder.h"
#include "flow/Pipelines/CompileCache.h"
#include "flow/Pipelines/Pipelines.h"
#include "flow/Support/ParseGuard.h"
#include "flow/runtime/Blas.h"
#include "flow/runtime/Communicator.h"
#include "flow/runtime/Executable.h"
#include "flow/runtime/Session.h"
#include "flow/runtime/TrainingState.h"
#include "flow/runtime/rules/Extent.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
namespace rt = flow::runtime;

namespace {

/// Raised for every error the compiler or runtime reports.
struct FlowError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Raised by the program builder when an op cannot be built (its operands,
/// attributes or types are not what the op takes).
struct BuildError : FlowError {
  using FlowError::FlowError;
};

/// Reports `text` (when there is any) as a Python UserWarning.
void warn(const std::string &text) {
  if (!text.empty() && PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) != 0)
    throw py::error_already_set();
}

py::bytes asBytes(const std::vector<uint8_t> &bytes) {
  return py::bytes(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

/// Compiles MLIR text. Returns bytes (phase "fbin") or the IR text.
/// `options` maps compile options' keywords (flow.compile_options()) to
/// their values as text; the option table checks them. With `cache`, an
/// executable is taken from (or put in) the compile cache
/// (flow/Pipelines/CompileCache.h).
py::object compile(const std::string &source,
                   const std::map<std::string, std::string> &given,
                   bool cache) {
  mlir::flow::CompileOptions options;
  for (const auto &[keyword, text] : given) {
    const mlir::flow::CompileOptionInfo *info =
        mlir::flow::lookupCompileOption(keyword);
    if (!info || keyword != info->keyword)
      throw py::type_error("unknown compile option '" + keyword + "'");
    if (std::optional<std::string> why =
            mlir::flow::setCompileOption(options, keyword, text, keyword))
      throw FlowError(*why);
  }
  if (std::optional<std::string> why =
          mlir::flow::verifyCompileOptions(options, /*flagStyle=*/false))
    throw FlowError(*why);
  std::optional<mlir::flow::CompileCacheEntry> entry;
  if (cache)
    entry = mlir::flow::CompileCacheEntry::forCompile(source, options);
  if (entry) {
    std::string diagnostics, warning;
    std::optional<std::vector<uint8_t>> bytes;
    {
      py::gil_scoped_release release;
      bytes = entry->lookup(diagnostics, warning);
    }
    warn(warning);
    if (bytes) {
      warn(diagnostics);
      return asBytes(*bytes);
    }
  }
  mlir::DialectRegistry registry;
  mlir::flow::registerCompilerDialects(registry);
  // Text from the user must not take this process down: refuse what the
  // MLIR parser is known to crash on, then let a child process parse it
  // first, so that an unknown parser crash is an exception here.
  if (std::optional<mlir::flow::ParserHazard> hazard =
          mlir::flow::findParserHazard(source))
    throw FlowError(
        mlir::flow::formatParserHazard("<input>", source, *hazard));
  {
    std::string why;
    bool survived;
    {
      py::gil_scoped_release release;
      survived = mlir::flow::parseSurvives(source, registry, why);
    }
    if (!survived)
      throw FlowError(why + "; Flow did not parse it in this process. "
                            "Please report the input as a bug.");
  }
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors name the source line; the op printed after each (the whole
  // module, for an error about an option) would only bury them.
  context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "<input>"), llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, os);

  mlir::ParserConfig config(&context,
                            /*verifyAfterParse=*/options.mesh.empty());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  if (!module)
    throw FlowError(diagnostics);
  mlir::FailureOr<mlir::flow::CompileResult> result;
  {
    py::gil_scoped_release release;
    result = mlir::flow::compile(*module, options);
  }
  if (mlir::failed(result))
    throw FlowError(diagnostics);
  // A compile that succeeded with warnings (a parameter the loss does not
  // depend on) reports them as Python warnings.
  warn(diagnostics);
  if (options.compileTo == "fbin") {
    if (entry) {
      std::string warning;
      {
        py::gil_scoped_release release;
        entry->store(result->executable, diagnostics, warning);
      }
      warn(warning);
    }
    return asBytes(result->executable);
  }
  if (!result->module)
    return py::str(result->text);
  std::string text;
  llvm::raw_string_ostream ir(text);
  result->module->print(ir);
  return py::str(text);
}

template <typename T> T unwrap(rt::StatusOr<T> value) {
  if (!value.isOk())
    throw FlowError(value.status().message());
  return std::move(*value);
}

/// numpy's name of each runtime element type, indexed by its value; bfloat16
/// comes from ml_dtypes.
constexpr const char *kNumpyNames[] = {
    "float32", "float16", "bfloat16", "int64",  "int32",  "bool",  "float64",
    "int16",   "int8",    "uint8",    "uint16", "uint32", "uint64"};
static_assert(sizeof(kNumpyNames) / sizeof(kNumpyNames[0]) ==
                  size_t(rt::DType::U64) + 1,
              "a runtime element type has no numpy name");

/// numpy dtype of a runtime element type.
py::dtype numpyDtype(rt::DType dtype) {
  if (dtype == rt::DType::BF16)
    return py::dtype::from_args(
        py::module_::import("ml_dtypes").attr("bfloat16"));
  size_t i = static_cast<size_t>(dtype);
  if (i >= sizeof(kNumpyNames) / sizeof(kNumpyNames[0]))
    throw FlowError("unknown element type");
  return py::dtype(kNumpyNames[i]);
}

/// The runtime element type of a numpy dtype named \p kind.
rt::DType runtimeDtype(const std::string &kind) {
  for (size_t i = 0; i < sizeof(kNumpyNames) / sizeof(kNumpyNames[0]); ++i)
    if (kind == kNumpyNames[i])
      return static_cast<rt::DType>(i);
  throw FlowError("unsupported input dtype " + kind);
}

/// A loaded executable with a session to run it.
class Module {
public:
  Module(py::bytes bytes, int threads, const std::string &parameters,
         const std::string &baseDirectory, double timeout) {
    std::string data = bytes;
    rt::LoadOptions load;
    load.parameterArchive = parameters;
    load.baseDirectory = baseDirectory;
    std::shared_ptr<const rt::Executable> exe;
    {
      py::gil_scoped_release release;
      auto loaded = rt::Executable::loadBytes(data.data(), data.size(), load);
      if (loaded)
        exe = std::move(*loaded);
      else
        error = loaded.status().message();
    }
    if (!exe)
      throw FlowError(error);
    rt::RuntimeOptions options;
    options.threads = threads;
    // A mesh executable runs one process per device (mpirun -np N python).
    if (!exe->mesh().empty()) {
      int64_t devices = 1;
      for (int64_t d : exe->mesh())
        devices *= d;
      if (rt::launchedByMpi() || devices > 1) {
        // A negative timeout: FLOW_COLLECTIVE_TIMEOUT, or the default.
        rt::MpiOptions mpi;
        mpi.timeout = timeout;
        options.communicator = unwrap(rt::mpiWorld(mpi));
      }
    }
    session = unwrap(rt::Session::create(exe, options));
  }

  /// Function names; a mesh function is listed once, by its global name.
  std::vector<std::string> functions() const {
    std::vector<std::string> names;
    for (const rt::FunctionSignature &sig : session->executable().functions()) {
      const std::string &name = sig.ranks.empty() ? sig.name : sig.globalName;
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
    }
    return names;
  }

  /// This process' device in the mesh (0 without one).
  int64_t rank() const { return session->rank(); }

  /// Runs a mesh function on the global inputs; every device gets the
  /// global outputs.
  py::list runGlobal(const std::string &name,
                     const std::vector<py::array> &args) {
    return runTensors(args, [&](const std::vector<rt::HostTensor> &inputs) {
      return session->runGlobal(name, inputs);
    });
  }

  /// The executable's state names (see rt::Session::stateNames).
  std::vector<std::string> stateNames() const {
    return session->stateNames();
  }
  void setState(const std::string &name, const py::array &value) {
    rt::Status status = session->setState(name, hostTensor(value));
    if (!status.isOk())
      throw FlowError(status.message());
  }
  /// Checks `value` as the value of state `name` (rt::checkStateValue:
  /// what the runtime refuses in setState), setting nothing.
  static void checkState(const std::string &name, const py::array &value) {
    rt::Status status = rt::checkStateValue(name, hostTensor(value));
    if (!status.isOk())
      throw FlowError(status.message());
  }
  py::array getState(const std::string &name) {
    return numpyArray(unwrap(session->getState(name)));
  }
  /// (numpy dtype, shape) of state `name`, whole (as set_state takes it).
  py::tuple stateType(const std::string &name) const {
    rt::TensorSpec spec = unwrap(session->stateType(name));
    return py::make_tuple(numpyDtype(spec.dtype),
                          py::tuple(py::cast(spec.shape)));
  }
  /// Bytes of state this process keeps (on a mesh, its pieces).
  uint64_t stateBytes() const { return session->stateBytes(); }
  /// The bytes each collective of the last call moved on this device.
  std::vector<uint64_t> collectiveBytes() const {
    return session->collectiveBytes();
  }
  /// Runs `name` on its inputs that are not state, with the session's
  /// state updated in place; returns its other outputs.
  py::list step(const std::string &name, const std::vector<py::array> &args) {
    return runTensors(args, [&](const std::vector<rt::HostTensor> &inputs) {
      return session->step(name, inputs);
    });
  }

  bool hasMesh() const { return !session->executable().mesh().empty(); }
  /// Bytes of weights this process holds (its pieces of split weights).
  uint64_t parameterBytes() const {
    return session->executable().boundParameterBytes();
  }

  /// (inputs, outputs) of `name`, each a list of (dtype name, shape).
  py::tuple signature(const std::string &name) const {
    return signatureOf(lookup(name));
  }
  static py::tuple signatureOf(const rt::FunctionSignature &sig) {
    auto list = [](const std::vector<rt::TensorSpec> &specs) {
      py::list out;
      for (const rt::TensorSpec &s : specs) {
        // A symbolic dimension reads as its extent ("batch").
        py::list shape;
        for (size_t d = 0; d < s.shape.size(); ++d) {
          bool symbolic = d < s.extents.size() &&
                          s.extents[d] != std::to_string(s.shape[d]);
          if (symbolic)
            shape.append(py::str(s.extents[d]));
          else
            shape.append(py::int_(s.shape[d]));
        }
        out.append(py::make_tuple(rt::dtypeName(s.dtype), py::tuple(shape)));
      }
      return out;
    };
    return py::make_tuple(list(sig.inputs), list(sig.outputs));
  }

  /// Runs `name` on numpy arrays; returns new numpy arrays.
  py::list run(const std::string &name, const std::vector<py::array> &args) {
    // On a mesh: this device's program, on its pieces.
    size_t index =
        unwrap(session->executable().findFunction(name, session->rank()));
    const rt::FunctionSignature &sig = session->executable().functions()[index];
    if (args.size() != sig.inputs.size())
      throw FlowError("function '" + name + "' takes " +
                      std::to_string(sig.inputs.size()) + " inputs, got " +
                      std::to_string(args.size()));
    // A function with size symbols binds them from the inputs' shapes.
    std::vector<int64_t> symbols;
    if (!sig.symbols.empty()) {
      std::vector<std::vector<int64_t>> shapes;
      for (const py::array &a : args)
        shapes.emplace_back(a.shape(), a.shape() + a.ndim());
      symbols = unwrap(rt::bindSymbols(sig, shapes));
    }
    auto shapeOf = [&](const rt::TensorSpec &spec) {
      return sig.symbols.empty() ? spec.shape
                                 : rt::callShape(sig, spec, symbols);
    };
    std::vector<py::array> inputs;
    std::vector<rt::ConstBuffer> in;
    for (size_t i = 0; i < args.size(); ++i) {
      const rt::TensorSpec &spec = sig.inputs[i];
      py::dtype want = numpyDtype(spec.dtype);
      if (!args[i].dtype().is(want) && !args[i].dtype().equal(want))
        throw FlowError("input " + std::to_string(i) + ": expected " +
                        spec.str() + ", got dtype " +
                        std::string(py::str(args[i].dtype())));
      std::vector<int64_t> shape(args[i].shape(),
                                 args[i].shape() + args[i].ndim());
      rt::TensorSpec call{spec.dtype, shapeOf(spec)};
      if (shape != call.shape)
        throw FlowError("input " + std::to_string(i) + ": expected " +
                        spec.str() + ", got shape " +
                        std::string(py::str(py::tuple(py::cast(shape)))));
      // Row-major and aligned; copies only when the array is not.
      py::array contiguous =
          py::array::ensure(args[i], py::array::c_style | py::array::forcecast);
      inputs.push_back(contiguous);
      in.push_back({contiguous.data(), call.byteSize()});
    }
    py::list results;
    std::vector<rt::MutableBuffer> out;
    for (const rt::TensorSpec &spec : sig.outputs) {
      rt::TensorSpec call{spec.dtype, shapeOf(spec)};
      py::array array(
          numpyDtype(spec.dtype),
          std::vector<py::ssize_t>(call.shape.begin(), call.shape.end()));
      out.push_back({array.mutable_data(), call.byteSize()});
      results.append(array);
    }
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = session->run(index, in, out,
                            sig.symbols.empty() ? nullptr : &symbols);
    }
    if (!status.isOk())
      throw FlowError(status.message());
    return results;
  }

  int threads() const { return session->threads(); }
  void setCheckNumerics(bool on) { session->setCheckNumerics(on); }

private:
  /// Copies \p args into host tensors, calls \p call on them without the
  /// GIL, and returns its results as numpy arrays.
  template <typename Call>
  py::list runTensors(const std::vector<py::array> &args, Call call) {
    std::vector<rt::HostTensor> inputs;
    for (const py::array &a : args)
      inputs.push_back(hostTensor(a));
    rt::StatusOr<std::vector<rt::HostTensor>> out =
        std::vector<rt::HostTensor>();
    {
      py::gil_scoped_release release;
      out = call(inputs);
    }
    if (!out)
      throw FlowError(out.status().message());
    py::list results;
    for (const rt::HostTensor &t : *out)
      results.append(numpyArray(t));
    return results;
  }

  static rt::HostTensor hostTensor(const py::array &a) {
    py::array c = py::array::ensure(a, py::array::c_style);
    rt::HostTensor t;
    std::string kind = py::str(c.dtype());
    t.dtype = runtimeDtype(kind);
    t.shape.assign(c.shape(), c.shape() + c.ndim());
    const auto *p = static_cast<const uint8_t *>(c.data());
    t.data.assign(p, p + c.nbytes());
    return t;
  }
  static py::array numpyArray(const rt::HostTensor &t) {
    py::array array(numpyDtype(t.dtype), std::vector<py::ssize_t>(
                                             t.shape.begin(), t.shape.end()));
    if (!t.data.empty())
      std::memcpy(array.mutable_data(), t.data.data(), t.data.size());
    return array;
  }

  const rt::FunctionSignature &lookup(const std::string &name) const {
    size_t index = unwrap(session->executable().findFunction(name));
    return session->executable().functions()[index];
  }

public:
  /// (inputs, outputs) of this device's program of `name`: its pieces.
  py::tuple localSignature(const std::string &name) const {
    size_t index =
        unwrap(session->executable().findFunction(name, session->rank()));
    return signatureOf(session->executable().functions()[index]);
  }

private:

  std::unique_ptr<rt::Session> session;
  std::string error;
};

template <typename T> T built(std::optional<T> value,
                              const mlir::flow::ProgramBuilder &builder) {
  if (!value)
    throw BuildError(builder.error());
  return std::move(*value);
}

/// (shape, dtype): a symbolic dimension is its extent's text (`batch`).
py::tuple typeTuple(const mlir::flow::TensorSpec &spec) {
  py::list shape;
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    if (!spec.extents.empty() && !spec.extents[i].empty())
      shape.append(py::str(spec.extents[i]));
    else
      shape.append(py::int_(spec.shape[i]));
  }
  return py::make_tuple(py::tuple(shape), spec.dtype);
}

/// A TensorSpec from a Python shape whose entries are ints or extent texts.
mlir::flow::TensorSpec tensorSpec(const py::sequence &shape,
                                  const std::string &dtype) {
  mlir::flow::TensorSpec spec{{}, dtype};
  bool symbolic = false;
  for (py::handle d : shape) {
    if (py::isinstance<py::str>(d)) {
      spec.shape.push_back(-1);
      spec.extents.push_back(d.cast<std::string>());
      symbolic = true;
    } else {
      spec.shape.push_back(d.cast<int64_t>());
      spec.extents.push_back("");
    }
  }
  if (!symbolic)
    spec.extents.clear();
  return spec;
}

/// The Python face of mlir::flow::ProgramBuilder: value handles are ints.
void bindProgramBuilder(py::module_ &m) {
  using mlir::flow::ProgramBuilder;
  using mlir::flow::TensorSpec;
  using Types = std::vector<std::pair<py::sequence, std::string>>;
  auto specs = [](const Types &types) {
    std::vector<TensorSpec> out;
    for (const auto &[shape, dtype] : types)
      out.push_back(tensorSpec(shape, dtype));
    return out;
  };
  py::class_<ProgramBuilder>(m, "ProgramBuilder",
                             "Builds one func.func of flow ops, each op's "
                             "result types inferred by the op itself.")
      .def(py::init<const std::string &>(), py::arg("function"))
      .def(
          "argument",
          [](ProgramBuilder &b, const py::sequence &shape,
             const std::string &dtype) {
            return built(b.addArgument(tensorSpec(shape, dtype)), b);
          },
          py::arg("shape"), py::arg("dtype"))
      .def(
          "create",
          [specs](ProgramBuilder &b, const std::string &name,
                  const std::vector<int64_t> &operands,
                  const std::vector<std::pair<std::string, std::string>>
                      &attributes,
                  std::optional<Types> results) {
            std::optional<std::vector<TensorSpec>> types;
            if (results)
              types = specs(*results);
            return built(b.create(name, operands, attributes, types), b);
          },
          py::arg("name"), py::arg("operands"), py::arg("attributes"),
          py::arg("results") = py::none(),
          "Builds op `name`; returns its results' handles.")
      .def(
          "constant",
          [](ProgramBuilder &b, std::vector<int64_t> shape,
             const std::string &dtype, py::bytes data) {
            std::string_view bytes = data;
            return built(b.constant({std::move(shape), dtype}, bytes.data(),
                                    bytes.size()),
                         b);
          },
          py::arg("shape"), py::arg("dtype"), py::arg("data"))
      .def(
          "type",
          [](ProgramBuilder &b, int64_t value) {
            return typeTuple(built(b.typeOf(value), b));
          },
          py::arg("value"), "(shape, dtype) of a value.")
      .def(
          "set_mesh",
          [](ProgramBuilder &b, const std::vector<int64_t> &shape) {
            if (!b.setMesh(shape))
              throw BuildError(b.error());
          },
          py::arg("shape"), "Places the function on a flow.mesh @mesh.")
      .def(
          "set_argument_attribute",
          [](ProgramBuilder &b, int64_t argument, const std::string &name,
             const std::string &text) {
            if (!b.setArgumentAttribute(argument, name, text))
              throw BuildError(b.error());
          },
          py::arg("argument"), py::arg("name"), py::arg("text"))
      .def(
          "set_result_attribute",
          [](ProgramBuilder &b, int64_t result, const std::string &name,
             const std::string &text) {
            if (!b.setResultAttribute(result, name, text))
              throw BuildError(b.error());
          },
          py::arg("result"), py::arg("name"), py::arg("text"))
      .def(
          "set_function_attribute",
          [](ProgramBuilder &b, const std::string &name,
             const std::string &text) {
            if (!b.setFunctionAttribute(name, text))
              throw BuildError(b.error());
          },
          py::arg("name"), py::arg("text"))
      .def(
          "set_location",
          [](ProgramBuilder &b, const std::string &file, int64_t line,
             const std::string &name) { b.setLocation(file, line, name); },
          py::arg("file"), py::arg("line"), py::arg("name"),
          "Where the next ops come from: file and line, or else a name.")
      .def(
          "finish",
          [](ProgramBuilder &b, const std::vector<int64_t> &results,
             const std::string &archive) {
            return built(b.finish(results, archive), b);
          },
          py::arg("results"), py::arg("archive"),
          "Returns `results`; the module's MLIR text.");
}

} // namespace

PYBIND11_MODULE(_flow, m) {
  m.doc() = "Flow's compiler and runtime";
  py::object flowError = py::register_exception<FlowError>(m, "FlowError");
  py::register_exception<BuildError>(m, "BuildError", flowError);
  bindProgramBuilder(m);
  mlir::flow::registerCompilerPasses();
  m.def(
      "normalize_extent",
      [](const std::string &text) {
        flow::rules::Extent extent;
        std::string error;
        if (!flow::rules::Extent::parse(text, extent, error))
          throw py::value_error(error);
        return extent.str();
      },
      py::arg("text"),
      "An extent over size symbols in its normal form ('seq*batch' -> "
      "'batch*seq').");
  m.def("compile", &compile, py::arg("source"),
        py::arg("options") = std::map<std::string, std::string>(),
        py::arg("cache") = false,
        "Compiles flow-dialect MLIR text: executable bytes, or the IR of an "
        "earlier phase as text. `options` maps compile options' keywords to "
        "their values as text. `cache`: take the executable from, and put "
        "it in, the compile cache.");
  m.def(
      "cache_info",
      []() {
        mlir::flow::CompileCacheInfo info = mlir::flow::getCompileCacheInfo();
        py::dict d;
        d["directory"] = info.directory;
        d["entries"] = info.entries;
        d["bytes"] = info.bytes;
        d["limit"] = info.limit;
        d["hits"] = info.hits;
        d["misses"] = info.misses;
        d["stores"] = info.stores;
        return d;
      },
      "The compile cache: directory, entries, bytes, limit (bytes), and "
      "this process' hits, misses and stores.");
  m.def("cache_clear", &mlir::flow::clearCompileCache,
        "Removes every entry of the compile cache; returns how many.");
  m.def(
      "cache_key",
      [](const std::string &source,
         const std::map<std::string, std::string> &given) -> py::object {
        mlir::flow::CompileOptions options;
        for (const auto &[keyword, text] : given)
          if (std::optional<std::string> why =
                  mlir::flow::setCompileOption(options, keyword, text, keyword))
            throw FlowError(*why);
        auto entry = mlir::flow::CompileCacheEntry::forCompile(source, options);
        if (!entry)
          return py::none();
        return py::str(entry->key());
      },
      "The compile cache's key of compiling `source` with `options` (64 hex "
      "digits), or None when such a compile is not cached.");
  m.def(
      "compile_options",
      []() {
        py::list rows;
        mlir::flow::CompileOptions defaults;
        static const char *types[] = {"bool",  "choice", "int",
                                      "bytes", "mesh",   "text"};
        for (const mlir::flow::CompileOptionInfo &info :
             mlir::flow::getCompileOptions()) {
          py::dict row;
          row["keyword"] = info.keyword;
          row["flag"] = std::string("--") + info.flag;
          row["type"] = types[static_cast<int>(info.type)];
          row["default"] = info.get(defaults);
          row["accepts"] = info.accepts();
          row["help"] = info.help;
          rows.append(row);
        }
        return rows;
      },
      "The compile options, one dict per option: keyword, flag, type, "
      "default (as text), accepts, help.");
  m.def(
      "blas_info",
      []() {
        flow::runtime::StatusOr<flow::runtime::BlasInfo> info =
            flow::runtime::loadBlas();
        if (!info)
          throw FlowError(info.status().message());
        py::dict d;
        d["gemm_library"] = info->gemmLibrary;
        d["gemm_kernels"] = info->gemmKernels;
        d["bf16_gemm"] = info->bf16Gemm;
        d["flow_gemm"] = info->flowGemm;
        d["conv_library"] = info->convLibrary;
        d["library"] = info->library;
        d["kernels"] = info->kernels;
        d["chosen_by"] = info->chosenBy;
        d["warning"] = info->warning;
        return d;
      },
      "The BLAS library GEMMs run on and the kernels it runs.");
  py::class_<Module>(m, "Module")
      .def(py::init<py::bytes, int, const std::string &, const std::string &,
                    double>(),
           py::arg("executable"), py::arg("threads") = 0,
           py::arg("parameters") = "", py::arg("base_directory") = "",
           py::arg("timeout") = -1.0)
      .def_property_readonly("functions", &Module::functions)
      .def_property_readonly("threads", &Module::threads)
      .def("signature", &Module::signature, py::arg("function"))
      .def("local_signature", &Module::localSignature, py::arg("function"))
      .def("run", &Module::run, py::arg("function"), py::arg("inputs"))
      .def("set_check_numerics", &Module::setCheckNumerics, py::arg("on"))
      .def("run_global", &Module::runGlobal, py::arg("function"),
           py::arg("inputs"))
      .def_property_readonly("rank", &Module::rank)
      .def("state_names", &Module::stateNames)
      .def("set_state", &Module::setState, py::arg("name"), py::arg("value"))
      .def_static("check_state", &Module::checkState, py::arg("name"),
                  py::arg("value"))
      .def("get_state", &Module::getState, py::arg("name"))
      .def("state_type", &Module::stateType, py::arg("name"))
      .def_property_readonly("state_bytes", &Module::stateBytes)
      .def_property_readonly("collective_bytes", &Module::collectiveBytes)
      .def("step", &Module::step, py::arg("function"), py::arg("inputs"))
      .def_property_readonly("has_mesh", &Module::hasMesh)
      .def_property_readonly("parameter_bytes", &Module::parameterBytes);
}
