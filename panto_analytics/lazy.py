"""A package's names imported on first use (PEP 562 ``__getattr__``): importing the package loads nothing heavy.

>>> get = lazy_getattr("panto_analytics.ingest", {"expand_paths": ".paths"})
>>> get("expand_paths").__module__
'panto_analytics.ingest.paths'
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, names: Mapping[str, str], modules: Mapping[str, str] | None = None,
                 ) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each of ``names`` (``{name: the module defining it}``) and each of
    ``modules`` (``{attribute: module}``), module paths relative to ``package``, imported when first asked for and
    kept on the package; any other name an AttributeError.

    >>> lazy_getattr("panto_analytics.ingest", {})("nothing")
    Traceback (most recent call last):
    AttributeError: module 'panto_analytics.ingest' has no attribute 'nothing'
    """
    def get(name: str) -> Any:
        if modules is not None and name in modules:
            value = importlib.import_module(modules[name], package)
        elif name in names:
            value = getattr(importlib.import_module(names[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value
    return get
