# -*- Python -*-
# lit configuration for Flow: tests of flow-opt and the docs.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "FLOW"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flow_obj_root, "test")

# pytest and GoogleTest suites live beside the lit tests but run on their own;
# test/models holds model sources the pytest suite compiles.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "python",
                   "runtime", "Inputs", "models", "fuzz"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%flow_src_root", config.flow_src_root))
config.substitutions.append(("%flow_obj_root", config.flow_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# flow-compile's compile cache in the build tree, not the user's.
config.environment["FLOW_CACHE_DIR"] = os.path.join(config.flow_obj_root,
                                                    "test", "compile-cache")

tool_dirs = [config.flow_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["flow-opt", "flow-compile", "flow-run"],
                                   tool_dirs)

# The Python of the build, with this build's flow package first on its path
# (test/Import runs the importers). In a sanitized build (FLOW_SANITIZE) the
# interpreter loads the instrumented extension, so the sanitizer runtimes go
# first (LD_PRELOAD) and CPython's deliberate leaks at exit are not reported;
# flow-opt and flow-compile keep the caller's options (leaks checked).
python_env = ["PYTHONPATH=%s" % os.path.join(config.flow_obj_root, "python")]
if config.flow_sanitizer_preload:
    # flow-compile on an .onnx input starts the interpreter itself, which
    # then loads the instrumented extension without the runtimes first:
    # such tests say UNSUPPORTED: sanitized.
    config.available_features.add("sanitized")
    python_env.append("LD_PRELOAD=%s" % config.flow_sanitizer_preload)
    asan_options = os.environ.get("ASAN_OPTIONS", "")
    python_env.append("ASAN_OPTIONS=%s" % ":".join(
        o for o in (asan_options, "detect_leaks=0") if o))
config.substitutions.append(
    ("%flow_python", "env %s %s" % (" ".join(python_env),
                                    config.python_executable)))
# flow-run on a program with library convolutions: they start OpenMP's
# threads, whose dynamic TLS LeakSanitizer's exit scan cannot read (the scan
# crashes), so in a sanitized build it runs with address and undefined-
# behaviour checks but no leak scan (as scripts/test-sanitized.sh runs the
# convolution unit tests).
if config.flow_sanitizer_preload:
    asan_options = os.environ.get("ASAN_OPTIONS", "")
    config.substitutions.append(
        ("%flow_run_conv", "env ASAN_OPTIONS=%s %s" % (":".join(
            o for o in (asan_options, "detect_leaks=0") if o),
            os.path.join(config.flow_tools_dir, "flow-run"))))
else:
    config.substitutions.append(
        ("%flow_run_conv", os.path.join(config.flow_tools_dir, "flow-run")))

# The CUDA toolkit (libdevice, ptxas) the CUDA target uses: tests of CUDA
# code generation need it and say so (REQUIRES: cuda-toolkit, ptxas); where
# it is missing lit reports them UNSUPPORTED.
cuda_path = os.environ.get("FLOW_CUDA_PATH") or "/usr/local/cuda"
if os.path.exists(os.path.join(cuda_path, "nvvm", "libdevice",
                               "libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
# flow-run built with its CUDA device (it opens the driver at run time), and
# the toolkit's stub driver (a libcuda.so that reports no driver).
if getattr(config, "flow_runtime_cuda", False):
    config.available_features.add("cuda-runtime")
stub_driver = os.path.join(cuda_path, "lib64", "stubs", "libcuda.so")
if os.path.exists(stub_driver):
    config.available_features.add("cuda-stub-driver")
    config.substitutions.append(("%cuda_stub_driver", stub_driver))
ptxas = os.path.join(cuda_path, "bin", "ptxas")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
