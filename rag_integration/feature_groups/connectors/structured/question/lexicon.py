"""What the words of a question can name in one table: the table, its columns (singular and plural) and its text values.

Built once per table in time linear in its cells. Every lookup a question makes is a dict lookup of at most
``MAX_VALUE_WORDS`` words, so planning stays linear in the question's length however many distinct values the
table holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag_integration.core.deadline import Budget
from rag_integration.feature_groups.connectors.structured.sql.columns import ColumnSpec
from rag_integration.feature_groups.connectors.structured.sql.table import TableSpec

CHECK_EVERY = 4_096
MAX_VALUE_WORDS = 8
"""The most words an unquoted value may span ("Research and Development" is three); longer values are quoted."""
IRREGULAR_PLURALS = {"person": "people", "child": "children", "man": "men", "woman": "women", "staff": "staff"}
VALUE_WORDS = re.compile(r"\w+(?:['\u2019.&-]\w+)*|[^\w\s]")
PLAIN = re.compile(r"\w+(?: \w+)*")
"""A value that is words single-spaced: its key is just its case-folded self."""
TABLE_NOISE = frozenset(
    ["rows", "row", "records", "record", "entries", "entry", "items", "item", "everyone", "everything", "anyone"]
)

PERSON_WORDS = frozenset(
    ["people", "person", "persons", "employee", "employees", "staff", "worker", "workers", "member", "members",
     "colleague", "colleagues"]
)  # fmt: skip
"""A table named by any of these holds people: every one of them names its rows ("staff earning over 50k")."""


PLANNING = "while planning the question"
"""The step a planning ``Budget`` names when it runs out."""


def plural(word: str) -> str:
    if word in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[word]
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s")


def singular(word: str) -> str:
    irregular = {many: one for one, many in IRREGULAR_PLURALS.items()}
    if word in irregular:
        return irregular[word]
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def value_key(text: str) -> str:
    """How a stored value and the question's words are compared: case-folded words and signs, single-spaced."""
    return " ".join(VALUE_WORDS.findall(text)).casefold()


@dataclass(frozen=True)
class Spelling:
    words: tuple[str, ...]
    column: ColumnSpec
    plural: bool


@dataclass
class Lexicon:
    table: TableSpec
    table_words: frozenset[str] = frozenset()
    spellings: dict[str, list[Spelling]] = field(default_factory=dict)
    values: dict[str, tuple[str, str] | list[tuple[str, str]]] = field(default_factory=dict)
    spelled: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """The holders of each value stored in several spellings or columns, sorted once, however often it is asked."""

    @classmethod
    def of(cls, table: TableSpec, deadline: Budget | None = None) -> Lexicon:
        name = table.name.lower()
        words = {name, *name.split("_")} - {""}
        table_words = {form for word in words for form in (word, plural(word), singular(word))}
        if table_words & PERSON_WORDS:
            table_words |= PERSON_WORDS
        lexicon = cls(table, frozenset(table_words | TABLE_NOISE))
        for column in table.columns:
            lexicon._spell(column)
        for position, column in enumerate(table.columns):
            if column.type == "text":
                lexicon._index_values(position, column, deadline)
        return lexicon

    def _spell(self, column: ColumnSpec) -> None:
        name = column.name.lower()
        forms = {((name,), False), (column.words, False)}
        for words in ((name,), column.words):
            if words:
                forms.add(((*words[:-1], plural(words[-1])), True))
                forms.add(((*words[:-1], singular(words[-1])), False))
        for words, is_plural in sorted(forms):
            if words:
                self.spellings.setdefault(words[0], []).append(Spelling(words, column, is_plural))

    def _index_values(self, position: int, column: ColumnSpec, deadline: Budget | None) -> None:
        """Key -> (column, stored spelling): one shared pair per value, a list only where spellings differ in case."""
        values, name = self.values, column.name
        for number, stored in enumerate(dict.fromkeys(row[position] for row in self.table.rows)):
            if deadline is not None and number % CHECK_EVERY == 0:
                deadline.check(PLANNING)
            if isinstance(stored, str):
                key = stored.casefold() if PLAIN.fullmatch(stored) else value_key(stored)
                found = values.get(key)
                if found is None:
                    values[key] = (name, stored)
                elif isinstance(found, list):
                    found.append((name, stored))
                else:
                    values[key] = [found, (name, stored)]

    def holders(self, text: str) -> dict[str, tuple[str, ...]]:
        """Column name -> the stored spellings of ``text`` (case-insensitively), for each text column holding it; a
        plural last word finds its singular when nothing stores the plural ("engineers" finds "Engineer")."""
        key = value_key(text)
        found = self.values.get(key)
        if found is None and (words := key.split()):
            key = " ".join((*words[:-1], singular(words[-1])))
            found = self.values.get(key)
        if found is None:
            return {}
        if not isinstance(found, list):
            return {found[0]: (found[1],)}
        if key not in self.spelled:
            holders: dict[str, list[str]] = {}
            for name, stored in found:
                holders.setdefault(name, []).append(stored)
            self.spelled[key] = {name: tuple(sorted(spellings)) for name, spellings in holders.items()}
        return dict(self.spelled[key])

    def column_hint(self, hints: tuple[str, ...], kind: str | None = None) -> ColumnSpec | None:
        """The first column whose words include one of ``hints`` ("salary" for "earns"), else the only one of ``kind``."""
        for column in self.table.columns:
            if set(column.words) & set(hints) and (kind is None or _kind(column) == kind):
                return column
        typed = [column for column in self.table.columns if kind and _kind(column) == kind]
        return typed[0] if len(typed) == 1 else None


def _kind(column: ColumnSpec) -> str:
    return "number" if column.numeric else column.type
