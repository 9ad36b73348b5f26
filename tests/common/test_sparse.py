import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from fedmf_app.common.sparse import issparse


@pytest.mark.parametrize(
    "x",
    [
        np.eye(3),
        [[1.0, 0.0]],
        None,
        sp.csr_matrix(np.eye(3)),
        sp.coo_matrix(np.eye(2)),
        sp.csc_array(np.eye(2)),
    ],
)
def test_issparse_answers_as_scipy_does(x):
    assert issparse(x) == sp.issparse(x)


def test_issparse_imports_no_scipy_sparse():
    code = (
        "import sys, numpy as np; from fedmf_app.common.sparse import issparse; "
        "print(issparse(np.eye(2)), 'scipy.sparse' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
