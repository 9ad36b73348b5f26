"""Paper C's hydra presets compose to valid run configs (no Flower run)."""

from itertools import product
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.registry import validate_run_config
from simulations.iai.table import method_name

ROOT = Path(__file__).resolve().parents[3]
RATES = {0.1, 0.3, 0.5, 0.7, 0.9}
ABLATION = {"fmvc-iai no M1", "fmvc-iai M2 weighted", "fmvc-iai no M3", "fmvc-iai no M4"}


@pytest.mark.parametrize(
    ("preset", "data", "views", "methods", "rates", "seeds"),
    [
        ("iai/hw_missing", "hw", 6, {"fmvc-iai"}, RATES, 5),
        ("iai/hw_baselines", "hw", 6, {"fedsonmf (mean fill)", "fmvc-imk (mean fill)"}, RATES, 5),
        ("iai/hw_ablation", "hw", 6, ABLATION, {0.1, 0.9}, 3),
        ("iai/noisy_mnist_missing", "noisy_mnist", 2, {"fmvc-iai"}, RATES, 5),
        (
            "iai/noisy_mnist_baselines",
            "noisy_mnist",
            2,
            {"fedsonmf (mean fill)"},  # fmvc-imk's clients refuse 2 views with missing rows
            RATES,
            5,
        ),
        (
            "iai/noisy_mnist_ablation",
            "noisy_mnist",
            2,
            ABLATION,
            {0.1, 0.5, 0.9},
            3,
        ),
        ("iai/hw_rounds", "hw", 6, {"fmvc-iai"}, {0.5}, 3),
    ],
)
def test_paper_c_presets_compose_to_valid_run_configs(preset, data, views, methods, rates, seeds):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
        params = OmegaConf.to_container(cfg.hydra.sweeper.params)
        assert list(params)[0] == "run.seed"
        assert params["run.seed"].split(",") == [str(s) for s in range(seeds)]
        found_methods, found_rates = set(), set()
        grid = {k: v for k, v in params.items() if k != "run.seed"}  # seeds change nothing else
        for values in product(*(v.split(",") for v in grid.values())):
            overrides = [f"{k}={v}" for k, v in zip(grid, values)]
            job = compose(config_name="config", overrides=[f"+experiment={preset}", *overrides])
            run = validate_run_config(OmegaConf.to_container(job.run, resolve=True))
            assert Path(run["dataset"]).stem == data and run["num-clients"] == views == job.num_supernodes
            if run["algorithm"] == "fmvc-iai":
                assert run["num-server-rounds"] == (21 if preset.endswith("_rounds") else 6)
            found_methods.add(method_name(run))
            found_rates.add(run["missing-rate"])
        assert (found_methods, found_rates) == (methods, rates)


def test_the_observed_rows_graph_variant_composes_to_its_own_method():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        names = {}
        for variant in ("iai/baseline-fmvc-imk", "iai/baseline-fmvc-imk-observed"):
            overrides = ["data=hw", "num_supernodes=6", f"+variant={variant}", "run.missing-rate=0.5"]
            job = compose(config_name="config", overrides=overrides)
            run = validate_run_config(OmegaConf.to_container(job.run, resolve=True))
            assert run["algorithm"] == "fmvc-imk" and run["num-clients"] == 6
            names[run["imk.missing-graph"]] = method_name(run)
    assert names == {
        "filled": "fmvc-imk (mean fill)",
        "observed": "fmvc-imk (mean fill, observed-rows graph)",
    }
