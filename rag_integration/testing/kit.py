"""What every family's contract kit shares: the adapter a backend's test fills in, and one way to send a request."""

from __future__ import annotations

from typing import Any, ClassVar

from rag_integration.testing.runner import run_feature


class ContractKit:
    """A backend's test subclasses its family's kit and returns the class under test from ``connector_class``;
    ``backend_options`` adds what the backend needs in tests (a small embedder, a local model folder)."""

    feature_name: ClassVar[str] = ""

    @classmethod
    def connector_class(cls) -> type[Any]:
        raise NotImplementedError("return the backend class under test")

    @classmethod
    def backend_options(cls) -> dict[str, Any]:
        """Extra options every request of this backend needs in tests."""
        return {}

    def request(self, **options: Any) -> dict[str, Any]:
        """The backend's selector, then ``backend_options``, then the test's own options."""
        connector = self.connector_class()
        return {connector.SELECTOR: connector.BACKEND, **self.backend_options(), **options}

    def run(self, **options: Any) -> list[Any]:
        """The feature's rows for one request, through ``mlodaAPI.run_all``."""
        return run_feature(self.feature_name, self.request(**options), {self.connector_class()})
