"""The papers' table presets and the sweep table: the presets compose, the table is made from constructed
results (a preset through Flower, tabulated: ``tests/simulations/test_run.py``)."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.io
from omegaconf import OmegaConf

from fedmf_app.registry import defaults, validate_run_config
from simulations.sweep_table import completed_runs, display_name, markdown, references_for

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
PRESETS = {
    "sonmf/table1": ({"3sources", "bbcsport"}, {"fedsonmf", "fedmavg", "fedmgs"}),
    "sonmf/dev_sets": ({"hw", "orl", "yale", "sonar"}, {"fedsonmf"}),
    "imk/datasets": ({"sonar", "3sources", "bbcsport", "orl", "yale"}, {"fmvc-imk"}),
    "imk/ablation": (set(), {"fmvc-imk"}),
}


def _values(text):
    text = str(text)
    return ["0"] if text.startswith("range(") else text.split(",")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_table_presets_sweep_the_papers_data_and_methods_with_valid_run_configs(preset):
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    data, algorithms = PRESETS[preset]
    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
        params = OmegaConf.to_container(cfg.hydra.sweeper.params)
        assert set(_values(params.get("data", ""))) - {""} == data
        assert set(_values(params["algorithm"])) == algorithms
        assert params["run.seed"] == "range(10)"
        if "run.imk.lambda" in params:  # the ablation: without the graph, and the default
            assert _values(params["run.imk.lambda"]) == ["0.0", str(defaults()["imk.lambda"])]
        first = {key: _values(values)[0] for key, values in params.items()}
        for key, values in params.items():
            for value in _values(values):
                chosen = {**first, key: value}
                job = compose(
                    config_name="config",
                    overrides=[f"+experiment={preset}", *(f"{k}={v}" for k, v in chosen.items())],
                    return_hydra_config=True,
                )
                HydraConfig.instance().set_config(job)
                run = validate_run_config(OmegaConf.to_container(job.run, resolve=True))
                assert run["algorithm"] in algorithms


def _write_runs(folder, dataset, algorithm, accs, **settings):
    for seed, acc in enumerate(accs):
        job = folder / f"{algorithm}-{seed}-{len(list(folder.glob('*')))}"
        job.mkdir(parents=True)
        cfg = validate_run_config(
            {"algorithm": algorithm, "dataset": dataset, "num-clients": 2, "seed": seed}
        )
        cfg.update(settings)
        final = {"labels": [0, 1], "num_clusters": 2, "acc": acc, "nmi": 0.5, "purity": acc, "ari": 0.1}
        summary = {"wall_s": 3.0 + seed, "peak_rss_mb_server": 100.0, "peak_rss_mb_client_max": 120.0 + seed}
        result = {
            "config": cfg,
            "status": "completed",
            "summary": summary,
            "final": final,
            "rounds": [{}] * 4,
        }
        (job / "result.json").write_text(json.dumps(result))
        (job / "job_timing.json").write_text(json.dumps({"job_s": 10.0, "flwr_run_s": 8.0}))
    failed = folder / "failed"
    failed.mkdir(exist_ok=True)
    (failed / "result.json").write_text(json.dumps({"config": {}, "status": "failed", "final": None}))


def _toy(tmp_path, name="3Sources.mat"):
    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1], 15)
    views = [np.vstack([rng.random((15, d)), 5 + rng.random((15, d))]) for d in (3, 4)]
    cell = np.empty((1, 2), dtype=object)
    cell[0, 0], cell[0, 1] = views
    path = tmp_path / name
    scipy.io.savemat(path, {"X": cell, "y": truth + 1})
    return str(path)


def test_sweep_table_rows_are_methods_and_settings_beside_references_and_the_paper(tmp_path):
    dataset = _toy(tmp_path)
    _write_runs(tmp_path / "sweep", dataset, "fedsonmf", [0.5, 0.7])
    _write_runs(tmp_path / "sweep", dataset, "fedmgs", [0.9, 0.9])
    runs = completed_runs(tmp_path / "sweep")
    assert len(runs) == 4 and display_name(dataset) == "3Sources"
    refs = {dataset: references_for(dataset, runs[0]["config"], [0, 1])}
    assert [s["acc"] for s in refs[dataset]["scores"]["k-means, concatenated views"]] == [1.0, 1.0]
    text = markdown(runs, refs, "A")
    assert "| fedsonmf (federated) | 60.0 ± 10.0 / 50.0 ± 0.0 / 60.0 ± 10.0 / 10.0 ± 0.0 |" in text
    assert "| fedmgs (federated) | 90.0 ± 0.0 / 50.0 ± 0.0 / 90.0 ± 0.0 / 10.0 ± 0.0 |" in text
    assert (
        "| k-means, concatenated views (centralised) | "
        "100.0 ± 0.0 / 100.0 ± 0.0 / 100.0 ± 0.0 / 100.0 ± 0.0 |" in text
    )
    assert "| fedsonmf, paper A (reported) | 56.9 / 56.9 / 72.6 / – |" in text
    assert "| 3Sources | 30 | 2 (3, 4) | 2 | 4 | 4 | 3.5 ± 0.5 | 10.0 | 100 / 121 |" in text
    assert "mean ± sd over the seeds (population sd, ddof = 0)" in text  # the statistic is named


def test_sweep_table_splits_an_algorithm_by_the_settings_the_sweep_varies(tmp_path):
    dataset = _toy(tmp_path, "toy.mat")
    _write_runs(tmp_path / "sweep", dataset, "fmvc-imk", [0.6], **{"imk.lambda": 0.0})
    _write_runs(tmp_path / "sweep", dataset, "fmvc-imk", [0.8], **{"imk.lambda": 0.1})
    runs = completed_runs(tmp_path / "sweep")
    text = markdown(runs, {dataset: references_for(dataset, runs[0]["config"], [0])}, "B")
    assert "| fmvc-imk, imk.lambda=0.0 (federated) | 60.0" in text
    assert "| fmvc-imk, imk.lambda=0.1 (federated) | 80.0" in text
    assert "paper B" not in text  # paper B reports Sonar only
