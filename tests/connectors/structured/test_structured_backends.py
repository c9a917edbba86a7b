"""Both structured backends through the structured contract kit, plus what each one adds."""

from __future__ import annotations

from typing import Any

import pytest

from rag_integration.core.errors import InvalidOptionError
from rag_integration.feature_groups.connectors.structured import AggregateSql, BaseStructuredConnector, RuleBasedSql
from rag_integration.registry import available_backends
from rag_integration.testing.runner import run_feature
from rag_integration.testing.structured import COLUMNS, EMPLOYEES, TABLE, StructuredContractTests


class TestRuleBasedContract(StructuredContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseStructuredConnector]:
        return RuleBasedSql


class TestAggregateContract(StructuredContractTests):
    @classmethod
    def connector_class(cls) -> type[BaseStructuredConnector]:
        return AggregateSql

    @classmethod
    def known_question(cls) -> tuple[str, list[dict[str, Any]]]:
        return "average salary per department", [
            {"department": "Engineering", "avg_salary": 65000.0},
            {"department": "Marketing", "avg_salary": 45000.0},
            {"department": "Sales", "avg_salary": 49500.0},
        ]


def ask(connector: type[BaseStructuredConnector], question: str, **options: Any) -> dict[str, Any]:
    request = {
        "structured_backend": connector.BACKEND,
        "table_name": TABLE,
        "columns": COLUMNS,
        "rows": EMPLOYEES,
        "question": question,
        **options,
    }
    return dict(run_feature("structured_rows", request, {connector})[0])


def names(result: dict[str, Any]) -> list[str]:
    return [row["name"] for row in result["rows"]]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("which employees are in Berlin", ["Ada", "Cem", "Eli"]),
        ("list employees whose department is sales", ["Ben", "Cem"]),
        ("list employees where department is not engineering", ["Ben", "Cem", "Eli"]),
        ("list employees with salary at least 58000", ["Ada", "Dora", "Fay"]),
        ("list employees with salary below 48000", ["Eli"]),
        ("list employees with salary at most 48000", ["Ben", "Eli"]),
        ("list employees with salary between 48000 and 58000", ["Ben", "Cem", "Fay"]),
        ("list employees with start date before 2019-01-01", ["Dora", "Fay"]),
        ("list employees in Munich or in Hamburg", ["Ben", "Dora", "Fay"]),
        ("list employees in Berlin and department is sales or city is Hamburg", ["Cem", "Dora"]),
        ("top 2 employees by rating", ["Dora", "Ada"]),
        ("list the bottom 2 employees by salary in Berlin", ["Eli", "Cem"]),
        ("show employees in the engineering department sorted by start date", ["Fay", "Dora", "Ada"]),
    ],
)
def test_rule_based_questions(question: str, expected: list[str]) -> None:
    assert names(ask(RuleBasedSql, question)) == expected


def test_column_words_and_projection() -> None:
    result = ask(RuleBasedSql, "show name and start date of employees in Hamburg")
    assert result["rows"] == [{"name": "Dora", "start_date": "2018-11-05"}]
    assert result["params"] == ["Hamburg"]


def test_values_match_stored_spelling_case_insensitively() -> None:
    result = ask(RuleBasedSql, "how many employees have department is SALES")
    assert result["params"] == ["Sales"] and result["rows"] == [{"count": 2}]


def test_quoted_values_may_hold_stop_words() -> None:
    rows = [*EMPLOYEES, dict(EMPLOYEES[0], name="Gus", department="Research and Development")]
    result = ask(RuleBasedSql, 'list employees where department is "Research and Development"', rows=rows)
    assert names(result) == ["Gus"] and result["params"] == ["Research and Development"]


@pytest.mark.parametrize(
    "question",
    [
        "average salary per department",
        "how many employees per city",
        "delete all employees",
        "employees",
        "list employees in Paris",
        "list employees with salary over",
        "top employees by salary",
        "how many employees earn lots",
    ],
)
def test_rule_based_refuses_what_it_cannot_map(question: str) -> None:
    with pytest.raises(InvalidOptionError, match="question"):
        ask(RuleBasedSql, question)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what is the maximum salary", [{"max_salary": 72000}]),
        ("minimum rating of employees in Berlin", [{"min_rating": 3.9}]),
        ("total salary of employees in sales", [{"sum_salary": 99000}]),
        (
            "latest start date per city",
            [
                {"city": "Berlin", "max_start_date": "2022-02-01"},
                {"city": "Hamburg", "max_start_date": "2018-11-05"},
                {"city": "Munich", "max_start_date": "2021-07-15"},
            ],
        ),
        (
            "how many employees per department with salary over 50000",
            [
                {"department": "Engineering", "count": 3},
                {"department": "Sales", "count": 1},
            ],
        ),
        (
            "average rating for each city",
            [
                {"city": "Berlin", "avg_rating": pytest.approx(4.1666666)},
                {"city": "Hamburg", "avg_rating": 4.7},
                {"city": "Munich", "avg_rating": 3.8},
            ],
        ),
        ("how many employees are in Berlin", [{"count": 3}]),
    ],
)
def test_aggregate_questions(question: str, expected: list[dict[str, Any]]) -> None:
    assert ask(AggregateSql, question)["rows"] == expected


@pytest.mark.parametrize("question", ["average name per city", "total start date", "average salary per shoe size"])
def test_aggregate_refuses_what_it_cannot_map(question: str) -> None:
    with pytest.raises(InvalidOptionError, match="question"):
        ask(AggregateSql, question)


def test_inferred_column_types() -> None:
    rows = [{"item": "pen", "price": 1.5, "stock": 10}, {"item": "ink", "price": 4, "stock": 0}]
    request = {"table_name": "shop", "columns": ["item", "price", "stock"], "rows": rows}
    result = ask(AggregateSql, "total price of shop items with stock over 0", **request)
    assert result["rows"] == [{"sum_price": 1.5}]
    listing = ask(RuleBasedSql, "list items ordered by price", **request)["rows"]
    assert listing == [{"item": "pen", "price": 1.5, "stock": 10}, {"item": "ink", "price": 4.0, "stock": 0}]


def test_backends_are_listed_in_the_registry() -> None:
    listed = {(entry["selector"], entry["value"], entry["class"]) for entry in available_backends()}
    assert ("structured_backend", "rule_based", "RuleBasedSql") in listed
    assert ("structured_backend", "aggregate", "AggregateSql") in listed


LONG = "c" * 64


@pytest.mark.parametrize(
    ("question", "columns", "rows", "expected"),
    [
        (f"average {LONG}", [LONG], [{LONG: 4}], [{f"avg_{LONG}": 4.0}]),
        (f"total {LONG} per g", [LONG, "g"], [{LONG: 4, "g": "x"}], [{"g": "x", f"sum_{LONG}": 4}]),
        (
            "average salary per avg_salary",
            ["salary", "avg_salary"],
            [{"salary": 1, "avg_salary": 7}, {"salary": 3, "avg_salary": 7}],
            [{"avg_salary": 7, "avg_salary_1": 2.0}],
        ),
        (
            "how many t per row_count",
            ["count", "row_count"],
            [{"count": 1, "row_count": 2}],
            [{"row_count": 2, "count_1": 1}],
        ),
        ("how many t", ["count"], [{"count": 5}], [{"row_count": 1}]),
    ],
)
def test_output_labels_are_valid_and_never_name_a_column(
    question: str, columns: list[str], rows: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    """Labels built from a 64-character column stay valid; a label a column already has gets a free suffix."""
    assert ask(AggregateSql, question, table_name="t", columns=columns, rows=rows)["rows"] == expected


DANGLING = ["show name and", "show name,", "show name, and", "list employees in Berlin and", "how many employees or"]


@pytest.mark.parametrize("backend", [RuleBasedSql, AggregateSql])
@pytest.mark.parametrize("question", DANGLING)
def test_a_dangling_joiner_is_refused(backend: type[BaseStructuredConnector], question: str) -> None:
    with pytest.raises(InvalidOptionError, match="option 'question'") as caught:
        ask(backend, question)
    assert "could not understand" in str(caught.value)
    assert str(caught.value).endswith(" | ".join(backend.UNDERSTANDS))


LEAD_WORD_TABLE = {
    "table_name": "t",
    "columns": ["a", "the", "work", "has", "located", "in", "city"],
    "rows": [
        {"a": "x", "the": "y", "work": "z", "has": "h", "located": "l", "in": "i", "city": "Berlin"},
        {"a": "q", "the": "q", "work": "q", "has": "q", "located": "q", "in": "q", "city": "Paris"},
    ],
}


@pytest.mark.parametrize("backend", [RuleBasedSql, AggregateSql])
@pytest.mark.parametrize(
    ("question", "column", "value"),
    [
        ("list t where a is x", "a", "x"),
        ("list t where the is y", "the", "y"),
        ("list t with work is z", "work", "z"),
        ("how many t where has is h", "has", "h"),
        ("list t whose located is l", "located", "l"),
        ("list t where in is i", "in", "i"),
        ("how many the is y", "the", "y"),
    ],
)
def test_columns_named_like_filler_words_can_be_filtered(
    backend: type[BaseStructuredConnector], question: str, column: str, value: str
) -> None:
    result = ask(backend, question, **LEAD_WORD_TABLE)
    assert result["params"] == [value] and f'WHERE "{column}" = ?' in result["sql"]
    assert result["rows"] in ([LEAD_WORD_TABLE["rows"][0]], [{"count": 1}])


def test_filler_words_still_lead_into_filters() -> None:
    assert names(ask(RuleBasedSql, "list employees who work in Berlin")) == ["Ada", "Cem", "Eli"]
    assert ask(RuleBasedSql, "list t who work in Berlin", **LEAD_WORD_TABLE)["params"] == ["Berlin"]
    assert ask(AggregateSql, "maximum the", **LEAD_WORD_TABLE)["rows"] == [{"max_the": "y"}]
