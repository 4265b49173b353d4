"""The compile options' one table (lib/Pipelines/Options.cpp): flow-compile's
flags, Python's keywords and their checks all come from it, and a value an
option does not accept is one line naming the option, never a crash."""

import inspect
import subprocess

import pytest

import flow
from flowtest import tool

ADD = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = flow.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

# Values each kind of option refuses, and a few options' own.
BAD_BY_TYPE = {
    "bool": ["maybe", "2"],
    "choice": ["nonsense"],
    "int": ["-3", "abc", "1.5"],
    "bytes": ["-5", "lots", "0"],
    "mesh": ["0", "2x", "x", "5000"],
}
BAD_BY_OPTION = {
    "cpu": ["pentium9", "pentium4", ""],
    "gpu_arch": ["sm_9", "gfx90a", "sm_60", "sm_70", "sm_72", "sm_91", ""],
    "mesh_spec": ["nope", "/dev/zero"],
    "compile_to": ["foo", ""],
}


def bad_values():
    for row in flow.compile_options():
        for value in BAD_BY_OPTION.get(row["keyword"],
                                       BAD_BY_TYPE.get(row["type"], [])):
            yield row, value


def test_every_option_has_bad_values_tested():
    keywords = {row["keyword"] for row, _ in bad_values()}
    assert keywords == {row["keyword"] for row in flow.compile_options()}


@pytest.mark.parametrize("row,value", list(bad_values()),
                         ids=lambda x: x["keyword"] if isinstance(x, dict)
                         else repr(x))
def test_flow_compile_refuses_bad_value_in_one_line(tmp_path, row, value):
    src = tmp_path / "m.mlir"
    src.write_text(ADD)
    proc = subprocess.run([str(tool("flow-compile")), str(src),
                           f"{row['flag']}={value}", "-o",
                           str(tmp_path / "m.fbin")],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"flow-compile: error: {row['flag']}: "), \
        proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "m.fbin").exists()


@pytest.mark.parametrize("row,value", list(bad_values()),
                         ids=lambda x: x["keyword"] if isinstance(x, dict)
                         else repr(x))
def test_python_refuses_bad_value_naming_keyword(row, value):
    options = {row["keyword"]: value}
    if row["keyword"] == "compile_to":
        with pytest.raises(flow.FlowError, match=f"^compile_to: "):
            flow.compile_ir(ADD, value)
        return
    with pytest.raises(flow.FlowError, match=f"^{row['keyword']}: "):
        flow.compile_mlir(ADD, **options)


def test_threads_is_refused_not_ignored(tmp_path):
    """LLVM links a hidden --threads into the tool; flow-compile says it has
    no such option instead of taking -3 and doing nothing."""
    src = tmp_path / "m.mlir"
    src.write_text(ADD)
    for value in ("-3", "4"):
        proc = subprocess.run([str(tool("flow-compile")), str(src),
                               f"--threads={value}", "-o",
                               str(tmp_path / "m.fbin")],
                              capture_output=True, text=True)
        assert proc.returncode == 1
        assert proc.stderr.startswith("flow-compile: error: --threads: ")
        assert proc.stderr.count("\n") == 1


def test_unknown_keyword_is_a_type_error():
    for function, args in ((flow.compile_mlir, (ADD,)),
                           (flow.compile_ir, (ADD, "flow"))):
        with pytest.raises(TypeError, match="unexpected keyword argument "
                           "'fuse'.*compile options: target"):
            function(*args, fuse=False)


def test_python_types_are_checked():
    with pytest.raises(flow.FlowError, match="^fusion: 3.5 is not"):
        flow.compile_mlir(ADD, fusion=3.5)
    with pytest.raises(flow.FlowError, match="^precision: True is not one of"):
        flow.compile_mlir(ADD, precision=True)


def test_good_values_compile():
    """Each spelling Python users write is accepted: bools, ints, tuples,
    byte strings, paths."""
    import numpy as np
    a = np.arange(4, dtype=np.float32)
    for options in ({"fusion": False}, {"fusion": "off"},
                    {"library_matmul": np.bool_(False)},
                    {"max_columns_bytes": 0}, {"max_columns_bytes": np.int64(7)},
                    {"precision": "bf16"}, {"conv": "gemm"}, {"cpu": "x86-64-v2"},
                    {"in_place": True}, {"gemm_epilogues": True},
                    {"overlap_collectives": False}):
        (out,) = flow.compile_mlir(ADD, **options)(a, a)
        np.testing.assert_array_equal(out, a + a)


def test_flags_keywords_and_defaults_agree():
    """flow-compile --help lists every option's flag with its default, and
    Python's signatures take no compile option of their own (they come
    from the table through **options)."""
    help_text = subprocess.run([str(tool("flow-compile")), "--help"],
                               capture_output=True, text=True).stdout
    for row in flow.compile_options():
        assert (f"{row['flag']}=<" in help_text or
                f"{row['flag']}[=<" in help_text), row["flag"]
        if row["default"]:
            assert f"default {row['default']}]" in help_text, row
        assert row["keyword"] == row["flag"][2:].replace("-", "_")
    for function in (flow.compile, flow.compile_mlir, flow.compile_ir):
        parameters = inspect.signature(function).parameters
        own = {row["keyword"] for row in flow.compile_options()} & set(
            parameters)
        assert not own, (function.__name__, own)
        assert "options" in parameters
        for row in flow.compile_options():
            assert row["keyword"] in function.__doc__


def test_options_reference_is_the_table():
    text = subprocess.run([str(tool("flow-compile")),
                           "--print-options-reference"],
                          capture_output=True, text=True, check=True).stdout
    for row in flow.compile_options():
        assert f"| `{row['flag']}` | `{row['keyword']}` |" in text
