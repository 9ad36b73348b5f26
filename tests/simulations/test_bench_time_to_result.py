"""Time to a result (``simulations.bench_time_to_result``): the published tables are what their
records give, and a job other than the default names the keys it sets."""

from pathlib import Path

import pytest

from simulations.bench_time_to_result import DEFAULT_JOB, _read_runs, table

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "deployment" / "time_to_result"


@pytest.mark.parametrize(
    "folder",
    [
        "",
        "key_agreement",
        "vectorised_ascent",
        "imk_local_iterations",
        "imk_start",
        "imk_spectral_tol",
        "imk_spectral_tol_6e-3",
        "no_end_exchange",
        "imk_patience_1",
        "iai_imports",
        "iai_imports_later",
        "iai_adam",
        "snapshot",
        "snapshot_5b6930c",
        "iai_label_stop",
        "snapshot_b0065a8",
        "imk_relaxation",
        "snapshot_317b33a",
        "polling",
        "sonmf_label_stop",
        "snapshot_98c328d",
    ],
)
def test_the_published_tables_are_what_the_records_give(folder):
    here = FOLDER / folder
    before = here / "before.jsonl"
    expected = table(_read_runs(here / "runs.jsonl"), _read_runs(before) if before.exists() else None)
    assert (here / "table.md").read_text() == expected + "\n"


@pytest.mark.parametrize(
    "folder, marker",
    [
        ("imk_local_iterations", "imk-local"),
        ("imk_start", "imk-start"),
        ("imk_spectral_tol", "imk-spectral-tol"),
        ("imk_spectral_tol_6e-3", "imk-spectral-tol-6e-3"),
        ("no_end_exchange", "no-end-exchange"),
        ("imk_patience_1", "imk-patience-1"),
        ("iai_imports", "iai-imports"),
        ("iai_imports_later", "iai-imports-later"),
        ("iai_adam", "iai-adam"),
        ("snapshot", "snapshot"),
        ("snapshot_5b6930c", "snapshot-5b6930c"),
        ("iai_label_stop", "iai-label-stop"),
        ("snapshot_b0065a8", "snapshot-b0065a8"),
        ("imk_relaxation", "imk-relaxation"),
        ("snapshot_317b33a", "snapshot-317b33a"),
        ("polling", "polling"),
        ("sonmf_label_stop", "sonmf-label-stop"),
        ("snapshot_98c328d", "snapshot-98c328d"),
    ],
)
def test_deployment_md_embeds_the_tables(folder, marker):
    page = (FOLDER.parents[1] / "deployment.md").read_text()
    table = (FOLDER / folder / "table.md").read_text()
    assert f"<!-- {marker}:start -->\n{table}<!-- {marker}:end -->" in page


def test_a_job_beside_the_default_is_named_by_its_extra_keys():
    record = {"method": "fmvc-imk", "exit_code": 0, "wall_s": 100.0, "rounds": 20, "rounds_s": 80.0}
    jobs = [DEFAULT_JOB, f"{DEFAULT_JOB} imk.rho=1.0"]
    rows = table([{**record, "job": job, "acc": 0.9} for job in jobs]).splitlines()
    assert rows[2].startswith("| fmvc-imk | 1 |")
    assert rows[3].startswith("| fmvc-imk (imk.rho=1.0) | 1 |")
