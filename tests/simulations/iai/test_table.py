"""Paper C's results table and figures on constructed result files."""

import json

from simulations.iai.table import (
    collect,
    export_runs,
    iai_table,
    method_name,
    plot_ablation,
    plot_missing_rates,
    plot_rounds,
    rounds_table,
    variant_name,
)
from simulations.spread import SPREAD


def _write(tmp_path, runs):
    for i, (cfg, acc) in enumerate(runs):
        (tmp_path / f"r{i}").mkdir()
        (tmp_path / f"r{i}" / "result.json").write_text(
            json.dumps({"config": cfg, "final": {"acc": acc, "nmi": acc, "ari": acc}})
        )
    (tmp_path / "r0" / "job_timing.json").write_text(json.dumps({"job_s": 100.0, "flwr_run_s": 90.0}))


def test_groups_by_method_and_rate_with_mean_and_sd_named_in_the_caption(tmp_path):
    base = {"algorithm": "fmvc-iai", "dataset": "hw", "missing-rate": 0.5}
    _write(
        tmp_path,
        [
            ({**base, "seed": 0}, 0.8),
            ({**base, "seed": 1}, 0.9),
            ({**base, "seed": 0, "iai.structure-loss": False}, 0.5),
            ({**base, "seed": 0, "algorithm": "fedsonmf", "missing-fill": "mean"}, 0.1),
            ({**base, "seed": 0, "missing-rate": 0.1}, 0.7),
        ],
    )
    caption, blank, *table = iai_table([tmp_path]).splitlines()
    assert SPREAD in caption and blank == ""
    assert len(table) == 6
    assert table[2] == "| hw | fmvc-iai | 0.1 | 1 (0) | 0.700 | 0.700 | 0.700 | – |"
    assert table[3].startswith("| hw | fedsonmf (mean fill) | 0.5 | 1 (0) | 0.100 |")
    assert table[4].startswith("| hw | fmvc-iai | 0.5 | 2 (0,1) | 0.850 ± 0.050 |")  # population sd
    assert table[4].endswith("| 100 |")  # only r0 has a job time
    assert table[5].startswith("| hw | fmvc-iai no M4 | 0.5 | 1 (0) | 0.500 |")
    assert variant_name({"iai.imputation": "zeros", "iai.fusion": "uniform"}) == "no M1"
    assert variant_name({"iai.imputation": "zeros", "iai.structure-loss": False}) == "no M1+M4"
    assert variant_name({"iai.fusion": "inverse-emd"}) == "M2 weighted"
    assert variant_name({"iai.fusion": "uniform"}) == "full"
    assert method_name({"algorithm": "fmvc-imk", "missing-rate": 0.0}) == "fmvc-imk"
    observed = {"algorithm": "fmvc-imk", "missing-rate": 0.5, "imk.missing-graph": "observed"}
    assert method_name(observed) == "fmvc-imk (mean fill, observed-rows graph)"
    only_seed_1 = iai_table([tmp_path], seeds={1}).splitlines()
    assert len(only_seed_1) == 5 and "| hw | fmvc-iai | 0.5 | 1 (1) | 0.900 |" in only_seed_1[4]
    assert len(iai_table([tmp_path], rates={0.1}).splitlines()) == 5
    assert method_name({"algorithm": "fmvc-iai", "missing-views-dropped": 5}) == "fmvc-iai, 5 views dropped"


def test_figures_are_written(tmp_path):
    base = {"algorithm": "fmvc-iai", "dataset": "hw"}
    _write(
        tmp_path,
        [
            ({**base, "seed": s, "missing-rate": r, "iai.imputation": imp}, 0.5 + s / 10)
            for s in (0, 1)
            for r in (0.1, 0.9)
            for imp in ("propagation", "zeros")
        ],
    )
    runs = collect([tmp_path])
    assert len(runs) == 8
    for plot, name in ((plot_missing_rates, "rates.png"), (plot_ablation, "ablation.png")):
        path = plot(runs, tmp_path / name)
        assert path.read_bytes()[:4] == b"\x89PNG"


def test_exported_runs_rebuild_the_same_table(tmp_path):
    base = {"algorithm": "fmvc-imk", "dataset": "/x/hw.npz", "missing-rate": 0.3, "missing-fill": "mean"}
    (tmp_path / "runs").mkdir()
    _write(tmp_path / "runs", [({**base, "seed": 0}, 0.6), ({**base, "seed": 1}, 0.7)])
    paths = export_runs(collect([tmp_path / "runs"]), tmp_path / "export")
    assert [p.name for p in paths] == [
        "hw_fmvc-imk--mean-fill-_0.3_seed0.json",
        "hw_fmvc-imk--mean-fill-_0.3_seed1.json",
    ]
    assert iai_table([tmp_path / "export"]) == iai_table([tmp_path / "runs"])
    assert iai_table([tmp_path / "runs"]).endswith("| 100 |")


def test_rounds_table_follows_the_scores_and_the_graph_over_the_rounds(tmp_path):
    cfg = {"algorithm": "fmvc-iai", "dataset": "hw", "missing-rate": 0.5}
    for seed, accs, components in ((0, (0.6, 0.8, 0.7), (1, 4, 9)), (1, (0.4, 0.6, 0.7), (1, 2, 3))):
        rounds = [
            {"round": s + 1, "acc": a, "nmi": a, "ari": a, "components": c, "labels_ignored": [0]}
            for s, (a, c) in enumerate(zip(accs, components))
        ]
        (tmp_path / f"r{seed}").mkdir()
        (tmp_path / f"r{seed}" / "result.json").write_text(
            json.dumps(
                {
                    "config": {**cfg, "seed": seed},
                    "final": {"acc": accs[-1], "nmi": 0, "ari": 0},
                    "rounds": rounds,
                }
            )
        )
    runs = collect([tmp_path])
    assert all("labels_ignored" not in r for run in runs for r in run["rounds"])
    rows = rounds_table(runs).splitlines()
    # mean ACC per round 0.5, 0.7, 0.7: the first best is round 2; components 1 -> 6
    assert rows[2] == "| hw | fmvc-iai | 0.5 | 2 | 3 | 0.500 | 0.700 (2) | 0.700 | 1.0 | 6.0 |"
    assert plot_rounds(runs, tmp_path / "rounds.png").read_bytes()[:4] == b"\x89PNG"
    export_runs(runs, tmp_path / "export")
    assert rounds_table(collect([tmp_path / "export"])) == rounds_table(runs)
