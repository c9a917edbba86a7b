"""What the backends' ``explain=True`` explanations are made of: per-term BM25 and TF-IDF contributions, a dense
similarity, a reciprocal-rank fusion's parts. Only the returned passages are explained, so these run on a few
documents per query, and only when asked for.

Every value is a plain ``str``, ``int``, ``float``, ``bool``, ``None``, list or dict, so an explanation crosses every
compute framework as JSON unchanged (``core.contract.schema``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_integration.core.errors import RankingContractError
from rag_integration.core.text.analysis import split_words

if TYPE_CHECKING:
    import numpy.typing as npt
    import scipy.sparse


def query_words(query: str, terms_of: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """term -> the query's words (lower-cased, as analysed) that gave it, each word once, in query order: the
    surface words behind a stem, so an explanation reads in the user's words as well as the index's."""
    words: dict[str, list[str]] = {}
    for word in split_words(query.lower())[0]:
        for term in terms_of(word):
            found = words.setdefault(term, [])
            if word not in found:
                found.append(word)
    return words


def bm25_contributions(
    matrix: scipy.sparse.csr_matrix,
    nonoccurrence: npt.NDArray[np.float32] | None,
    term_ids: Sequence[int],
    terms: Sequence[str],
    words: Mapping[str, list[str]],
    position: int,
) -> list[dict[str, Any]]:
    """Each query term's share of bm25s's score of the document at ``position``, largest first.

    bm25s adds the term's weight (``matrix``: terms by documents) once per occurrence in the query, in query order,
    in float32, then (BM25L, BM25+) the weights of absent terms (``nonoccurrence``) all at once. Replaying that sum
    gives each occurrence what it added to the float32 total, so the contributions add up to the score itself
    (not merely to within float32 rounding); each is the term's weight times its count up to that rounding.
    """
    running = np.float32(0.0)
    added: list[float] = []
    for term_id in term_ids:
        after = np.float32(running + matrix[term_id, position])
        added.append(float(after) - float(running))
        running = after
    if nonoccurrence is not None and term_ids:
        absent = nonoccurrence[np.asarray(term_ids)].sum()
        total = np.float32(running + absent)
        shares = [float(nonoccurrence[term_id]) for term_id in term_ids]
        shares[-1] = float(total) - float(running) - sum(shares[:-1])
        added = [own + share for own, share in zip(added, shares, strict=True)]
    by_term: dict[str, dict[str, Any]] = {}
    for term, value in zip(terms, added, strict=True):
        entry = by_term.setdefault(term, {"term": term, "query_words": words.get(term, []), "query_count": 0})
        entry["query_count"] += 1
        entry["contribution"] = entry.get("contribution", 0.0) + value
    return largest_first(entry for entry in by_term.values() if entry["contribution"] != 0.0)


def dot_contributions(
    query_row: Mapping[int, float],
    document_row: Mapping[int, float],
    terms: Mapping[int, str],
    words: Mapping[str, list[str]],
) -> list[dict[str, Any]]:
    """The shared terms of two weighted term vectors with ``query weight x document weight``, largest first: the
    parts of their dot product (a cosine, for l2-normalised rows)."""
    return largest_first(
        {
            "term": terms[column],
            "query_words": words.get(terms[column], []),
            "query_weight": float(weight),
            "document_weight": float(document_row[column]),
            "contribution": float(weight) * float(document_row[column]),
        }
        for column, weight in query_row.items()
        if column in document_row
    )


def ngram_words(term: str, words: Mapping[str, list[str]]) -> list[str]:
    """The query words behind a term or a space-joined n-gram of terms, each once."""
    found: list[str] = []
    for part in term.split(" "):
        found.extend(word for word in words.get(part, []) if word not in found)
    return found


def rrf_contributions(
    rankers: Sequence[str],
    ranks: Sequence[Mapping[str, int]],
    scores: Sequence[Mapping[str, float]],
    weights: Sequence[float],
    k: float,
    doc_id: str,
    notes: Sequence[str | None],
) -> list[dict[str, Any]]:
    """One entry per ranking: the document's rank and score in it (None where it was not ranked), the ranking's
    weight and ``weight / (k + rank)``, in ranking order, as ``fuse_ranks`` adds them up."""
    entries = []
    for ranker, ranking, ranker_scores, weight, note in zip(rankers, ranks, scores, weights, notes, strict=True):
        rank = ranking.get(doc_id)
        entry: dict[str, Any] = {
            "ranker": ranker,
            "rank": rank,
            "score": ranker_scores.get(doc_id),
            "weight": float(weight),
            "contribution": 0.0 if rank is None else weight / (k + rank),
        }
        if note is not None:
            entry["note"] = note
        entries.append(entry)
    return entries


def dense_explanation(score: float, model: str, index_kind: str) -> dict[str, Any]:
    """A dense hit: its cosine similarity (inner product of l2-normalised embeddings) and what produced it."""
    return {
        "kind": "dense",
        "metric": "cosine",
        "similarity": score,
        "embedding_model": model,
        "faiss_index": index_kind,
    }


def largest_first(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries by descending ``contribution``, ties by ``term``."""
    return sorted(entries, key=lambda entry: (-entry["contribution"], entry["term"]))


def sparse_row(matrix: scipy.sparse.csr_matrix, row: int) -> dict[int, float]:
    """column -> value of one row of a CSR matrix."""
    start, end = matrix.indptr[row], matrix.indptr[row + 1]
    return dict(zip(matrix.indices[start:end].tolist(), matrix.data[start:end].tolist(), strict=True))


def checked_explanations(owner: str, details: object, counts: Sequence[int]) -> list[list[tuple[str, dict[str, Any]]]]:
    """A backend's ``explain`` answer checked before it is used: per query (``counts[i]`` passages each) one dict per
    passage with a non-empty ``kind``; each as ``(kind, the rest)``, copied, so a dict the backend reuses or keeps is
    never changed. A hook that breaks this is ``RankingContractError`` naming ``owner``."""
    if not isinstance(details, list) or len(details) != len(counts):
        raise RankingContractError(
            f"{owner}.explain must return a list of {len(counts)} lists, got {type(details).__name__}"
        )
    checked = []
    for query_details, count in zip(details, counts, strict=True):
        if not isinstance(query_details, list) or len(query_details) != count:
            raise RankingContractError(f"{owner}.explain must return one explanation per passage ({count})")
        parts = []
        for detail in query_details:
            kind = detail.get("kind") if isinstance(detail, dict) else None
            if not isinstance(kind, str) or not kind:
                raise RankingContractError(
                    f"{owner}.explain must return dicts with a non-empty str 'kind', got {detail!r:.200}"
                )
            parts.append((kind, {key: value for key, value in detail.items() if key != "kind"}))
        checked.append(parts)
    return checked
