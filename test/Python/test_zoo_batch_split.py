"""python/autopar/testing/zoo_batch_split.py's split of a batch over the
devices of a grid (each device's rows, as a data plan gives them)."""

import os
import sys

import pytest

from conftest import SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "autopar", "testing"))
import zoo_batch_split  # noqa: E402


def test_grid_devices():
    assert zoo_batch_split.grid_devices("1") == 1
    assert zoo_batch_split.grid_devices("2") == 2
    assert zoo_batch_split.grid_devices("2x2") == 4
    assert zoo_batch_split.grid_devices("2x2x2") == 8


def test_slices():
    assert zoo_batch_split.slices(4, 4) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert zoo_batch_split.slices(4, 2) == [(0, 2), (2, 4)]
    assert zoo_batch_split.slices(4, 1) == [(0, 4)]


def test_slices_that_do_not_divide():
    with pytest.raises(ValueError, match="does not split over 3 devices"):
        zoo_batch_split.slices(4, 3)
