"""Build ``fedmf_app/data/embedded/hw.json`` from a copy of UCI Multiple Features (HW).

Usage::

    python -m simulations.build_embedded ../shared/data/hw/Handwritten.mat

The file is read with the project's own loader; every view is stored in the smallest exact
integer type when its values are integers (``fac`` uint16, ``pix`` uint8), otherwise as float32,
and the labels 0-based. The result must stay well under Flower's 10 MB FAB limit.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from fedmf_app.data.embedded import EMBEDDED, encode_payload
from fedmf_app.data.multiview import load_multiview

VIEW_NAMES = ("fac", "fou", "kar", "mor", "pix", "zer")
VIEW_MEANINGS = {
    "fac": "profile correlations",
    "fou": "Fourier coefficients of the character shapes",
    "kar": "Karhunen-Loeve coefficients",
    "mor": "morphological features",
    "pix": "pixel averages in 2 x 3 windows",
    "zer": "Zernike moments",
}
METADATA = {
    "name": "hw",
    "title": "UCI Multiple Features (handwritten digits '0'-'9', 200 per class)",
    "license": "CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/)",
    "attribution": (
        "Duin, R. (1998). Multiple Features [Dataset]. UCI Machine Learning Repository. "
        "https://doi.org/10.24432/C5HC70. Copied from the MATLAB file Handwritten.mat of "
        "ChuanbinZhang/Multi-view-datasets; changes: floating-point views stored as float32, "
        "labels made 0-based."
    ),
}


def _compact(x: np.ndarray) -> np.ndarray:
    """Smallest exact integer type for integer data, else float32."""
    if np.all(x == np.round(x)) and x.min() >= 0:
        for kind in (np.uint8, np.uint16, np.uint32):
            if x.max() <= np.iinfo(kind).max:
                return x.astype(kind)
    return x.astype(np.float32)


def main() -> None:
    """Read the .mat file, write the JSON beside the embedded-data module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mat", type=Path, help="Handwritten.mat (UCI Multiple Features)")
    args = parser.parse_args()
    data = load_multiview(str(args.mat))
    if [v.shape[1] for v in data.views] != [216, 76, 64, 6, 240, 47]:
        raise SystemExit(f"{args.mat} does not look like UCI Multiple Features")
    arrays = {f"X_{i}": _compact(v) for i, v in enumerate(data.views)}
    arrays["y"] = data.labels.astype(np.uint8)
    meta = {
        **METADATA,
        "num_samples": data.num_samples,
        "num_classes": data.num_classes,
        "views": [
            {
                "name": n,
                "meaning": VIEW_MEANINGS[n],
                "dim": int(v.shape[1]),
                "stored_as": str(arrays[f"X_{i}"].dtype),
            }
            for i, (n, v) in enumerate(zip(VIEW_NAMES, data.views))
        ],
        "payload": encode_payload(arrays),
    }
    out = Path(__file__).resolve().parents[1] / "fedmf_app" / "data" / "embedded" / EMBEDDED["hw"]
    out.write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
