"""Sample IDs in data files: read as text from CSV columns and .npz/.mat keys, checked."""

import numpy as np
import pytest
import scipy.io

from fedmf_app.data import DataError
from fedmf_app.data.multiview import load_single_view
from fedmf_app.registry import validate_run_config

from support.data import client_view


def _csv(path, header, rows):
    path.write_text("\n".join([",".join(header), *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


def test_a_csv_id_column_is_text_and_not_a_feature(tmp_path):
    f = _csv(tmp_path / "a.csv", ["f0", "id", "label", "f1"], [[1.5, " P-2 ", 1, 3], [2.5, "P-1", 0, 4]])
    x, y, ids = load_single_view(str(f), "id", "run config 'sample-id' = 'id'")
    assert x.tolist() == [[1.5, 3.0], [2.5, 4.0]] and y.tolist() == [1, 0] and ids.tolist() == ["P-2", "P-1"]


def test_npz_and_mat_ids_integers_integral_floats_and_strings(tmp_path):
    x = np.arange(6.0).reshape(3, 2)
    np.savez(tmp_path / "a.npz", X=x, id=np.array([30, 10, 20]))
    assert load_single_view(str(tmp_path / "a.npz"), "id", "")[2].tolist() == ["30", "10", "20"]
    scipy.io.savemat(tmp_path / "b.mat", {"X": x, "id": np.array([[3.0], [1.0], [2.0]])})
    assert load_single_view(str(tmp_path / "b.mat"), "id", "")[2].tolist() == ["3", "1", "2"]
    cell = np.empty((3, 1), dtype=object)
    cell[:, 0] = ["c", "a", "b"]
    scipy.io.savemat(tmp_path / "c.mat", {"X": x, "names": cell})
    assert load_single_view(str(tmp_path / "c.mat"), "names", "")[2].tolist() == ["c", "a", "b"]
    np.savez(tmp_path / "d.npz", X=x, id=np.array([0.5, 1.0, 2.0]))
    with pytest.raises(DataError, match=r"d\.npz: sample IDs 'id' must be integers or strings"):
        load_single_view(str(tmp_path / "d.npz"), "id", "")


def test_duplicate_ids_name_the_file_and_rows_but_not_the_id(tmp_path):
    f = _csv(tmp_path / "dup.csv", ["id", "f0"], [["secret-7", 1], ["b", 2], ["secret-7", 3]])
    with pytest.raises(DataError, match=r"dup\.csv: .* rows 0 and 2 share one") as caught:
        load_single_view(str(f), "id", "")
    assert "secret-7" not in str(caught.value)


def test_a_missing_id_column_or_key_names_the_file_the_config_and_what_it_has(tmp_path):
    cfg = validate_run_config({"num-clients": 2, "sample-id": "id"})
    f = _csv(tmp_path / "a.csv", ["key", "f0"], [[1, 1], [2, 2]])
    with pytest.raises(
        DataError, match=r"a\.csv: run config 'sample-id' = 'id': no such column \(its columns: key, f0\)"
    ):
        client_view(cfg, 0, {"data-file": str(f)})
    np.savez(tmp_path / "b.npz", X=np.ones((2, 2)))
    with pytest.raises(
        DataError, match=r"b\.npz: node config 'sample-id' = 'k': no such key; the file holds X"
    ):
        client_view(cfg, 0, {"data-file": str(tmp_path / "b.npz"), "sample-id": "k"})
    np.save(tmp_path / "c.npy", np.ones((2, 2)))
    with pytest.raises(DataError, match=r"c\.npy: .* a \.npy file holds no sample IDs"):
        client_view(cfg, 0, {"data-file": str(tmp_path / "c.npy")})
    with pytest.raises(DataError, match="synthetic data has no sample IDs"):
        client_view(cfg, 0)


def test_aligned_rows_select_the_raw_rows_before_any_preparation_and_recode_labels(tmp_path):
    x = np.array([[1.0, 0.0], [9.0, 9.0], [0.0, 3.0], [4.0, 4.0]])
    np.savez(tmp_path / "a.npz", X=x, Y=np.array([5, 7, 9, 7]), id=np.array([4, 3, 2, 1]))
    np.savez(tmp_path / "ref.npz", X=x[[2, 0]], Y=np.array([9, 5]))
    cfg = validate_run_config({"num-clients": 1})
    view = client_view(
        {**cfg, "sample-id": "id"}, 0, {"data-file": str(tmp_path / "a.npz")}, rows=np.array([2, 0])
    )
    ref = client_view(cfg, 0, {"data-file": str(tmp_path / "ref.npz")})
    assert np.array_equal(view.features, ref.features) and view.labels.tolist() == ref.labels.tolist() == [
        1,
        0,
    ]
    assert view.ids.tolist() == ["2", "4"] and view.rows.tolist() == [2, 0]


def test_a_multi_view_file_can_hold_one_id_array_for_its_views(tmp_path):
    np.savez(tmp_path / "mv.npz", X_0=np.ones((3, 2)), X_1=np.ones((3, 4)), sid=np.array(["z", "x", "y"]))
    cfg = validate_run_config({"num-clients": 2, "dataset": str(tmp_path / "mv.npz"), "sample-id": "sid"})
    assert client_view(cfg, 1).ids.tolist() == ["z", "x", "y"]
    with pytest.raises(DataError, match="embedded data set has no sample IDs"):
        client_view(validate_run_config({"num-clients": 6, "dataset": "hw", "sample-id": "sid"}), 0)
