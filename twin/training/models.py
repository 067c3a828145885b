"""Named model families (``data/models.toml``): fill a job file's ``[model]`` from a published shape."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

MODELS_PATH = Path(__file__).resolve().parents[2] / "data" / "models.toml"


class ModelPresetError(ValueError):
    """An unknown model name or a broken models file (names the file and the model)."""


def load_models(path: Path | str = MODELS_PATH) -> dict[str, dict[str, Any]]:
    """``{name: fields}`` of every ``[model."NAME"]`` table of the models file."""
    try:
        with Path(path).open("rb") as fh:
            data = tomllib.load(fh)
    except (FileNotFoundError, tomllib.TOMLDecodeError) as exc:
        raise ModelPresetError(f"{path}: {exc}") from None
    models: dict[str, dict[str, Any]] = data.get("model", {})
    if not models or not all(isinstance(v, dict) for v in models.values()):
        raise ModelPresetError(f'{path}: expected [model."NAME"] tables')
    return models


def expand_model(data: dict[str, Any], source: str, path: Path | str = MODELS_PATH) -> dict[str, Any]:
    """Job mapping with a named model replaced by its published fields.

    ``model = "NAME"`` at the top level becomes ``[model]`` with the preset's fields;
    ``[model] name = "NAME"`` takes the preset and lets the table's other fields override
    it (e.g. ``seq_len``).  Other job mappings are returned unchanged.
    """
    raw = data.get("model")
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict) or "name" not in raw:
        return data
    name = raw["name"]
    models = load_models(path)
    if not isinstance(name, str) or name not in models:
        raise ModelPresetError(
            f"{source}: model {name!r} is not in {Path(path).name} (known: {', '.join(sorted(models))})"
        )
    merged = {**models[name], **{k: v for k, v in raw.items() if k != "name"}}
    return {**data, "model": merged}
