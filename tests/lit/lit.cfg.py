# lit configuration for Loom's FileCheck tests.
import os

import lit.formats

config.name = "Loom"
config.test_format = lit.formats.ShTest(not config.llvm_use_internal_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_binary_dir, "tests", "lit")

# loom-opt and loomc from this build, FileCheck/not/count from LLVM.
config.environment["PATH"] = os.pathsep.join(
    [config.loom_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%loom_source_dir", config.loom_source_dir))
config.substitutions.append(("%configs", os.path.join(config.loom_source_dir, "configs")))
