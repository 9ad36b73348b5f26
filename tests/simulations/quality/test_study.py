"""The quality study: grid designs, resumable runs, twin runs, ranks and the report's tables."""

import json

import numpy as np
import pytest

from fedmf_app.common.metrics import clustering_scores
from fedmf_app.common.references import REFERENCES
from fedmf_app.in_process import run_in_process
from fedmf_app.registry import defaults
from simulations.quality.report import NMF_RANK_K, mean_ranks, render_family, render_goal
from simulations.quality.study import canonical, grid_configs, run_study

GRID = {"imk.lambda": [0.01, 0.1, 1.0], "imk.mu": [0.1, 1.0], "imk.labels": ["kmeans", "argmax"]}


def test_one_at_a_time_varies_each_key_alone_from_the_defaults_and_product_takes_every_combination():
    base = defaults()
    one = grid_configs(GRID)
    assert one[0] == {"imk.lambda": base["imk.lambda"], "imk.mu": base["imk.mu"]}
    assert len(one) == 1 + 2 + 1
    assert all(sum(c[k] != one[0][k] for k in c) == 1 for c in one[1:])
    product = grid_configs(GRID, "product")
    assert len(product) == 6 and product[0] == one[0]
    assert {json.dumps(c, sort_keys=True) for c in one} <= {json.dumps(c, sort_keys=True) for c in product}


def test_auto_preparations_are_twins_of_their_dense_meaning_only_without_sparse_views():
    config = {"sample-normalisation": "auto", "imk.standardise": "auto", "imk.mu": 0.1}
    assert canonical(config, has_sparse_views=False) == {
        "sample-normalisation": "none",
        "imk.standardise": "zscore",
        "imk.mu": 0.1,
    }
    assert canonical(config, has_sparse_views=True) == config


def test_mean_rank_averages_per_set_ranks_and_ties_share_them():
    acc = {"a": {"x": 90, "y": 50}, "b": {"x": 80, "y": 50}, "c": {"x": 70, "y": 60}, "partial": {"x": 99}}
    ranks = mean_ranks(acc, ["x", "y"])
    assert ranks == {"a": pytest.approx((1 + 2.5) / 2), "b": pytest.approx((2 + 2.5) / 2), "c": 2.0}


def _clustered_file(tmp_path, sparse_view=False):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    views = [
        np.abs(3.0 * np.eye(3)[y] @ rng.normal(size=(3, d)) + 0.5 * rng.normal(size=(60, d))) for d in (6, 8)
    ]
    if sparse_view:
        counts = rng.poisson(0.02, size=(60, 300)).astype(float)
        counts[np.arange(60), 10 * y] += 3
        views.append(counts)
    path = tmp_path / ("sparse.npz" if sparse_view else "dense.npz")
    np.savez(path, **{f"X_{i}": v for i, v in enumerate(views)}, y=y)
    return str(path), y


def test_study_records_every_run_once_evaluates_final_only_keys_on_one_run_and_resumes(tmp_path):
    dataset, y = _clustered_file(tmp_path)
    out = tmp_path / "imk.jsonl"
    grid = {"imk.mu": [0.1, 1.0], "imk.labels": ["kmeans", "argmax"]}
    fixed = {"num-server-rounds": 3}
    run_study("imk", {"toy": dataset}, [0], grid, out, fixed)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4  # 2 runs x 2 label rules
    assert {(r["config"]["imk.mu"], r["config"]["imk.labels"]) for r in records} == {
        (0.1, "kmeans"),
        (0.1, "argmax"),
        (1.0, "kmeans"),
        (1.0, "argmax"),
    }
    # a record's scores are those of a whole run with that configuration
    record = next(
        r for r in records if r["config"] == {"num-server-rounds": 3, "imk.mu": 1.0, "imk.labels": "argmax"}
    )
    strategy = run_in_process(
        {"algorithm": "fmvc-imk", "dataset": dataset, "num-clients": 2, "seed": 0, **record["config"]},
        tmp_path,
    )
    assert record["acc"] == clustering_scores(y, strategy.final_labels())["acc"]
    assert record["acc"] == strategy.recorder.data["final"]["acc"]
    run_study("imk", {"toy": dataset}, [0], grid, out, fixed)  # nothing left to run
    assert out.read_text().count("\n") == 4


def test_study_copies_a_twin_run_instead_of_running_it_again(tmp_path):
    dataset, _ = _clustered_file(tmp_path)
    out = tmp_path / "imk.jsonl"
    grid = {"imk.standardise": ["auto", "zscore"]}
    run_study("imk", {"toy": dataset}, [0], grid, out, {"num-server-rounds": 2})
    auto, zscore = (json.loads(line) for line in out.read_text().splitlines())
    assert zscore["same_run_as"] == auto["config"] and zscore["acc"] == auto["acc"]


def test_auto_preparation_changes_a_run_with_a_sparse_view(tmp_path):
    dataset, _ = _clustered_file(tmp_path, sparse_view=True)
    out = tmp_path / "imk.jsonl"
    run_study(
        "imk", {"toy": dataset}, [0], {"imk.standardise": ["auto", "zscore"]}, out, {"num-server-rounds": 2}
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 and not any("same_run_as" in r for r in records)


def test_report_ranks_configurations_and_sets_defaults_beside_best_of_grid_and_references():
    def record(dataset, acc, **config):
        scores = {"acc": acc, "nmi": acc, "ari": acc}
        return {"dataset": dataset, "seed": 0, "config": config, **scores, "seconds": 1.0}

    mu = defaults()["imk.mu"]
    sets = ("HW", "ORL", "Yale", "Sonar")
    records = [record(s, a, **{"imk.mu": mu}) for s, a in zip(sets, (0.9, 0.7, 0.5, 0.6), strict=True)]
    records += [record(s, a, **{"imk.mu": 1.0}) for s, a in zip(sets, (0.8, 0.8, 0.4, 0.7), strict=True)]
    records.append(record("Yale", 0.3, **{"imk.mu": 0.01}))  # one data set only: shown, not ranked
    refs = {name: {ref: [{"acc": 0.55, "nmi": 0.55, "ari": 0.55}] for ref in REFERENCES} for name in sets}
    text = render_family("imk", records, refs)
    # a tie in mean rank lists the defaults first; the partial configuration comes last
    assert (
        "| defaults | 90.0 | 70.0 | 50.0 | 60.0 | 1.50 | 1 |\n"
        "| imk.mu=1.0 | 80.0 | 80.0 | 40.0 | 70.0 | 1.50 | 1 |\n"
        "| imk.mu=0.01 |  |  | 30.0 |  | not ranked | 1 |"
    ) in text
    assert "| Sonar | 60.0 / 60.0 / 60.0 | 70.0 / 70.0 / 70.0 (imk.mu=1.0) |" in text
    assert "| Yale | 50.0 / 50.0 / 50.0 | 50.0 / 50.0 / 50.0 (defaults) |" in text
    assert text.count("| yes |") == 3 and "| no (55.0) |" in text


def test_goal_table_bolds_exactly_the_sets_where_the_defaults_reach_their_target():
    def record(dataset, acc, seed, **config):
        return {"dataset": dataset, "seed": seed, "config": config, "acc": acc, "nmi": acc, "ari": acc}

    def refs(target_acc):
        return {ref: [{"acc": target_acc, "nmi": 0.0, "ari": 0.0}] for ref in (*REFERENCES, NMF_RANK_K)}

    imk = [
        record("HW", 0.9, 0),
        record("HW", 0.8, 1),
        record("Sonar", 0.5, 0),
        record("HW", 0.1, 0, **{"imk.mu": 9.0}),
    ]
    sonmf = [record("Sonar", 0.7, 0)]
    text = render_goal(
        {
            "sonmf": (sonmf, {"Sonar": refs(0.7)}),
            "imk": (imk, {"HW": refs(0.85), "Sonar": refs(0.6)}),
        }
    )
    # the defaults' mean over the seeds (85.0) against the target reaches it; a grid run is left out
    assert f"| fmvc-imk ({REFERENCES[0]}) | **85.0** (85.0) | 50.0 (60.0) |" in text
    assert f"| fedsonmf ({NMF_RANK_K}) | n/a | **70.0** (70.0) |" in text
    assert "| method (target) | HW | Sonar |" in text and "[0, 1]" in text
