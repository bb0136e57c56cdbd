"""A manifest file read: bounded in size, YAML aliases bounded in what they expand to,
duplicate keys refused, before the schema sees it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ...stages.user_file import MiB, UserFileError, read_user_file
from .errors import ManifestError
from .parse import parse_manifest
from .schema import Manifest

# A manifest is a few KB; these bound what a hostile file can cost before it is refused.
MAX_MANIFEST_BYTES = 4 * MiB
MAX_YAML_NODES = 100_000


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read, expand placeholders and validate a manifest file."""
    where = str(path)
    text = ""
    try:
        text = read_user_file(path, what="manifest", max_bytes=MAX_MANIFEST_BYTES).decode()
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_expansion(root)  # before anything walks the tree with aliases expanded
        duplicates = _duplicate_keys(root)
        raw = yaml.safe_load(text)
    except FileNotFoundError:
        raise ManifestError(where, ["file not found"]) from None
    except IsADirectoryError:
        raise ManifestError(where, ["is a folder; give the manifest's YAML file"]) from None
    except UserFileError as error:
        raise ManifestError(where, [str(error).removeprefix(f"{where}: ")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(where, [f"cannot be read: {error}"]) from None
    except yaml.YAMLError as error:
        raise ManifestError(where, [f"not valid YAML: {error}"]) from None
    except RecursionError:
        raise ManifestError(where, ["nested too deeply to be a manifest"]) from None
    except _ExpansionError as error:
        raise ManifestError(where, [str(error)]) from None
    except ValueError as error:  # a scalar YAML cannot construct: an int of 5,000 digits
        raise ManifestError(where, _unconstructible(text, error)) from None
    if duplicates:
        raise ManifestError(where, duplicates)
    if not isinstance(raw, dict):
        raise ManifestError(where, ["top level must be a mapping of keys (name, sources, ...)"])
    return parse_manifest(raw, where, Path(path).resolve().parent)


class _ExpansionError(ValueError):
    pass


def _unconstructible(text: str, error: ValueError) -> list[str]:
    """Where YAML could not build a value: Python refuses to read an integer of more than
    4,300 digits (sys.get_int_max_str_digits), and no manifest key wants one."""
    found = []
    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int") \
                and len(node.value) > 100:
            found.append(f"line {node.start_mark.line + 1}: a number of {len(node.value):,} "
                         "digits; no manifest key takes one")
        stack += _children(node)
    return sorted(found) or [f"a value YAML cannot build: {error}"]


def _check_expansion(root: yaml.Node | None) -> None:
    """Refuse YAML whose aliases expand past MAX_YAML_NODES nodes, or refer to themselves.

    Composing keeps an alias as a shared node, so a 525-byte "billion laughs" composes at
    once; every walk of the loaded value (duplicate keys, placeholders, validation) then
    visits each alias again, exponentially. The expanded size is counted here in linear
    time (each distinct node once, its size remembered)."""
    if root is None:
        return
    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            if size[key] > MAX_YAML_NODES:
                raise _ExpansionError(
                    f"YAML aliases expand to more than {MAX_YAML_NODES} values (line "
                    f"{node.start_mark.line + 1}); a manifest needs far fewer: write the "
                    "values out or use fewer nested aliases")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise _ExpansionError(f"a YAML alias refers to a value that holds it (line "
                                  f"{node.start_mark.line + 1}); a manifest cannot be recursive")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _duplicate_keys(node: yaml.Node | None, path: str = "") -> list[str]:
    """`key.path: duplicate key` for each mapping key given twice. YAML loaders keep the
    last silently, so a second `stages:` would drop the first without a word."""
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            where = f"{path}.{name}" if path else str(name)
            if name is not None and name in first:
                problems.append(f"{where}: duplicate key (lines {first[name]} and "
                                f"{key.start_mark.line + 1}); give each key once")
            elif name is not None:
                first[name] = key.start_mark.line + 1
            problems += _duplicate_keys(value, where)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, f"{path}[{i}]")
    return problems
