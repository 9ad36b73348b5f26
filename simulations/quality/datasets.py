"""The six real development data sets of the quality study, found under a data folder.

The files are not shipped with the app (see docs/data.md); commands take ``--data-root`` (default
``../shared/data``, the development copies) and skip a data set whose file is absent.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEVELOPMENT_SETS", "available_sets"]

#: Short name -> file under the data root (``hw`` is embedded in the app).
DEVELOPMENT_SETS: dict[str, str] = {
    "HW": "hw",
    "ORL": "orl/ORL.mat",
    "Yale": "yale/yaleA_3view.mat",
    "Sonar": "sonar/sonar_3view.mat",
    "3Sources": "3sources/3Sources.mat",
    "BBCSport": "bbcsport/BBCSport.mat",
}


def available_sets(data_root: Path, names: list[str] | None = None) -> dict[str, str]:
    """The run-config ``dataset`` value of every development set present.

    Parameters
    ----------
    data_root : Path
        Folder holding the development copies.
    names : list of str, optional
        Only these (default: all six, in study order).

    Returns
    -------
    dict
        Short name -> ``dataset`` (an embedded name or an absolute path).
    """
    out = {}
    for name in names or list(DEVELOPMENT_SETS):
        if name not in DEVELOPMENT_SETS:
            raise SystemExit(f"unknown data set {name!r}; known: {', '.join(DEVELOPMENT_SETS)}")
        where = DEVELOPMENT_SETS[name]
        if "/" not in where:
            out[name] = where
        elif (data_root / where).is_file():
            out[name] = str((data_root / where).resolve())
    return out
