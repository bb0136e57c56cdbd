"""pipeline/deferred_imports.py: Ray imports without requests and jsonschema, and both
are whole the moment something uses them. Each check runs in a new interpreter, as the
`lemur-data` command and a local Ray's workers start."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.test_cli import REPO

_PROBE = """
import json, sys
from lemur_data.pipeline.deferred_imports import DeferredModule, defer
deferred = defer()
import ray
seen = {"deferred": deferred,
        "after_ray": sorted(m for m in ("requests", "urllib3", "jsonschema", "referencing")
                            if m in sys.modules
                            and not isinstance(sys.modules[m], DeferredModule))}
import requests
import requests.adapters  # a submodule's import reads the package's __path__
seen["adapter"] = requests.adapters.HTTPAdapter.__name__
seen["status"] = requests.codes.ok
seen["real_in_sys_modules"] = type(sys.modules["requests"]).__name__
from jsonschema import ValidationError, validate
validate(3, {"type": "integer"})
try:
    validate("3", {"type": "integer"})
except ValidationError as error:
    seen["invalid"] = error.validator
seen["again"] = defer()  # both are imported now: nothing to defer
print(json.dumps(seen))
"""


def test_ray_imports_without_them_and_a_use_loads_them_whole() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout)
    assert seen["deferred"] == ["requests", "jsonschema"]
    assert seen["after_ray"] == [], "Ray loaded a deferred module (or what it imports)"
    assert seen["adapter"] == "HTTPAdapter"
    assert seen["status"] == 200
    assert seen["real_in_sys_modules"] == "module"
    assert seen["invalid"] == "type"
    assert seen["again"] == []
