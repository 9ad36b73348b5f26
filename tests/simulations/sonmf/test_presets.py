"""Paper A's figure presets compose to valid run configs (no Flower run)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fedmf_app.registry import validate_run_config

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("preset", ["sonmf/fig2", "sonmf/fig3", "sonmf/fig4"])
def test_presets_compose_to_valid_run_configs(preset):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(version_base=None, config_dir=str(ROOT / "conf")):
        cfg = compose(config_name="config", overrides=[f"+experiment={preset}"], return_hydra_config=True)
        params = OmegaConf.to_container(cfg.hydra.sweeper.params)
        assert params["run.heterogeneity"].split(",") == ["0.0", "0.3", "0.6", "0.9"]
        # every swept value composes to a run config the app accepts
        for key, values in params.items():
            for value in values.split(","):
                job = compose(config_name="config", overrides=[f"+experiment={preset}", f"{key}={value}"])
                validate_run_config(OmegaConf.to_container(job.run, resolve=True))
