"""The question parser: English about one table -> a ``QueryPlan``, in the manner of sqlglot's ``Parser``.

Phrase tables live in ``phrases`` and the cursor (matching, retreating, the column named next) in ``cursor``; this
module is the grammar, one ``_parse_*`` method per construct. A backend enables a set of constructs; a construct it
does not enable is refused by name, so the base can point to a backend that has it. Every token must be
understood: what is left over is refused, never turned into "list everything". Each construct looks ahead a
bounded number of tokens and values are found by dict lookups of at most ``MAX_VALUE_WORDS`` words, so parsing is
linear in the question's length; the deadline is checked as it goes.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping

from rag_integration.feature_groups.connectors.structured.question import phrases
from rag_integration.feature_groups.connectors.structured.question.cursor import Cursor
from rag_integration.feature_groups.connectors.structured.question.lexicon import MAX_VALUE_WORDS
from rag_integration.feature_groups.connectors.structured.question.tokens import Token, number_value
from rag_integration.feature_groups.connectors.structured.sql.columns import INT64, ColumnSpec, is_iso_date
from rag_integration.feature_groups.connectors.structured.sql.plan import (
    LIKE_ESCAPE,
    Condition,
    OrderKey,
    Output,
    QueryPlan,
    Staged,
    median,
    tie_kept,
)

MAX_LIMIT = 1_000_000
"""Largest N of 'top N' and of a LIMIT."""
Where = tuple[tuple[Condition, ...], ...]
NEGATED = {"=": "!=", "!=": "=", ">": "<=", ">=": "<", "<": ">=", "<=": ">", "between": "not between", "in": "not in"}
NEGATED.update({"like": "not like", "is null": "is not null", "is not null": "is null"})
NEGATED.update({value: key for key, value in list(NEGATED.items()) if value.startswith("not ")})


class Parser(Cursor):
    """Recursive descent over one question's tokens; ``constructs`` are the constructs the backend enables."""

    def _finish(self) -> None:
        self._match(phrases.FILLER)
        if self.index == self.unknown_owner < len(self.tokens):
            value = self.tokens[self.index].value
            self._fail(f"no text column holds the value {value!r}, so it names no row to look up")
        if self.index < len(self.tokens):
            rest = " ".join(token.text for token in self.tokens[self.index :])
            self._fail(f"could not understand {rest!r}")

    # Values: numbers, whole numbers and the days a date, year or month stands for; then stored values.

    def _parse_number(self, after: str) -> int | float:
        token = self._peek()
        if token is None or token.kind != "number":
            self._fail(f"expected a number after {after!r}")
        self.index += 1
        number = number_value(token.text)
        word = self._match(phrases.NUMBER_WORD_PHRASES)
        if word:
            number = number * phrases.NUMBER_WORDS[word]
        if isinstance(number, float) and not math.isfinite(number):
            self._fail(f"{token.text} is outside the range SQLite stores")
        if isinstance(number, int) and not INT64[0] <= number <= INT64[1]:
            self._fail(f"{token.text} is outside the range SQLite stores")
        return number

    def _parse_int(self, after: str) -> int:
        token = self._peek()
        number = self._parse_number(after)
        if not isinstance(number, int) or not 1 <= number <= MAX_LIMIT or token is None or "." in token.text:
            self._fail(f"expected a whole number between 1 and {MAX_LIMIT} after {after!r}")
        return number

    def _parse_dates(self) -> tuple[str, str] | None:
        """The first and last day an ISO date, a year ("2020") or a month ("March 2021") stands for."""
        token = self._peek()
        if token is None:
            return None
        if is_iso_date(token.value) and token.kind in ("date", "quoted"):
            self.index += 1
            return token.value, token.value
        month = phrases.MONTHS.get(token.key)
        year_token = self._peek(1 if month else 0)
        if year_token is None or year_token.kind != "number" or not year_token.text.isdigit():
            return None
        if len(year_token.text) != 4 or not 1000 <= int(year_token.text) <= 9999:
            return None
        year = int(year_token.text)
        self.index += 2 if month else 1
        if month is None:
            return f"{year}-01-01", f"{year}-12-31"
        following = datetime.date(year + month // 12, month % 12 + 1, 1)
        return datetime.date(year, month, 1).isoformat(), (following - datetime.timedelta(days=1)).isoformat()

    def _ordered_condition(self, column: ColumnSpec, operator: str, after: str) -> Condition:
        """``column <operator> <number or date>``; a year or month stands for its first or last day as fits."""
        if column.numeric:
            return Condition(column.name, operator, (self._parse_number(after),))
        if column.type != "date":
            self._fail(f"{after!r} needs a number or date column, but '{column.name}' is {column.type}")
        dates = self._parse_dates()
        if dates is None:
            self._fail(f"expected a date (YYYY-MM-DD, a year or a month and year) after '{column.name} {after}'")
        first, last = dates
        if operator in ("=", "!="):
            if first == last:
                return Condition(column.name, operator, (first,))
            return Condition(column.name, "between" if operator == "=" else "not between", (first, last))
        return Condition(column.name, operator, (last if operator in (">", "<=") else first,))

    def _value_tokens(self, limit: int) -> list[Token]:
        """Up to ``limit`` words, numbers or commas ahead (not starting with a comma): where a stored value may be."""
        tokens: list[Token] = []
        while len(tokens) < limit and (token := self._peek(len(tokens))) is not None:
            if token.kind not in ("word", "number", "date", "comma") or (token.kind == "comma" and not tokens):
                break
            tokens.append(token)
        return tokens

    def _parse_stored_value(self, column: ColumnSpec | None) -> tuple[str, dict[str, tuple[str, ...]]] | None:
        """The longest next words that a text column stores (``column``'s, or any), with who stores them how."""
        first = self._peek()
        if first is not None and first.kind == "quoted":
            wanted = first.value.casefold()
            holders = {
                name: exact
                for name, values in self.lexicon.holders(first.value).items()
                if (column is None or name == column.name)
                and (exact := tuple(value for value in values if value.casefold() == wanted))
            }
            if column is None and not holders:
                return None
            self.index += 1
            return first.value, holders
        tokens = self._value_tokens(MAX_VALUE_WORDS)
        for size in range(len(tokens), 0, -1):
            if tokens[size - 1].kind == "comma":
                continue
            text = " ".join(token.text for token in tokens[:size])
            if text.endswith(("'s", "\u2019s")) and size == 1:
                continue
            holders = self.lexicon.holders(text)
            if column is not None:
                holders = {name: values for name, values in holders.items() if name == column.name}
            if holders:
                self.index += size
                return text, holders
        return None

    def _parse_value_list(self, column: ColumnSpec, first: tuple[str, ...]) -> tuple[str, ...]:
        """More values of ``column`` after the first: "Berlin, Munich and Hamburg", "Berlin or Munich"."""
        values = dict.fromkeys(first)
        while True:
            self.question.check_deadline()
            start = self.index
            if self._match(phrases.JOINERS) is None:
                break
            self._match(phrases.VALUE_PREPOSITIONS)
            found = self._parse_stored_value(column)
            if found is None or self._comparison_ahead(column):
                self._retreat(start)
                break
            values.update(dict.fromkeys(found[1].get(column.name, (found[0],))))
        return tuple(values)

    def _text_condition(self, column: ColumnSpec, values: tuple[str, ...], negated: bool) -> Condition:
        operator = "=" if len(values) == 1 else "in"
        return Condition(column.name, NEGATED[operator] if negated else operator, values)

    # Filters.

    def _parse_conditions(self) -> Where:
        """Filters joined by and/or (and binds tighter, as in SQL), as OR-groups of AND-ed conditions.

        A joiner with no filter after it is left unread, so ``_finish`` refuses the question instead of dropping it.
        """
        groups: list[tuple[Condition, ...]] = []
        current: list[Condition] = []
        joiner: str | None = None
        before = self.index
        while (condition := self._parse_condition()) is not None:
            self.question.check_deadline()
            if joiner is not None and joiner.endswith("or"):
                groups.append(tuple(current))
                current = []
            current.append(condition)
            before = self.index
            joiner = self._match(phrases.JOINERS)
            if joiner is None and not (self._ahead(phrases.CONDITION_CONTINUATIONS) or self._column_comparison_ahead()):
                break
        else:
            self._retreat(before)
        if current:
            groups.append(tuple(current))
        return tuple(groups)

    def _clause_ahead(self) -> bool:
        return self._ahead(phrases.CLAUSES)

    def _parse_condition(self) -> Condition | None:
        start = self.index
        if self._clause_ahead():
            return None
        leads = self._skip_words(phrases.CONDITION_LEADS)
        negated = self._match(phrases.NEGATIONS) is not None
        if negated:
            leads += self._skip_words(phrases.CONDITION_LEADS)
        if self._match(phrases.EXCLUSIONS):
            return self._parse_value_filter(not negated)
        if self._match(phrases.ABSENCE):
            absent = self._require_column("without", filler=("a", "an", "any"))
            return Condition(absent.name, "is not null" if negated else "is null")
        if (
            not self._column_comparison_ahead()
            and not self._comparison_word_ahead()
            and self._match(phrases.VALUE_PREPOSITIONS)
        ):
            return self._parse_value_filter(negated)
        condition = self._parse_hinted_condition(negated)
        if condition is not None:
            return condition
        column = self._column()
        if column is not None and column.type == "date" and self._ahead(phrases.RECENCY_PHRASES):
            self._retreat(start)
            return None
        if column is not None:
            if self._comparison_ahead(column):
                return self._parse_comparison(column, negated)
            if set(leads) & phrases.PRESENCE_LEADS:
                return Condition(column.name, "is null" if negated else "is not null")
            self._fail(f"expected a comparison after column '{column.name}' (is, over, at least, between, ...)")
        if self._comparison_word_ahead():
            return self._parse_unnamed_comparison(negated)
        bare = self._parse_bare_value(negated)
        if bare is not None:
            return bare
        if negated:
            self._fail("expected a filter after 'not'")
        self._retreat(start)
        return None

    def _parse_bare_value(self, negated: bool) -> Condition | None:
        """A value standing alone as a filter ("average price of stationery", "Data events"): bound only when one
        text column stores it; a table word after it ("lighting products") is the noun it qualifies."""
        start = self.index
        found = self._parse_stored_value(None)
        if found is None or len(found[1]) != 1:
            self._retreat(start)
            return None
        name, variants = next(iter(found[1].items()))
        column = self.table.column(name)
        assert column is not None
        after = self.index
        if self._column() != column:  # "the engineering department": the value's own column may follow it
            self._retreat(after)
        self._skip_table_words()
        return self._text_condition(column, variants, negated)

    def _comparison_word_ahead(self) -> bool:
        return self._ahead(phrases.COMPARATIVE_OR_BETWEEN)

    def _parse_hinted_condition(self, negated: bool) -> Condition | None:
        """A verb or a comparative adjective standing for its column: "earning more than 50k", "older than 30"."""
        adjective = self._match(phrases.COMPARATIVE_ADJECTIVE_PHRASES)
        if adjective is not None:
            for hints, operator, kind in phrases.COMPARATIVE_ADJECTIVES[adjective]:
                column = self.lexicon.column_hint(hints, kind)
                if column is not None:
                    condition = self._ordered_condition(column, operator, adjective)
                    return self._negated(condition) if negated else condition
            self._fail(f"{adjective!r} names no column of this table; name the column")
        start = self.index
        verb = self._match(phrases.VERB_PHRASES)
        if verb is None:
            return None
        if self._ahead(phrases.MOST_OR_EXTREME):
            self._retreat(start)
            return None
        hints, kind = phrases.VERBS[verb]
        column = self._hinted_column(verb, hints, kind)
        if self._comparison_ahead(column):
            return self._parse_comparison(column, negated)
        return self._parse_comparison(column, negated, implied_equal=True)

    def _parse_counted_comparison(self, negated: bool) -> Condition | None:
        """ "at least 100 attendees", "more than 3 rooms": the number column named after its number."""
        start = self.index
        phrase = self._match(phrases.COMPARATIVE_PHRASES)
        token = self._peek()
        if phrase is not None and token is not None and token.kind == "number":
            number = self._parse_number(phrase)
            column = self._column()
            if column is not None and column.numeric:
                operator = next(op for op, group in phrases.COMPARATIVES.items() if phrase in group)
                condition = Condition(column.name, operator, (number,))
                return self._negated(condition) if negated else condition
        self._retreat(start)
        return None

    def _parse_unnamed_comparison(self, negated: bool) -> Condition:
        """ "over 50k", "before 2020": the table's only number column, or its only date column for a date."""
        counted = self._parse_counted_comparison(negated)
        if counted is not None:
            return counted
        start = self.index
        self._match(phrases.COMPARATIVE_OR_BETWEEN)
        token = self._peek()
        kind = "date" if token is not None and (token.kind == "date" or self._parse_dates() is not None) else "number"
        self._retreat(start)
        column = self.lexicon.column_hint((), kind)
        if column is None:
            self._fail(f"name the {kind} column to compare, e.g. '<column> over ...'")
        return self._parse_comparison(column, negated)

    def _negated(self, condition: Condition) -> Condition:
        return Condition(condition.column, NEGATED[condition.operator], condition.values)

    def _parse_comparison(self, column: ColumnSpec, negated: bool, implied_equal: bool = False) -> Condition:
        """What is said of ``column``: "is [not] x", "over 5", "starts with A", "is null", "in 2021", ...

        Negations ("is not", "not", "does not") are counted in a loop, so no run of them can exhaust the stack.
        """
        said_is = implied_equal
        self._skip_of_before_comparison()
        while (word := self._match(phrases.NEGATION_OR_EQUAL)) is not None:
            said_is = True
            negated = negated != (word in phrases.NEGATIONS)
        condition = self._parse_positive_comparison(column, said_is, negated)
        return self._negated(condition) if negated else condition

    def _parse_positive_comparison(self, column: ColumnSpec, said_is: bool, negated: bool) -> Condition:
        null = self._parse_null(column)
        if null is not None:
            return null
        for pattern, group in phrases.TEXT_MATCHES.items():
            phrase = self._match(group)
            if phrase is not None:
                return self._parse_text_match(column, pattern, phrase)
        if self._match(phrases.BETWEEN):
            low = self._ordered_condition(column, ">=", "between").values[0]
            if not self._match(phrases.RANGE_JOINERS):
                self._fail(f"expected 'and' in '{column.name} between ... and ...'")
            return Condition(column.name, "between", (low, self._ordered_condition(column, "<=", "between").values[0]))
        for operator, group in phrases.COMPARATIVES.items():
            phrase = self._match(group)
            if phrase is not None:
                return self._ordered_condition(column, operator, phrase)
        if column.type == "date" and self._match(phrases.DATE_RANGES):
            return self._ordered_condition(column, "=", "in")
        if column.type == "text" and self._match(phrases.ONE_OF):
            said_is = True
        if said_is:
            return self._parse_equality(column, negated)
        self._fail(f"expected a comparison after column '{column.name}' (is, over, at least, below, between, ...)")

    def _parse_null(self, column: ColumnSpec) -> Condition | None:
        start = self.index
        if column.type == "text" and self._parse_stored_value(column) is not None:
            self._retreat(start)
            return None
        if self._match(phrases.NOT_NULL_WORDS):
            return Condition(column.name, "is not null")
        if self._match(phrases.NULL_WORDS):
            return Condition(column.name, "is null")
        return None

    def _parse_text_match(self, column: ColumnSpec, pattern: str, phrase: str) -> Condition:
        if column.type != "text":
            self._fail(f"{phrase!r} needs a text column, but '{column.name}' is {column.type}")
        text = self._parse_free_text()
        if not text:
            self._fail(f"expected text after '{column.name} {phrase}'")
        escaped = "".join(LIKE_ESCAPE + char if char in "%_" + LIKE_ESCAPE else char for char in text)
        return Condition(column.name, "like", (pattern.format(escaped),))

    def _parse_equality(self, column: ColumnSpec, negated: bool) -> Condition:
        """``column is [not] value``; a text value matches every stored spelling that equals it case-insensitively."""
        if column.numeric or column.type == "date":
            return self._ordered_condition(column, "=", "is not" if negated else "is")
        found = self._parse_stored_value(column)
        if found is not None:
            text, holders = found
            return self._text_condition(
                column, self._parse_value_list(column, holders.get(column.name, (text,))), False
            )
        quoted = (token := self._peek()) is not None and token.kind == "quoted"
        text = self._parse_free_text()
        if not text:
            self._fail(f"expected a value after '{column.name} is'")
        if not quoted:
            self._fail(
                f"{text!r} is not a value of column '{column.name}'; only the table's own values are matched "
                f"(quote a value to match it exactly, e.g. '{column.name} is \"{text}\"')"
            )
        return self._text_condition(column, self._parse_value_list(column, (text,)), False)

    def _parse_free_text(self) -> str:
        """A quoted value, or the words up to the next stop word: text no column needs to store."""
        token = self._peek()
        if token is not None and token.kind == "quoted":
            self.index += 1
            return token.value
        words: list[str] = []
        while (token := self._peek()) is not None and token.kind in ("word", "number", "date"):
            if token.key in phrases.STOP_WORDS:
                break
            words.append(token.text)
            self.index += 1
        return " ".join(words)

    def _parse_value_filter(self, negated: bool) -> Condition:
        """A value without its column ("in Berlin", "in March 2021"): the column storing it; the longest match wins."""
        start = self.index
        dates = self._parse_dates()
        if dates is not None:
            column = self.lexicon.column_hint((), "date")
            if column is None:
                names = [column.name for column in self.table.columns if column.type == "date"] or ["none"]
                self._fail(f"a date needs its column named, one of the date columns: {', '.join(names)}")
            self._retreat(start)
            condition = self._ordered_condition(column, "=", "in")
            return self._negated(condition) if negated else condition
        before_article = self.index
        self._match(phrases.THE)
        found = self._parse_stored_value(None)
        if found is None:
            self._retreat(before_article)
            found = self._parse_stored_value(None)
        if found is None:
            shown = " ".join(token.text for token in self._value_tokens(MAX_VALUE_WORDS)) or "(nothing)"
            self._fail(f"no text column holds the value {shown!r}; name the column, e.g. '<column> is {shown}'")
        text, holders = found
        if len(holders) > 1:
            self._fail(f"the value {text!r} is in several columns ({', '.join(sorted(holders))}); name one")
        name, variants = next(iter(holders.items()))
        column = self.table.column(name)
        assert column is not None
        named = self._column()
        if named not in (None, column):
            self._fail(f"the value {text!r} is in column '{name}'")
        return self._text_condition(column, self._parse_value_list(column, variants), negated)

    # Clauses.

    def _parse_group(self) -> ColumnSpec | None:
        phrase = self._match(phrases.GROUP_WORDS)
        if phrase is None:
            return None
        self._require("group", phrase)
        return self._require_column(phrase)

    def _parse_order(self) -> tuple[ColumnSpec, bool] | None:
        start = self.index
        self._match(phrases.COMMA)
        phrase = self._match(phrases.ORDER_WORDS)
        if phrase is None:
            self._retreat(start)
            return None
        self._require("order", phrase)
        column = self._require_column(phrase)
        descending = self._match(phrases.DESCENDING) is not None
        if not descending:
            self._match(phrases.ASCENDING)
        return column, descending

    def _parse_top(self) -> tuple[int, ColumnSpec, bool] | None:
        """ "top 3 by salary" (highest first), "bottom 3 by salary", "the 3 cheapest products"."""
        start = self.index
        self._match(phrases.COMMA)
        word = self._match(phrases.TOP_OR_BOTTOM)
        if word is not None:
            self._require("top", word)
            count = self._parse_int(word)
            self._skip_table_words()
            if self._match(phrases.BY):
                return count, self._require_column(f"{word} {count} by"), word == "top"
            extreme = self._parse_superlative()
            if extreme is None:
                self._fail(f"'{word} N' needs 'by <column>'")
            return count, extreme[0], extreme[1] if word == "top" else not extreme[1]
        self._match(phrases.THE)
        token = self._peek()
        if token is not None and token.kind == "number":
            count = self._parse_int("the")
            extreme = self._parse_superlative()
            if extreme is not None:
                self._require("top", f"the {count} ...")
                return count, extreme[0], extreme[1]
        self._retreat(start)
        return None

    def _parse_superlative(self) -> tuple[ColumnSpec, bool] | None:
        """ "the highest salary", "the oldest", "the most expensive", "earns the most": a column and its direction."""
        start = self.index
        self._match(phrases.THE)
        word = self._match(phrases.HIGH_OR_LOW)
        if word is not None:
            column = self._column()
            if column is not None:
                return column, word in phrases.HIGH
            self._retreat(start)
            self._match(phrases.THE)
        adjective = self._match(phrases.SUPERLATIVE_PHRASES)
        if adjective is not None:
            for hints, descending, kind in phrases.SUPERLATIVES[adjective]:
                column = self.lexicon.column_hint(hints, kind)
                if column is not None:
                    return column, descending
            self._fail(f"{adjective!r} names no column of this table; name it, e.g. 'the highest <column>'")
        self._retreat(start)
        recent = self._parse_recency()
        if recent is not None:
            return recent
        verb = self._match(phrases.VERB_PHRASES)
        most = self._match(phrases.MOST_OR_EXTREME) if verb else None
        if verb is None or most is None:
            self._retreat(start)
            return None
        hints, kind = phrases.VERBS[verb]
        return self._hinted_column(verb, hints, kind), most in ("the most", "most", "the highest")

    def _parse_recency(self) -> tuple[ColumnSpec, bool] | None:
        """ "joined most recently", "hired first", "released last": a date column, by its name or its verb, and a
        direction."""
        start = self.index
        verb = self._match(phrases.VERB_PHRASES)
        if verb is not None:
            hints, kind = phrases.VERBS[verb]
            column = self.lexicon.column_hint(hints, kind)
        else:
            column = self._column()
        when = self._match(phrases.RECENCY_PHRASES) if column is not None and column.type == "date" else None
        if column is None or when is None:
            self._retreat(start)
            return None
        return column, phrases.RECENCY[when]

    def _parse_tail(self, *, group: bool) -> tuple[Where, ColumnSpec | None]:
        """Filters and a group in either order, with filler between ("... are there in Berlin per city")."""
        self._match(phrases.FILLER)
        where = self._parse_conditions()
        grouped = self._parse_group() if group else None
        self._match(phrases.FILLER)
        if not where:
            where = self._parse_conditions()
        if grouped is None and group:
            grouped = self._parse_group()
        return where, grouped

    # Intents.

    def parse(self) -> QueryPlan | Staged:
        self.question.check_deadline()
        while self._match(phrases.LEADS):
            pass
        for intent in (self._parse_count, self._parse_aggregate, self._parse_listing):
            start = self.index
            plan = intent()
            if plan is not None:
                return plan
            self._retreat(start)
        self._fail("could not understand it: it starts with no count, aggregate or list word")

    def _parse_count(self) -> QueryPlan | None:
        """ "how many employees are there in Berlin", "how many cities", "number of employees per city"."""
        phrase = self._match(phrases.COUNT_WORDS)
        if phrase is None:
            return None
        self._require("count", phrase)
        self._skip_words({"the", "all"})
        distinct = self._match(phrases.DISTINCT_WORDS)
        column = None
        if not self._table_word_ahead() or distinct:
            before = self.index
            column = self._column()
            if column is not None and not self._ahead(phrases.FILLER) and self._comparison_ahead(column):
                self._retreat(before)
                column = None
        if distinct and column is None:
            self._fail(f"expected a column after {distinct!r}")
        if column is not None:
            self._require("distinct_count", f"{phrase} {column.name}")
            self._skip_words({"of", "among", "across", "for"})
        self._skip_table_words()
        where, group = self._parse_tail(group=True)
        self._finish()
        label = self.table.free_label("count", "row_count")
        counted = Output(label, None if column is None else column.name, "count", column is not None)
        return self._grouped(counted, where, group)

    def _grouped(self, value: Output, where: Where, group: ColumnSpec | None) -> QueryPlan:
        if group is None:
            return QueryPlan(outputs=(value,), where=where)
        key = Output(group.name, group.name)
        return QueryPlan(outputs=(key, value), where=where, group_by=key, order_by=(OrderKey(key),))

    def _parse_aggregate(self) -> QueryPlan | Staged | None:
        """ "average salary per department", "what is the median salary", "total salary of employees in sales"."""
        self._match(phrases.AGGREGATE_LEADS)
        self._match(phrases.THE)
        phrase = self._match(phrases.AGGREGATE_PHRASES)
        if phrase is None:
            return None
        function = next(name for name, group in phrases.AGGREGATES.items() if phrase in group)
        start = self.index
        self._skip_words({"of", "the"})
        column = self._column()
        if column is None:
            self._retreat(start)
            column = self._column()
        if column is None:
            return None
        self._require("median" if function == "median" else "aggregate", phrase)
        if function in ("avg", "sum", "median") and not column.numeric:
            self._fail(f"'{phrase}' needs a number column, but '{column.name}' is {column.type}")
        if not self._ahead(phrases.GROUP_WORDS):
            self._skip_words({"of", "for", "among", "across"})
        self._skip_table_words()
        where, group = self._parse_tail(group=True)
        self._finish()
        label = self.table.free_label(f"{function}_{column.name}")
        if function == "median":
            if group is not None:
                self._fail("a median per group is not computed; ask for one group at a time")
            return median(QueryPlan(where=where), column.name, label)
        return self._grouped(Output(label, column.name, function), where, group)

    def _parse_listing(self) -> QueryPlan | Staged | None:
        """Rows: "list employees in Berlin", "employees in Berlin", "who earns the most", "the salary of Alice"."""
        lead = self._match(phrases.LIST_WORDS) or self._match(phrases.EXISTENTIAL)
        self._skip_words({"the", "all", "me", "any", "every"})
        distinct = self._match(phrases.DISTINCT_WORDS) is not None
        listed = self._existential_listing() if lead is not None else None
        if listed is not None:
            output = Output(listed.name, listed.name)
            return QueryPlan((output,), (), order_by=(OrderKey(output),), distinct=True)
        where: Where = ()
        owner = self._parse_possessive()
        top = self._parse_top()
        shown, plural, of = self._parse_projection() if top is None else ((), False, False)
        named = self._skip_table_words()
        if not shown and top is None:
            shown, plural, of = self._parse_projection()
            named = self._skip_table_words() or named
        if top is None and (top := self._parse_top()) is not None:
            named = self._skip_table_words() or named
        if of and not named and owner is None and top is None:
            owner = self._parse_owner()
        before = self.index
        if shown and not named and self._match(phrases.HAVE) and not self._skip_table_words():
            self._retreat(before)
        where = ((owner,),) if owner is not None else ()
        extreme = self._parse_extreme()
        if extreme is not None:
            self._skip_table_words()
        more, _ = self._parse_tail(group=False)
        extreme = extreme or self._parse_extreme()
        where = tuple((*first, *second) for first in where for second in more) if where and more else where or more
        order = self._parse_order()
        top = top or self._parse_top()
        self._finish()
        if lead is None and not (where or extreme or order or top):
            self._fail("a bare table or column name would list everything; say 'list ...' or add a filter")
        if top is not None and (order or extreme):
            self._fail("use one of 'top N by <column>', 'ordered by <column>' or 'the highest <column>'")
        outputs = tuple(Output(column.name, column.name) for column in shown)
        if distinct or (shown and plural and not named and owner is None and extreme is None and top is None):
            keys = tuple(OrderKey(output) for output in outputs)
            return QueryPlan(outputs, where, order_by=keys, distinct=True)
        rows = QueryPlan(outputs, where)
        if extreme is not None:
            return tie_kept(rows, extreme[0].name, extreme[1])
        if top is not None:
            count, column, descending = top
            return QueryPlan(outputs, where, order_by=self._order(shown, column, descending), limit=count)
        if order is not None:
            return QueryPlan(outputs, where, order_by=self._order(shown, *order))
        return rows

    def _existential_listing(self) -> ColumnSpec | None:
        """A column and filler ending the question ("which cities are there", "what cities exist") ask for the
        column's distinct values; the filler is never a value to filter on."""
        start = self.index
        found = self._read_column()
        if found is not None and self._match(phrases.FILLER) and self.index == len(self.tokens):
            return found[0]
        self._retreat(start)
        return None

    def _parse_extreme(self) -> tuple[ColumnSpec, bool] | None:
        start = self.index
        self._skip_words({"is", "are", "was", "were", "has", "have", "had", "with", "that", "which", "who", "whose"})
        extreme = self._parse_superlative()
        if extreme is None:
            self._retreat(start)
            return None
        self._require("superlative", " ".join(token.text for token in self.tokens[start : self.index]))
        return extreme

    def _parse_possessive(self) -> Condition | None:
        """ "Alice's salary": a stored value with 's, naming the row whose columns follow."""
        token = self._peek()
        if token is None or token.kind != "word" or not token.key.endswith(("'s", "\u2019s")):
            return None
        holders = self.lexicon.holders(token.text[:-2])
        if not holders:
            return None
        self.index += 1
        self._require("lookup", token.text)
        column, variants = self._owner_column(holders)
        return self._text_condition(column, variants, False)

    def _owner_column(self, holders: Mapping[str, tuple[str, ...]]) -> tuple[ColumnSpec, tuple[str, ...]]:
        """The row a lookup names: by the first column (in table order) storing the value, usually its name."""
        column = next(column for column in self.table.columns if column.name in holders)
        return column, holders[column.name]

    def _parse_owner(self) -> Condition | None:
        """The value after "<columns> of" in a lookup: "the salary of Alice" names the row by a stored value."""
        found = self._parse_stored_value(None)
        if found is None:
            self.unknown_owner = self.index
            return None
        self._require("lookup", found[0])
        column, variants = self._owner_column(found[1])
        return self._text_condition(column, self._parse_value_list(column, variants), False)

    def _parse_projection(self) -> tuple[tuple[ColumnSpec, ...], bool, bool]:
        """Columns named as what to show ("name and salary of ..."), whether all plural, and whether "of" followed.

        None when a filter starts there. A joiner with no column after it ("show name and") is left unread, so
        ``_finish`` refuses the question.
        """
        start = before = self.index
        columns: list[ColumnSpec] = []
        plural = True
        while not self._table_word_ahead() and (found := self._read_column()) is not None:
            self.question.check_deadline()
            columns.append(found[0])
            plural = plural and found[1]
            before = self.index
            if not self._match(phrases.COLUMN_JOINERS):
                break
        else:
            self._retreat(before)
        if not columns or self._comparison_ahead(columns[-1]):
            self._retreat(start)
            return (), False, False
        of = self._match(phrases.OWNER_LINKS) is not None
        return tuple(dict.fromkeys(columns)), plural, of

    def _order(self, shown: tuple[ColumnSpec, ...], column: ColumnSpec, descending: bool) -> tuple[OrderKey, ...]:
        """Sort by ``column``, then by every other shown column, so ties come out the same in every run."""
        rest = [other for other in (shown or self.table.columns) if other != column]
        keys = [OrderKey(Output(column.name, column.name), descending)]
        return (*keys, *(OrderKey(Output(other.name, other.name)) for other in rest))
