"""``python -m normkit.bench.ab``: another revision's package imported beside this one (its timing needs a GPU)."""

import subprocess

import pytest
import torch
from conftest import HAS_GPU

from normkit import reference
from normkit.testing import compare

IN_GIT_CHECKOUT = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not IN_GIT_CHECKOUT, reason="needs the git checkout of normkit")


def test_load_revision_imports_that_commits_package():
    import normkit.triton as now
    from normkit.bench.ab import load_revision

    before = load_revision("HEAD")
    assert before.__name__.startswith("normkit_at_") and before.layer_norm_fwd is not now.layer_norm_fwd
    assert load_revision("HEAD") is before  # copied and imported once
    x, w, b = torch.randn(3, 40) * 2 + 1, torch.randn(40), torch.randn(40)
    for got, want, name in zip(before.layer_norm_fwd(x, w, b, 1e-5), reference.layer_norm_fwd(x, w, b, 1e-5), "yms"):
        compare(got, want, name)


def test_load_revision_names_a_bad_revision():
    from normkit.bench.ab import load_revision

    with pytest.raises(ValueError, match="rev: 'no-such-revision' is not a commit"):
        load_revision("no-such-revision")


@pytest.mark.skipif(HAS_GPU, reason="the message of a machine without a GPU")
def test_ab_says_it_needs_a_gpu():
    from normkit.bench.ab import main

    with pytest.raises(SystemExit, match="NVIDIA GPU"):
        main(["HEAD", "--M", "8", "--N", "64", "--ops", "ln_fwd"])
