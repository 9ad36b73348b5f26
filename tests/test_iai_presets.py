"""FMVC-IAI hydra presets compose to valid run configs (no Flower run)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.config import validate_run_config
from simulations.iai_table import variant_name

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("preset", ["iai_hw_missing", "iai_hw_ablation"])
def test_iai_presets_compose_to_valid_run_configs(preset):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
        params = OmegaConf.to_container(cfg.hydra.sweeper.params)
        assert params["run.seed"].split(",") == ["0", "1", "2", "3", "4"]
        variants = set()
        for key, values in params.items():
            for value in values.split(","):
                job = compose(config_name="config", overrides=[f"+experiment={preset}", f"{key}={value}"])
                run = validate_run_config(OmegaConf.to_container(job.run, resolve=True))
                assert (run["algorithm"], run["dataset"], run["num-clients"]) == ("fmvc-iai", "hw", 6)
                assert job.num_supernodes == 6 and run["num-server-rounds"] == 6
                variants.add(variant_name(run))
        expected = {"full"} if preset == "iai_hw_missing" else {"full", "no M1", "no M2", "no M3", "no M4"}
        assert variants == expected
