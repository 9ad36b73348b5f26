"""Every run record names the code that made it and its full configuration."""

import shutil

import fedmf_app.federated.results as results
from fedmf_app.registry import validate_run_config

from support.data import SONMF_SMALL
from support.federation import run_federation


def test_a_run_record_carries_the_code_version_and_every_config_value(tmp_path):
    cfg = validate_run_config({**SONMF_SMALL, "num-server-rounds": 1})
    strategy, _ = run_federation(tmp_path, cfg)
    record = results.load_result(strategy.recorder.run_dir)
    assert record["config"] == cfg and set(record["config"]) == set(validate_run_config({}))
    version = record["code_version"]
    assert set(version) == {"package", "source_sha256", "git"}
    assert len(version["source_sha256"]) == 64


def test_outside_a_git_checkout_the_source_hash_names_the_code(tmp_path, monkeypatch):
    here = results.code_version()
    copy = tmp_path / "fedmf_app"
    shutil.copytree(results._PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(results, "_PACKAGE", copy)
    results.code_version.cache_clear()
    try:
        shipped = results.code_version()
        assert shipped["git"] is None  # e.g. a FAB installed by a SuperNode
        assert shipped["source_sha256"] == here["source_sha256"]  # the same code, the same hash
        (copy / "__init__.py").write_text((copy / "__init__.py").read_text() + "\n# changed\n")
        results.code_version.cache_clear()
        assert results.code_version()["source_sha256"] != here["source_sha256"]
    finally:
        results.code_version.cache_clear()
