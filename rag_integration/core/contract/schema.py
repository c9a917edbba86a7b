"""The typed shape of every output column, declared once and spelled out for each compute framework.

A shape is a small tree: a scalar name (``STRING``, ``FLOAT``, ``INT``, ``JSON``), a dict of named fields (a
struct) or a one-element list (a list of that shape). ``JSON`` marks free-form values (metadata, SQL parameters,
result rows) that no fixed column type can hold without losing or coercing something: the columnar frameworks carry
them as JSON text, and a value JSON cannot give back exactly is refused rather than changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rag_integration.core.errors import InvalidOptionError

STRING = "string"
FLOAT = "double"
INT = "int64"
JSON = "json"

Shape = Any
"""``STRING | FLOAT | INT | JSON | dict[str, Shape] | list[Shape]`` (a list holds exactly one shape)."""

PASSAGE: dict[str, Shape] = {"doc_id": STRING, "text": STRING, "score": FLOAT, "rank": INT}


def passages_shape(return_metadata: bool = False, explain: bool = False) -> Shape:
    """A ranked list of passages, with ``metadata`` and ``explanation`` as JSON text when asked for: both are
    free-form dicts whose keys differ per document or per backend."""
    passage = dict(PASSAGE)
    if return_metadata:
        passage["metadata"] = JSON
    if explain:
        passage["explanation"] = JSON
    return [passage]


def arrow_type(shape: Shape) -> Any:
    """The PyArrow type of ``shape`` (``JSON`` is a string holding JSON text)."""
    import pyarrow as pa

    if isinstance(shape, dict):
        return pa.struct([pa.field(name, arrow_type(field), nullable=True) for name, field in shape.items()])
    if isinstance(shape, list):
        return pa.list_(arrow_type(shape[0]))
    return {STRING: pa.string(), JSON: pa.string(), FLOAT: pa.float64(), INT: pa.int64()}[shape]


def holds_json(shape: Shape) -> bool:
    """Whether any part of ``shape`` is ``JSON`` (otherwise values go into a column as they are)."""
    if isinstance(shape, dict):
        return any(holds_json(field) for field in shape.values())
    if isinstance(shape, list):
        return holds_json(shape[0])
    return bool(shape == JSON)


def encode(value: object, shape: Shape, where: str) -> object:
    """``value`` with every ``JSON`` part turned into its JSON text, checked to read back unchanged."""
    if value is None:
        return None
    if isinstance(shape, dict):
        if not isinstance(value, Mapping):
            raise InvalidOptionError(where, value, "a dict of " + ", ".join(shape))
        return {name: encode(value.get(name), field, f"{where}.{name}") for name, field in shape.items()}
    if isinstance(shape, list):
        if not isinstance(value, (list, tuple)):
            raise InvalidOptionError(where, value, "a list")
        return [encode(item, shape[0], f"{where}[{position}]") for position, item in enumerate(value)]
    if shape == JSON:
        return json_text(value, where)
    return value


def json_text(value: object, where: str) -> str:
    """JSON text that decodes to a value equal to ``value`` and of the same types (no tuple turns into a list, no
    int key into a str, no NaN or date slips through)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        same = _same_json(json.loads(text), value)
    except (TypeError, ValueError, RecursionError) as error:  # RecursionError: nested past the interpreter's depth
        raise InvalidOptionError(where, value, _JSON_EXPECTED) from error
    if not same:
        raise InvalidOptionError(where, value, _JSON_EXPECTED)
    return text


_JSON_EXPECTED = (
    "values a columnar frame can carry as JSON without change: str keys; str, int, float, bool, None, lists and dicts"
)


def _same_json(decoded: object, original: object) -> bool:
    if type(decoded) is not type(original) and not (isinstance(original, Mapping) and isinstance(decoded, dict)):
        return False
    if isinstance(original, Mapping) and isinstance(decoded, dict):
        return decoded.keys() == original.keys() and all(_same_json(decoded[k], original[k]) for k in original)
    if isinstance(original, list) and isinstance(decoded, list):
        return len(decoded) == len(original) and all(_same_json(d, o) for d, o in zip(decoded, original, strict=True))
    return bool(decoded == original)


def decode(value: Any, shape: Shape) -> Any:
    """The inverse of ``encode``: Python values as the PythonDict framework returns them."""
    if value is None:
        return None
    if isinstance(shape, dict):
        return {name: decode(value.get(name), field) for name, field in shape.items()}
    if isinstance(shape, list):
        return [decode(item, shape[0]) for item in value]
    if shape == JSON:
        return json.loads(value)
    return value
