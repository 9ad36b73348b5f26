"""FMVC-IAI results table on constructed result files."""

import json

from simulations.iai_table import iai_table, variant_name


def test_groups_by_variant_and_rate_with_mean_and_mad(tmp_path):
    base = {"algorithm": "fmvc-iai", "dataset": "hw", "missing-rate": 0.5}
    runs = [({**base, "seed": 0}, 0.8), ({**base, "seed": 1}, 0.9),
            ({**base, "seed": 0, "iai-structure-loss": False}, 0.5),
            ({**base, "seed": 0, "algorithm": "fedsonmf"}, 0.1)]
    for i, (cfg, acc) in enumerate(runs):
        (tmp_path / f"r{i}").mkdir()
        (tmp_path / f"r{i}" / "result.json").write_text(
            json.dumps({"config": cfg, "final": {"acc": acc, "nmi": acc, "ari": acc}}))
    table = iai_table([tmp_path]).splitlines()
    assert len(table) == 4
    assert "| hw | full | 0.5 | 2 (0,1) | 0.850 ± 0.050 |" in table[2]
    assert "| hw | no M4 | 0.5 | 1 (0) | 0.500 ± 0.000 |" in table[3]
    assert variant_name({"iai-imputation": "zeros", "iai-fusion": "uniform"}) == "no M1+M2"
