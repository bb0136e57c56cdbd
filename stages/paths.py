"""Manifest parameters that are paths say so in their type: `LocalPath`.

`pipeline/manifest/` walks the parameter models (sources' readers, stages,
`tokenizer:`, `train:`) and resolves every string a `LocalPath` field holds:
placeholders ({stdlib}, {manifest_dir}, ${ENV}) expanded and a relative local path
made absolute against the manifest's folder (URLs such as s3:// stay as written).
A field of another type is left as written, whatever its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel


@dataclass(frozen=True)
class PathField:
    """Marks a `str` (or each `str` of a list) as a local path or URL.

    `when`: the name of a bool field of the same model that must be true for the value
    to be a path (hf_dataset's `path` is a Hub id unless `from_disk: true`)."""

    when: str | None = None


LocalPath = Annotated[str, PathField()]
"""A local path (placeholders allowed, relative to the manifest's folder) or a URL."""


Expand = Callable[[str, str], str]
"""(value, key path such as `sources[0].reader.root`) -> the resolved path."""


def resolve_paths(value: object, hint: object, where: str, expand: Expand) -> object:
    """`value`, raw manifest data for a field of type `hint`, with every string that a
    `LocalPath` part of the type holds passed through `expand`. Data that does not fit
    the type is returned as it is: validation names it."""
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return _model(value, hint, where, expand) if isinstance(value, dict) else value
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        if any(isinstance(m, PathField) for m in args[1:]):
            return expand(value, where) if isinstance(value, str) else value
        return resolve_paths(value, args[0], where, expand)
    if origin is Union or origin is UnionType:
        member = _member(value, args)
        return value if member is None else resolve_paths(value, member, where, expand)
    if isinstance(value, list) and origin in (list, tuple, set, frozenset, Sequence) and args:
        return [resolve_paths(v, args[0], f"{where}[{i}]", expand) for i, v in enumerate(value)]
    if isinstance(value, dict) and origin in (dict, Mapping) and len(args) == 2:
        return {k: resolve_paths(v, args[1], f"{where}.{k}", expand) for k, v in value.items()}
    return value


def _model(value: dict[str, object], model: type[BaseModel], where: str,
           expand: Expand) -> dict[str, object]:
    out = dict(value)
    for key, item in value.items():
        field = model.model_fields.get(key)
        if field is None:
            continue  # an unknown key: validation refuses it
        at = f"{where}.{key}" if where else key
        marker = next((m for m in field.metadata if isinstance(m, PathField)), None)
        if marker is None:
            out[key] = resolve_paths(item, field.annotation, at, expand)
        elif isinstance(item, str) and (marker.when is None or value.get(marker.when) is True):
            out[key] = expand(item, at)
    return out


def _member(value: object, members: tuple[object, ...]) -> object:
    """The member of a union that `value` is data for (None: nothing to resolve)."""
    if isinstance(value, dict):
        models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
        if len(models) > 1:  # a reader: the one whose `type` literal the value names
            models = [m for m in models if "type" in m.model_fields
                      and value.get("type") in get_args(m.model_fields["type"].annotation)]
        if models:
            return models[0]
        return next((m for m in members if get_origin(m) in (dict, Mapping)), None)
    if isinstance(value, list):
        return next((m for m in members
                     if get_origin(m) in (list, tuple, set, frozenset, Sequence)), None)
    if isinstance(value, str):
        return next((m for m in members if get_origin(m) is Annotated
                     and any(isinstance(x, PathField) for x in get_args(m)[1:])), None)
    return None
