"""compile_blocks matches module classes exactly; a class given by name would match nothing, so it is refused."""

from __future__ import annotations

import pytest
import torch

from cosydesk.model.hift import Snake
from cosydesk.runtime.backends.cudagraph.compile import compile_blocks


def test_compile_blocks_refuses_class_names():
    with pytest.raises(TypeError, match="module classes"):
        compile_blocks(torch.nn.Sequential(Snake(4)), ("Snake",), torch.device("cpu"))


def test_compile_blocks_counts_nothing_on_the_cpu_without_a_backend():
    # compilation is a CUDA path: on the CPU nothing is set up, whatever the classes
    assert compile_blocks(torch.nn.Sequential(Snake(4)), (Snake,), torch.device("cpu")) == 0
