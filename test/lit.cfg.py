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
                   "runtime", "Inputs", "models"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%flow_src_root", config.flow_src_root))
config.substitutions.append(("%flow_obj_root", config.flow_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.flow_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["flow-opt", "flow-compile"], tool_dirs)

# The Python of the build, with this build's flow package first on its path
# (test/Import runs the importers).
config.substitutions.append(
    ("%flow_python", "env PYTHONPATH=%s %s" % (
        os.path.join(config.flow_obj_root, "python"),
        config.python_executable)))
