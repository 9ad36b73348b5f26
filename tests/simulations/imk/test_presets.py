"""Paper B's hydra presets compose to valid run configs (no Flower run)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.registry import validate_run_config

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("preset", ["imk/grid"])
def test_fmvc_imk_presets_compose_to_valid_run_configs(preset):
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
        params = OmegaConf.to_container(cfg.hydra.sweeper.params)
        assert params["algorithm"] == "fmvc-imk"
        for key, values in params.items():
            for value in values.split(","):
                job = compose(
                    config_name="config",
                    overrides=[f"+experiment={preset}", f"{key}={value}"],
                    return_hydra_config=True,
                )
                HydraConfig.instance().set_config(job)  # resolves ${hydra:runtime.cwd}
                run = OmegaConf.to_container(job.run, resolve=True)
                assert run["dataset"] == str(ROOT / ".." / "shared" / "data" / "sonar" / "sonar_3view.mat")
                validate_run_config({**run, "algorithm": "fmvc-imk"})
