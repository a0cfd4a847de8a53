"""The session-end check that compiles every interpreted Triton launch for Hopper (tests/support/triton_compile.py)
tells a kernel compiled Triton accepts from one only the interpreter accepts."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("triton", reason="checks Triton kernels")

from tests.support import triton_compile as tc  # noqa: E402

needs_compiler = pytest.mark.skipif(not tc.compiler_available(), reason="Triton's CUDA compiler (ptxas) is not installed")


def _spec(kernel) -> str:
    import torch

    src, dst = torch.zeros(64, dtype=torch.float16), torch.zeros(64, dtype=torch.float16)
    return tc.launch_spec(kernel.fn, (src, dst, 64), {"BLOCK": 64, "num_warps": 2})  # .fn: the Python function


def test_a_launch_is_described_by_its_argument_types_and_constexprs():
    from tests.support import triton_samples

    spec = json.loads(_spec(triton_samples.scaled_copy))
    assert spec["module"] == "tests.support.triton_samples" and spec["name"] == "scaled_copy"
    assert spec["signature"] == {"src_ptr": "*fp16", "dst_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"}
    assert spec["constexprs"] == {"BLOCK": 64} and spec["options"] == {"num_warps": 2}


@needs_compiler
def test_a_kernel_reading_a_python_global_fails_to_compile_and_a_plain_one_compiles():
    from tests.support import triton_samples

    good, bad = _spec(triton_samples.scaled_copy), _spec(triton_samples.scaled_copy_by_global)
    failures = tc.compile_specs([good, bad])
    assert [f["spec"].split()[0] for f in failures] == ["tests.support.triton_samples.scaled_copy_by_global"]
    assert "global" in failures[0]["error"].lower() and "SCALE" in failures[0]["error"]


def test_launches_that_differ_only_in_sizes_share_one_compile():
    def spec(block, flag):
        return json.dumps({"module": "m", "name": "k", "signature": {"x": "*fp16", "B": "constexpr", "F": "constexpr"},
                           "constexprs": {"B": block, "F": flag}, "options": {"num_warps": 4}}, sort_keys=True)

    chosen = tc.code_paths([spec(64, False), spec(32, False), spec(64, True)])
    assert len(chosen) == 2 and {json.loads(c)["constexprs"]["F"] for c in chosen} == {False, True}
