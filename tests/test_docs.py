"""The docs cite only what the repository holds: every relative link of the Markdown pages and every
in-repo path that a page, a module or a preset names exists, and nothing points outside the repo."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "fedmf_app").rglob("README.md")])
SOURCES = sorted(
    [
        *(ROOT / "fedmf_app").rglob("*.py"),
        *(ROOT / "simulations").rglob("*.py"),
        *(ROOT / "conf").rglob("*.yaml"),
        ROOT / "pyproject.toml",
    ]
)
# a path inside the repository: a top-level folder, then names, then a file ending
IN_REPO = re.compile(
    r"(?<![\w./-])((?:fedmf_app|simulations|tests|conf|docs)/[\w./-]*\w\.(?:py|md|yaml|json|png|toml))(?!\w)"
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _cited(path):
    return sorted(set(IN_REPO.findall(path.read_text())))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if not (page.parent / file).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing {broken}"


@pytest.mark.parametrize("file", PAGES + SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_repository_paths_exist(file):
    missing = [p for p in _cited(file) if not (ROOT / p).exists() and "*" not in p]
    assert not missing, f"{file.relative_to(ROOT)} cites {missing}"
    assert "ALGORITHMS.md" not in file.read_text(), f"{file.relative_to(ROOT)} cites a file outside the repo"


def test_readme_is_short_and_keeps_the_two_set_up_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 12_000
    assert text.count("```bash") == 2 and "<!-- test-command:start -->" in text


def test_the_readme_python_example_runs_as_written(capsys):
    from simulations.run_notebook import python_cells, run_cells

    cells = python_cells((ROOT / "README.md").read_text())
    assert len(cells) == 1
    namespace = run_cells(cells, "readme")
    model = namespace["model"]
    assert model.labels_.shape == namespace["hw"].labels.shape and len(model.history_) == model.n_rounds_
    assert capsys.readouterr().out.startswith("[")


def test_the_expected_results_are_the_estimators_pages_output():
    from simulations.run_notebook import OUTPUT_END, OUTPUT_START

    def output(page):
        return page.split(OUTPUT_START, 1)[1].split(OUTPUT_END, 1)[0]

    table = output((ROOT / "docs" / "estimators.md").read_text())
    assert "| FMVCIMK (paper B) |" in table
    assert output((ROOT / "README.md").read_text()) == table
