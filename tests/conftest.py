import pytest
import torch

import normkit as nk

HAS_GPU = torch.cuda.is_available()
DEVICE = "cuda" if HAS_GPU else "cpu"


def kernel_backends():
    """The non-reference backends that can run in this process, with the device they run on."""
    status = nk.backends()
    found = []
    if status["triton"] in ("ok", "interpreter"):
        found.append("triton")
    if status["cudnn"] == "ok":
        found.append("cudnn")
    return found


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
