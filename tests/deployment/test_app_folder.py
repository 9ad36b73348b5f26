"""``flwr run`` gets a copy of the app folder that builds the same app bundle, found without
walking the folders Flower drops."""

import os

import pytest
from flwr.cli.build import build_fab_from_disk

from fedmf_app.deployment.app_folder import stage_app
from tests.support.flower import ROOT

# Flower builds the bundle with pathspec patterns it names by a deprecated alias
pytestmark = pytest.mark.filterwarnings("ignore:GitWildMatchPattern:DeprecationWarning")


def test_the_copy_of_this_app_builds_the_same_bundle_byte_for_byte(tmp_path):
    assert build_fab_from_disk(stage_app(ROOT, tmp_path / "app")) == build_fab_from_disk(ROOT)


def _write(path, text="x = 1\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_ignored_folders_are_not_copied_and_packed_files_are(tmp_path):
    app = tmp_path / "app"
    _write(app / "pyproject.toml", "[project]\nname = 'a'\n")
    _write(app / ".gitignore", "big/\n*.tmp\n")
    for kept in ("a.py", "sub/b.md", "sub/deep/c.json", "conf/d.yaml"):
        _write(app / kept)
    dropped = ("big/e.py", ".venv/lib/f.py", "sub/__pycache__/g.py", ".git/h.md", "notes.txt", "i.py.tmp")
    for name in dropped:
        _write(app / name)
    outside = tmp_path / "outside"
    _write(outside / "j.py")
    os.symlink(outside, app / "linked")
    copied = stage_app(app, tmp_path / "staged")
    files = sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*") if p.is_file())
    assert files == [".gitignore", "a.py", "conf/d.yaml", "pyproject.toml", "sub/b.md", "sub/deep/c.json"]
    # staging again replaces the copy
    (app / "a.py").unlink()
    assert not (stage_app(app, tmp_path / "staged") / "a.py").exists()


def test_the_copy_must_be_outside_the_app_folder(tmp_path):
    with pytest.raises(ValueError, match="outside the app folder"):
        stage_app(tmp_path, tmp_path / "inside")
