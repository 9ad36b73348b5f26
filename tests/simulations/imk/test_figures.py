"""The fmvc-imk figure script on constructed result.json files."""

import json

from fedmf_app.registry import defaults
from simulations.imk.figures import GRID, collect, main


def write_run(folder, lam, mu, seed, acc, status="completed"):
    folder.mkdir(parents=True)
    result = {
        "config": {
            "algorithm": "fmvc-imk",
            "dataset": "/data/sonar_3view.mat",
            "imk.lambda": lam,
            "imk.mu": mu,
            "seed": seed,
        },
        "status": status,
        "error": None,
        "rounds": [],
        "final": {"acc": acc, "nmi": acc / 2, "purity": acc},
    }
    (folder / "result.json").write_text(json.dumps(result))


def test_grid_from_sweep_results(tmp_path, monkeypatch, capsys):
    job = 0
    for i, lam in enumerate(GRID):
        for mu in GRID:
            for seed in (0, 1):
                write_run(tmp_path / "sweep" / str(job), lam, mu, seed, 0.5 + 0.01 * i + 0.002 * seed)
                job += 1
    write_run(tmp_path / "sweep" / "failed", 0.1, 0.1, 0, 0.0, status="failed")
    assert len(collect([tmp_path / "sweep"])) == 2 * len(GRID) ** 2
    monkeypatch.setattr(
        "sys.argv", ["imk_figures", "grid", str(tmp_path / "sweep"), "--out", str(tmp_path / "fig")]
    )
    main()
    out = capsys.readouterr()
    assert (tmp_path / "fig" / "imk_grid_sonar_3view.png").exists()
    best = 100 * (0.5 + 0.05 + 0.001)  # lambda = 10, mean over the two seeds
    assert f"best ACC {best:.1f} % at lambda=10" in out.out
    lam, mu = defaults()["imk.lambda"], defaults()["imk.mu"]
    cell = 100 * (0.5 + 0.01 * GRID.index(lam) + 0.001)
    assert f"defaults ({lam:g}, {mu:g}): {cell:.1f} %" in out.out
    assert "skipped" in out.err and "failed" in out.err
