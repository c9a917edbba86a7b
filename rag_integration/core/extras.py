"""Optional libraries: import on first use, or say which extra to install."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from rag_integration.core.errors import BackendUnavailableError


def require_module(module: str, backend: str, extra: str, distribution: str = "rag-integration") -> Any:
    """Import ``module`` or raise ``BackendUnavailableError`` naming the distribution's pip extra that provides it
    (a third-party backend passes its own distribution)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise BackendUnavailableError(backend, extra, module, distribution=distribution) from error


def optional_module(module: str) -> Any:
    """``module`` imported, or None when it is not installed: for a caller that skips what it cannot read."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def modules_installed(modules: tuple[str, ...]) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)
