"""NoisyMNIST builder: the recipe's properties on a tiny IDX set, and the real file when present."""

import gzip

import numpy as np
import pytest

from fedmf_app.data import DataError
from fedmf_app.data.noisy_mnist import build_noisy_mnist, read_idx, write_noisy_mnist

from support.data import DEV_DATA

MNIST = DEV_DATA / "mnist_t10k"


def _write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture()
def tiny_mnist(tmp_path):
    rng = np.random.default_rng(0)
    images = (rng.random((30, 28, 28)) < 0.2).astype(np.uint8) * 255
    labels = np.repeat(np.arange(3), 10)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    return tmp_path, images / 255.0, labels


def test_views_follow_the_recipe(tiny_mnist):
    folder, images, labels = tiny_mnist
    views, y = build_noisy_mnist(folder, seed=3)
    np.testing.assert_array_equal(y, labels)
    assert [v.shape for v in views] == [(30, 784), (30, 784)]
    assert all(v.min() >= 0.0 and v.max() <= 1.0 for v in views)
    flat = images.reshape(30, -1)
    for i in range(30):
        # view 2 = (another same-class image) + nonnegative noise, clipped: it dominates that image
        dominated = [j for j in range(30) if np.all(views[1][i] >= flat[j] - 1e-6)]
        assert dominated and all(labels[j] == labels[i] for j in dominated) and i not in dominated
        # view 1 is a rotation of image i: about the same ink (bilinear loses a little at the edges)
        assert abs(views[0][i].sum() - flat[i].sum()) < 0.25 * flat[i].sum()
    again, _ = build_noisy_mnist(folder, seed=3)
    other, _ = build_noisy_mnist(folder, seed=4)
    np.testing.assert_array_equal(views[1], again[1])
    assert not np.array_equal(views[1], other[1])


def test_written_file_and_bad_input(tiny_mnist, tmp_path):
    folder, _, _ = tiny_mnist
    out = write_noisy_mnist(folder, tmp_path / "nm.npz", seed=1)
    with np.load(out) as data:
        assert sorted(data.files) == ["X_0", "X_1", "Y"]
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"\x01\x02\x03\x04")
    with pytest.raises(DataError, match="bad magic number"):
        read_idx(bad)
    with pytest.raises(DataError, match="cannot read"):
        read_idx(tmp_path / "missing.gz")


@pytest.mark.skipif(not MNIST.exists(), reason=f"MNIST test files not found at {MNIST}")
def test_real_mnist_gives_10000_samples_in_two_views():
    views, y = build_noisy_mnist(MNIST, seed=0, num_samples=10000)
    assert [v.shape for v in views] == [(10000, 784), (10000, 784)]
    np.testing.assert_array_equal(np.unique(y), np.arange(10))
