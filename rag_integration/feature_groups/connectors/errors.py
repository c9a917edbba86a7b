"""The SPEC's error classes, all ``ConnectorError(ValueError)`` subclasses (defined once in ``rag_integration.core``)."""

from rag_integration.core.errors import (
    BackendUnavailableError,
    ConnectorError,
    DeadlineExceededError,
    DuplicateDocIdError,
    GroundingError,
    IndexMismatchError,
    InvalidOptionError,
    MissingOptionError,
    RankingContractError,
    RemoteServiceError,
    SqlSafetyError,
    UnknownBackendError,
    UnknownOptionError,
    UnsafePathError,
)

__all__ = [
    "BackendUnavailableError",
    "ConnectorError",
    "DeadlineExceededError",
    "DuplicateDocIdError",
    "GroundingError",
    "IndexMismatchError",
    "InvalidOptionError",
    "MissingOptionError",
    "RankingContractError",
    "RemoteServiceError",
    "SqlSafetyError",
    "UnknownBackendError",
    "UnknownOptionError",
    "UnsafePathError",
]
