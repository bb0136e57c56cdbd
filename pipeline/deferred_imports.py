"""Two modules `import ray` loads and a build never uses, loaded on first use instead.

`import ray` imports `requests`, for its TPU detection on Google Cloud
(ray._private.accelerators.tpu), and `jsonschema`, to check runtime-env plugin schemas
(ray._private.runtime_env.plugin_schema_manager), and with them urllib3, idna,
charset_normalizer, referencing, attrs and rpds: 0.15-0.2 s of the 0.6-0.7 s that
`import ray` took on a 2-core machine (measured: 0.59-0.71 s against 0.40-0.49 s,
five runs each). A small build pays it twice on its critical path, one after the
other: in the driver before Ray can start, then in the first worker before the first
task can. Both modules are imported with a plain `import X` at the top, and used
only inside functions a build does not call (a GCE metadata request, a plugin's
schema check).

`defer` puts a `DeferredModule` in `sys.modules` for each: the real module is
imported the first time anything reads an attribute the stand-in lacks, which a
use of the module does at once (`requests.get`, `jsonschema.validate`, a submodule's
import, which reads `__path__`). From then on the stand-in forwards every read to it,
and `sys.modules` holds the real module. Code that uses them (huggingface_hub's
requests, nbformat's jsonschema) gets them whole.

Not `importlib.util.LazyLoader`: on Python 3.11 an `import X` of a module that is
already in `sys.modules` reads its `__spec__` (to see whether it is still
initializing), and any attribute read loads a lazy module, so Ray's own `import
requests` loaded it at once (measured: the same 711 modules as without it).

Used by the `lemur-data` command (cli.run) and by the workers of a build's own local
Ray (pipeline/ray_worker.py). A cluster's workers are `ray start`'s, left as they are.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types

# What each is imported for in Ray 2.60; a build uses neither.
DEFERRED = {
    "requests": "ray._private.accelerators.tpu: GCE metadata requests",
    "jsonschema": "ray._private.runtime_env.plugin_schema_manager: plugin schemas",
}

_lock = threading.Lock()  # one import, should two threads use a module at once


class DeferredModule(types.ModuleType):
    """In `sys.modules` for a module not imported yet; imports it on the first read of
    an attribute it lacks (it has only a new module's `__name__`, `__doc__` (None) and
    the like, and `__spec__`), then forwards."""

    def __getattr__(self, attribute: str) -> object:
        return getattr(self.loaded(), attribute)

    def loaded(self) -> types.ModuleType:
        """The real module, imported on the first call."""
        with _lock:
            real = self.__dict__.get("_real")
            if real is None:
                if sys.modules.get(self.__name__) is self:
                    del sys.modules[self.__name__]  # else import_module returns self
                try:
                    real = importlib.import_module(self.__name__)
                except BaseException:
                    sys.modules.setdefault(self.__name__, self)
                    raise
                self.__dict__["_real"] = real
            return real


def defer() -> list[str]:
    """A stand-in for each module of DEFERRED that is installed and not imported yet;
    the names it deferred."""
    deferred = []
    for name in DEFERRED:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)  # finds, does not import
        if spec is None:
            continue
        module = DeferredModule(name)
        module.__spec__ = spec  # what `import` reads; no __path__: see the docstring
        sys.modules[name] = module
        deferred.append(name)
    return deferred
