import pytest
import torch

from normkit import bitmask


def test_bit_order_on_a_hand_written_example():
    # columns 0, 2, 3 and 9 set: byte 0 = 1 + 4 + 8 = 13, byte 1 = 2 (column 9 is bit 1 of byte 1)
    bools = torch.zeros(1, 11, dtype=torch.bool)
    bools[0, [0, 2, 3, 9]] = True
    assert bitmask.pack(bools).tolist() == [[13, 2]]
    assert bitmask.unpack(torch.tensor([[13, 2]], dtype=torch.uint8), 11).equal(bools)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 100, 4097])
def test_round_trip_and_zero_padding(n):
    bools = torch.rand(5, 3, n) > 0.5
    packed = bitmask.pack(bools)
    assert packed.shape == (5, 3, (n + 7) // 8) and packed.dtype == torch.uint8
    assert torch.equal(bitmask.unpack(packed, n), bools)
    if n % 8:
        assert (packed[..., -1] >> (n % 8)).eq(0).all(), "padding bits must be 0"


def test_all_ones_and_all_zeros():
    assert bitmask.pack(torch.ones(2, 16, dtype=torch.bool)).eq(255).all()
    assert bitmask.pack(torch.zeros(2, 16, dtype=torch.bool)).eq(0).all()


def test_empty_batch():
    assert bitmask.pack(torch.zeros(0, 10, dtype=torch.bool)).shape == (0, 2)
    assert bitmask.unpack(torch.zeros(0, 2, dtype=torch.uint8), 10).shape == (0, 10)


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: bitmask.pack(torch.zeros(2, 8)), TypeError, "bools"),
        (lambda: bitmask.pack([True]), TypeError, "bools"),
        (lambda: bitmask.unpack(torch.zeros(2, 1, dtype=torch.int32), 8), TypeError, "packed"),
        (lambda: bitmask.unpack(torch.zeros(2, 1, dtype=torch.uint8), 9), ValueError, "packed"),
        (lambda: bitmask.unpack(torch.zeros(2, 1, dtype=torch.uint8), -1), ValueError, "n"),
    ],
)
def test_bad_input(call, error, name):
    with pytest.raises(error, match=name):
        call()
