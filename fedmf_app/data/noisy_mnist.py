"""NoisyMNIST: the 2-view, 10,000-sample benchmark of paper C, built from the MNIST test set.

Recipe (``../shared/data/README.md``; the usual NoisyMNIST construction of Wang et al. 2015):

* pixels scaled to [0, 1];
* view 1 of sample i: image i rotated by an angle drawn from U[-45°, 45°] (bilinear, about the
  centre, zero fill, size kept);
* view 2 of sample i: another image j != i of the same class, plus independent U[0, 1] noise per
  pixel, clipped to [0, 1];
* labels: the digit of image i (0..9).

Everything is drawn from one seeded generator (``Stream.NOISY_MNIST``), so a seed gives the same
file on every machine. Inputs are the two gzip IDX files of the MNIST test set
(``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``); the output is an ``.npz`` with
``X_0``, ``X_1`` (``n x 784``, float32) and ``Y`` that the multi-view loader reads::

    python -m fedmf_app.data.noisy_mnist --mnist ../shared/data/mnist_t10k --out noisy_mnist.npz
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np
from scipy.ndimage import rotate

from fedmf_app.common.seeding import Stream, rng_for
from fedmf_app.data import DataError

__all__ = ["build_noisy_mnist", "read_idx", "write_noisy_mnist"]

IMAGES = "t10k-images-idx3-ubyte.gz"
LABELS = "t10k-labels-idx1-ubyte.gz"


def read_idx(path: str | Path) -> np.ndarray:
    """Read a (gzip) IDX file of unsigned bytes.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    ndarray of uint8
        Shape from the file's header, e.g. ``(10000, 28, 28)`` or ``(10000,)``.

    Raises
    ------
    DataError
        When the file is missing or not an unsigned-byte IDX file.
    """
    path = Path(path)
    try:
        raw = (gzip.open if path.suffix == ".gz" else open)(path, "rb").read()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the MNIST file ({exc})") from exc
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise DataError(f"{path}: not an unsigned-byte IDX file (bad magic number)")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise DataError(f"{path}: header says {shape} but the file holds {body.size} bytes of data")
    return body.reshape(shape)


def build_noisy_mnist(
    mnist_dir: str | Path, seed: int = 0, num_samples: int = 10000
) -> tuple[list[np.ndarray], np.ndarray]:
    """Build the two NoisyMNIST views from the MNIST test set.

    Parameters
    ----------
    mnist_dir : str or Path
        Folder holding ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``.
    seed : int
    num_samples : int
        The first ``num_samples`` test images (10,000: all of them).

    Returns
    -------
    views : list of two ndarrays of float32, shape (n, 784)
        Rotated digits; other same-class digits with uniform noise. Values in [0, 1].
    labels : ndarray of int64, shape (n,)

    Raises
    ------
    DataError
        On missing or inconsistent files, or a class with a single image.
    """
    mnist_dir = Path(mnist_dir)
    images = read_idx(mnist_dir / IMAGES).astype(np.float32) / 255.0
    labels = read_idx(mnist_dir / LABELS).astype(np.int64)
    if images.ndim != 3 or images.shape[0] != labels.shape[0]:
        raise DataError(
            f"{mnist_dir}: {IMAGES} has shape {images.shape} but {LABELS} has {labels.shape[0]} labels"
        )
    images, labels = images[:num_samples], labels[:num_samples]
    n = labels.shape[0]
    rng = rng_for(seed, Stream.NOISY_MNIST)
    angles = rng.uniform(-45.0, 45.0, size=n)
    rotated = np.stack(
        [rotate(img, a, reshape=False, order=1, mode="constant", cval=0.0) for img, a in zip(images, angles)]
    )
    partner = np.empty(n, dtype=np.int64)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        if members.size < 2:
            raise DataError(f"{mnist_dir}: class {c} has a single image; view 2 needs another one")
        # a random other member: shift a random draw past the sample's own position
        draw = rng.integers(0, members.size - 1, size=members.size)
        draw += draw >= np.arange(members.size)
        partner[members] = members[draw]
    noisy = np.clip(images[partner] + rng.uniform(0.0, 1.0, size=images.shape), 0.0, 1.0)
    views = [
        np.clip(rotated, 0.0, 1.0).reshape(n, -1).astype(np.float32),
        noisy.reshape(n, -1).astype(np.float32),
    ]
    return views, labels


def write_noisy_mnist(
    mnist_dir: str | Path, out: str | Path, seed: int = 0, num_samples: int = 10000
) -> Path:
    """Build NoisyMNIST and write it as an ``.npz`` (``X_0``, ``X_1``, ``Y``), atomically.

    Parameters
    ----------
    mnist_dir, seed, num_samples
        See :func:`build_noisy_mnist`.
    out : str or Path
        Target ``.npz`` path.

    Returns
    -------
    Path
    """
    views, labels = build_noisy_mnist(mnist_dir, seed, num_samples)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp.npz")
    np.savez_compressed(tmp, X_0=views[0], X_1=views[1], Y=labels)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m fedmf_app.data.noisy_mnist --mnist DIR --out FILE [--seed S]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mnist", required=True, help="folder with the MNIST t10k IDX files")
    parser.add_argument("--out", required=True, help="output .npz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-samples", type=int, default=10000)
    args = parser.parse_args(argv)
    path = write_noisy_mnist(args.mnist, args.out, args.seed, args.num_samples)
    print(f"wrote {path}")  # noqa: T201 (command-line output)


if __name__ == "__main__":
    main()
