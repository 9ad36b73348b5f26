"""The run figures read at a glance: no folders in titles, no curve hidden or drawn off its scale,
labelled thresholds, axes scaled to the data."""

import matplotlib.pyplot as plt

import fedmf_app.methods.iai.plots as iai_plots
import fedmf_app.methods.sonmf.plots as sonmf_plots
from fedmf_app.federated.figures import save_figure


def _capture(monkeypatch, module):
    drawn = {}

    def keep(fig, path, title):
        drawn["fig"], drawn["title"] = fig, title
        return save_figure(fig, path, title)

    monkeypatch.setattr(module, "save_figure", keep)
    return drawn


def test_titles_show_file_names_not_their_folders(tmp_path):
    fig, _ = plt.subplots()
    save_figure(fig, tmp_path / "f.png", "fmvc-imk: /data/org/a.csv,/data/org/b.npy, seed=0")
    assert fig._suptitle.get_text() == "fmvc-imk: a.csv,b.npy, seed=0"


def _iai_result(components):
    rounds = [{"round": 1, "acc": 0.95, "nmi": 0.90, "ari": 0.91, "components": components[0]}]
    for s, c in enumerate(components[1:], start=2):
        losses = {
            "loss_attribute": 1.0 / s,
            "loss_structure": 0.9,
            "loss_clustering": 0.0 if s == 2 else 0.3 / s,
        }
        rounds.append(
            {"round": s, "phase": "train", "acc": 0.96, "nmi": 0.92, "ari": 0.93, "components": c, **losses}
        )
    return {"rounds": rounds}


def test_iai_scores_are_scaled_to_their_values_and_zero_losses_stay_off_the_log_axis(tmp_path, monkeypatch):
    drawn = _capture(monkeypatch, iai_plots)
    iai_plots.plot_rounds(_iai_result([1, 1, 1, 1]), tmp_path / "c.png", "fmvc-iai")
    scores, losses = drawn["fig"].axes
    low, high = scores.get_ylim()
    assert 0.85 < low < 0.90 and 0.96 < high < 1.0
    assert all(min(line.get_ydata()) > 0 for line in losses.get_lines())
    assert any("0 in 1 round: not drawn" in text.get_text() for text in losses.get_legend().get_texts())
    assert "1 connected component(s) in every round" in drawn["title"]  # a constant: no panel
    iai_plots.plot_rounds(_iai_result([1, 3, 2, 1]), tmp_path / "c.png", "fmvc-iai")
    assert len(drawn["fig"].axes) == 3


def test_sonmf_keeps_every_residual_visible_and_labels_the_target(tmp_path, monkeypatch):
    drawn = _capture(monkeypatch, sonmf_plots)
    rounds = [
        {
            "round": s,
            "residual": 10.0 / s,
            "residual_v": 10.0 / s,
            "residual_u": 1e-3 / s,
            "residual_ratio": 1.0 / s,
        }
        for s in range(1, 11)
    ]
    sonmf_plots.plot_residuals({"rounds": rounds}, tmp_path / "r.png", "fedsonmf")
    absolute, relative, _ = drawn["fig"].axes
    lines = {line.get_label(): line for line in absolute.get_lines()}
    # R^s and R_V coincide here: they differ in style and R_V carries markers
    assert (
        lines["R_V"].get_marker() != "None"
        and lines["R_V"].get_linestyle() != lines["R^s = R_V + R_U"].get_linestyle()
    )
    assert any(line.get_label().startswith("target 0.01") for line in relative.get_lines())
