"""A tiny FlashRank-compatible model folder for offline tests.

``build_tiny_flashrank_model`` writes a small but real ONNX cross-encoder (token-overlap logits between the query
and passage segments) with a WordPiece tokenizer, in the folder layout FlashRank loads, so the whole path (load,
score, reorder) runs with no network. ONNX is protobuf; the few messages the model needs are written here field by
field, so no ``onnx`` package is needed either.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from pathlib import Path

from rag_integration.core.text.analysis import words

TINY_MODEL_NAME = "ms-marco-TinyBERT-L-2-v2"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def build_tiny_flashrank_model(cache_dir: Path, texts: Iterable[str], model_name: str = TINY_MODEL_NAME) -> Path:
    """Write ``cache_dir/<model_name>/`` as FlashRank expects it and return that folder.

    The vocabulary is every word of ``texts`` (``core.text.analysis.words``); the model's logit for a (query, passage) pair counts
    the pairs of equal words across the two segments, so passages sharing more words with the query score higher.
    """
    from flashrank.Config import model_file_map
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder = Path(cache_dir) / model_name
    folder.mkdir(parents=True, exist_ok=True)
    known = sorted({word for text in texts for word in words(text)} - set(SPECIAL_TOKENS))
    vocab = {token: index for index, token in enumerate((*SPECIAL_TOKENS, *known))}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    special = {
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "mask_token": "[MASK]",
    }
    (folder / "special_tokens_map.json").write_text(json.dumps(special), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 512, "do_lower_case": True, **special}), encoding="utf-8"
    )
    (folder / "config.json").write_text(
        json.dumps({"model_type": "bert", "pad_token_id": 0, "vocab_size": len(vocab)}), encoding="utf-8"
    )
    (folder / model_file_map[model_name]).write_bytes(_overlap_cross_encoder(len(vocab), len(SPECIAL_TOKENS)))
    return folder


# Protobuf wire format; field numbers are those of onnx.proto.
def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    payload = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _tensor(name: str, dims: list[int], data_type: int, raw: bytes) -> bytes:
    return b"".join(_field(1, dim) for dim in dims) + _field(2, data_type) + _field(8, name) + _field(9, raw)


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_field(1, _field(1, dim) if isinstance(dim, int) else _field(2, dim)) for dim in dims)
    return _field(1, name) + _field(2, _field(1, _field(1, elem_type) + _field(2, shape)))


def _node(op_type: str, inputs: list[str], outputs: list[str], **int_attributes: int) -> bytes:
    body = b"".join(_field(1, name) for name in inputs) + b"".join(_field(2, name) for name in outputs)
    body += _field(4, op_type)
    for name, value in int_attributes.items():
        body += _field(5, _field(1, name) + _field(3, value) + _field(20, 2))
    return body


def _overlap_cross_encoder(vocab_size: int, special_count: int) -> bytes:
    """logit = <sum of query-segment one-hots, sum of passage-segment one-hots>; special tokens embed to zero."""
    float_type, int64_type = 1, 7
    embedding = [
        1.0 if row == column and row >= special_count else 0.0
        for row in range(vocab_size)
        for column in range(vocab_size)
    ]
    initializers = [
        _tensor("embedding", [vocab_size, vocab_size], float_type, struct.pack(f"<{len(embedding)}f", *embedding)),
        _tensor("axis_tokens", [1], int64_type, struct.pack("<q", 1)),
        _tensor("axis_features", [1], int64_type, struct.pack("<q", 2)),
    ]
    nodes = [
        _node("Gather", ["embedding", "input_ids"], ["tokens"]),
        _node("Cast", ["attention_mask"], ["mask"], to=float_type),
        _node("Cast", ["token_type_ids"], ["segment"], to=float_type),
        _node("Mul", ["mask", "segment"], ["passage_mask"]),
        _node("Sub", ["mask", "passage_mask"], ["query_mask"]),
        _node("Unsqueeze", ["query_mask", "axis_features"], ["query_mask3"]),
        _node("Unsqueeze", ["passage_mask", "axis_features"], ["passage_mask3"]),
        _node("Mul", ["tokens", "query_mask3"], ["query_tokens"]),
        _node("Mul", ["tokens", "passage_mask3"], ["passage_tokens"]),
        _node("ReduceSum", ["query_tokens", "axis_tokens"], ["query_vector"], keepdims=0),
        _node("ReduceSum", ["passage_tokens", "axis_tokens"], ["passage_vector"], keepdims=0),
        _node("Mul", ["query_vector", "passage_vector"], ["products"]),
        _node("ReduceSum", ["products", "axis_tokens"], ["logits"], keepdims=1),
    ]
    inputs = [
        _value_info(name, int64_type, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = (
        b"".join(_field(1, node) for node in nodes)
        + _field(2, "tiny_overlap_cross_encoder")
        + b"".join(_field(5, tensor) for tensor in initializers)
        + b"".join(_field(11, value) for value in inputs)
        + _field(12, _value_info("logits", float_type, ["batch", 1]))
    )
    return (
        _field(1, 7)
        + _field(2, "rag-integration-testing")
        + _field(7, graph)
        + _field(8, _field(1, "") + _field(2, 13))
    )
