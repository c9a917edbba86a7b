"""The structured contract kit.

Subclass ``StructuredContractTests`` in a test module and implement ``connector_class``; override
``known_question`` (a question your backend maps on ``EMPLOYEES`` and the rows it must return),
``listing_question`` (a question returning whole rows) or ``backend_options`` where your backend differs.
The standard tests come from ``ContractKit``, asked with ``known_question`` (structured has no ``top_k`` and no doc
ids, so none of those tests).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from rag_integration.core.documents.visibility import PrincipalsRequiredError
from rag_integration.core.errors import ConnectorError, InvalidOptionError, MissingOptionError, SqlSafetyError
from rag_integration.feature_groups.connectors.structured import guard_sql
from rag_integration.feature_groups.connectors.structured.sql.sandbox import SqliteSandbox
from rag_integration.testing.kit import ContractKit
from rag_integration.testing.visibility import SEEDS, labelled, readable


class _LeftOut:
    """The type of ``LEFT_OUT``: one instance, told apart by identity."""


LEFT_OUT = _LeftOut()
"""Stands for an option left out of a request (an explicit None is an error of its own)."""

TABLE = "employees"
COLUMNS: list[Any] = [
    "name",
    "department",
    "city",
    {"name": "salary", "type": "integer"},
    {"name": "start_date", "type": "date"},
    {"name": "rating", "type": "real"},
]
EMPLOYEES: list[dict[str, Any]] = [
    {
        "name": "Ada",
        "department": "Engineering",
        "city": "Berlin",
        "salary": 72000,
        "start_date": "2019-03-01",
        "rating": 4.5,
    },
    {
        "name": "Ben",
        "department": "Sales",
        "city": "Munich",
        "salary": 48000,
        "start_date": "2021-07-15",
        "rating": 3.8,
    },
    {
        "name": "Cem",
        "department": "Sales",
        "city": "Berlin",
        "salary": 51000,
        "start_date": "2020-01-10",
        "rating": 4.1,
    },
    {
        "name": "Dora",
        "department": "Engineering",
        "city": "Hamburg",
        "salary": 65000,
        "start_date": "2018-11-05",
        "rating": 4.7,
    },
    {
        "name": "Eli",
        "department": "Marketing",
        "city": "Berlin",
        "salary": 45000,
        "start_date": "2022-02-01",
        "rating": 3.9,
    },
    {
        "name": "Fay",
        "department": "Engineering",
        "city": "Munich",
        "salary": 58000,
        "start_date": "2017-06-20",
        "rating": None,
    },
]
RESULT_KEYS = {"sql", "params", "rows"}
HOSTILE_SQL: list[str] = [
    "SELECT * FROM employees; DROP TABLE employees",
    "SELECT * FROM employees;DELETE FROM employees",
    "SELECT * FROM employees WHERE salary > ? ; SELECT * FROM sqlite_master",
    "BEGIN; DELETE FROM employees; COMMIT",
    "SELECT * FROM employees -- a trailing comment",
    "SELECT /* hidden */ * FROM employees",
    "SELECT * FROM employees; ATTACH DATABASE 'pwned.db' AS pwned",
    "ATTACH DATABASE 'pwned.db' AS pwned",
    "ATTACH 'file:pwned2.db?mode=rwc' AS pwned",
    "DETACH DATABASE main",
    "PRAGMA table_info(employees)",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = OFF",
    "SELECT * FROM pragma_table_info('employees')",
    "SELECT name FROM pragma_database_list",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT name, load_extension('evil') FROM employees",
    "SELECT * FROM sqlite_master",
    "SELECT sql FROM sqlite_schema",
    "SELECT * FROM sqlite_temp_master",
    "SELECT * FROM employees WHERE name IN (SELECT name FROM sqlite_master)",
    "WITH gone AS (DELETE FROM employees RETURNING *) SELECT * FROM gone",
    "WITH copy AS (SELECT * FROM sqlite_master) SELECT * FROM copy",
    "WITH e AS (SELECT * FROM employees) SELECT * FROM e",
    "REPLACE INTO employees (name) VALUES ('x')",
    "INSERT INTO employees (name) VALUES ('x')",
    "UPDATE employees SET salary = 0",
    "DELETE FROM employees",
    "DROP TABLE employees",
    "CREATE TABLE stolen AS SELECT * FROM employees",
    "CREATE TRIGGER t AFTER INSERT ON employees BEGIN DELETE FROM employees; END",
    "VACUUM INTO 'copy.db'",
    "VACUUM",
    "WITH RECURSIVE bomb(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM bomb) SELECT count(*) FROM bomb",
    "SELECT randomblob(1000000000)",
    "SELECT zeroblob(2000000000) FROM employees",
    "SELECT hex(randomblob(100000000)) FROM employees",
    "SELECT * FROM generate_series(1, 1000000000)",
    "SELECT * FROM employees UNION SELECT * FROM employees",
    "SELECT * FROM employees JOIN employees AS other",
    "SELECT * FROM employees, sqlite_master",
    'SELECT * FROM "sqlite_master"',
    "SELECT * FROM [sqlite_master]",
    "SELECT * FROM `sqlite_schema`",
    "SeLeCt * FrOm SQLITE_MASTER",
    "SELECT * FROM main.employees",
    "SELECT * FROM temp.employees",
    "SELECT * FROM employees AS e",
    "SELECT * FROM employe\u0435s",  # Cyrillic look-alike of 'e'
    "SELECT n\u0430me FROM employees",  # Cyrillic look-alike of 'a'
    "\uff33\uff25\uff2c\uff25\uff23\uff34 * FROM employees",  # full-width SELECT
    "SELECT * FROM employees\x00; DROP TABLE employees",
    "SELECT * FROM employees WHERE name = 'Ada'",
    "SELECT * FROM employees WHERE 1 = 1",
    "SELECT * FROM employees WHERE name = :name",
    "SELECT * FROM employees WHERE name = $1",
    "SELECT password FROM employees",
    "SELECT * FROM employees WHERE salary > (SELECT max(salary) FROM employees)",
    "SELECT * FROM employees ORDER BY (SELECT 1)",
    "SELECT * FROM employees LIMIT 1 OFFSET (SELECT 1)",
    "SELECT sqlite_version()",
    "SELECT printf('%s', name) FROM employees",
    "SELECT char(65) FROM employees",
    "SELECT writefile('out.txt', name) FROM employees",
    "SELECT CAST(name AS BLOB) FROM employees",
    "SELECT * INTO backup FROM employees",
    "SELECT abs(?)",
    "SELECT count(*)",
    "SELECT * FROM employees WHERE " + "(" * 50 + "name = ?" + ")" * 50,
    "SELECT * FROM employees WHERE " + "(" * 17 + "name = ?" + ")" * 17,
    "SELECT * FROM employees WHERE " + "NOT " * 300 + "name = ?",
    "SELECT " + "abs(" * 200 + "salary" + ")" * 200 + " FROM employees",
    "SELECT " + "CASE WHEN " * 40 + "name" + " THEN 1 END" * 40 + " FROM employees",
    "SELECT " + "- " * 900 + "salary FROM employees",
    "",
    ";",
    "   ",
]
"""SQL the guard must refuse: stacked statements, comments, ATTACH/DETACH, PRAGMA and pragma functions, schema tables,
CTE-wrapped DML, recursive and blob bombs, quoting, case and look-alike tricks, unbound values, and nesting deep enough
to exhaust a recursive parser."""


def sandbox_snapshot(sandbox: SqliteSandbox) -> tuple[Any, ...]:
    """Everything a write, attach or schema change could alter, read with the authorizer briefly lifted."""
    connection = sandbox.connection
    connection.set_authorizer(None)
    try:
        return (
            connection.execute(f'SELECT * FROM "{TABLE}" ORDER BY rowid').fetchall(),
            connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
            connection.execute("PRAGMA database_list").fetchall(),
            connection.execute("PRAGMA query_only").fetchall(),
        )
    finally:
        connection.set_authorizer(sandbox.authorize)


class StructuredContractTests(ContractKit):
    """Every structured backend must pass these; each test runs through ``mlodaAPI.run_all``."""

    feature_name: ClassVar[str] = "structured_rows"
    query_option: ClassVar[str] = "question"

    @classmethod
    def parity_requests(cls) -> list[dict[str, Any]]:
        questions = [cls.known_question()[0], cls.listing_question()[0]]
        return [{"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "question": questions}]

    @classmethod
    def known_question(cls) -> tuple[str, list[dict[str, Any]]]:
        """A question about ``EMPLOYEES`` and exactly the rows it must return."""
        return "how many employees are in Berlin?", [{"count": 3}]

    @classmethod
    def listing_question(cls) -> tuple[str, list[str]]:
        """A question returning whole rows, and the names of those rows in order."""
        return "list employees with salary over 50000 ordered by salary descending", ["Ada", "Dora", "Fay", "Cem"]

    @classmethod
    def supports_top_k(cls) -> bool:
        return False

    @classmethod
    def sample_request(cls) -> dict[str, Any]:
        return {"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "question": cls.known_question()[0]}

    @classmethod
    def sample_top(cls) -> Any:
        return cls.known_question()[1][0]

    @classmethod
    def batch_queries(cls) -> list[Any]:
        return [cls.known_question()[0], cls.listing_question()[0]]

    @classmethod
    def answer_keys(cls, row: Mapping[str, Any]) -> list[Any]:
        return list(row["rows"])

    def check_row(self, row: Mapping[str, Any], request: Mapping[str, Any]) -> None:
        """The result shape, and SQL that is one guarded SELECT whose every value is a bound parameter."""
        assert set(row) == RESULT_KEYS, row
        assert isinstance(row["sql"], str) and isinstance(row["params"], list), row
        assert isinstance(row["rows"], list) and all(isinstance(result, dict) for result in row["rows"]), row
        assert guard_sql(row["sql"], request["table_name"], request["columns"]) == row["sql"]
        assert row["sql"].count("?") == len(row["params"]), row

    def ask(self, **options: object) -> list[Any]:
        return self.run(**{"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, **options})

    def one(self, **options: object) -> dict[str, Any]:
        results = self.ask(**options)
        assert len(results) == 1, results
        return dict(results[0])

    def test_listing_returns_the_source_rows_typed(self) -> None:
        question, names = self.listing_question()
        result = self.one(question=question)
        assert [row["name"] for row in result["rows"]] == names
        for row in result["rows"]:
            source = next(employee for employee in EMPLOYEES if employee["name"] == row["name"])
            assert row == source
            assert type(row["salary"]) is int and isinstance(row["start_date"], str)
            assert row["rating"] is None or type(row["rating"]) is float

    @pytest.mark.parametrize("seed", SEEDS)
    def test_principals_query_only_the_rows_they_may_read(self, seed: int) -> None:
        """Counts, sums and listings, and even a column's inferred type, are those of the readable rows alone."""
        rows, principals = labelled(EMPLOYEES, seed)
        visible = readable(rows, principals)
        for question in (self.known_question()[0], self.listing_question()[0], "average salary by department"):
            assert self._outcome(question, rows=rows, principals=principals) == self._outcome(question, rows=visible)
        with pytest.raises(PrincipalsRequiredError, match="principals"):
            self.ask(question=self.known_question()[0], rows=rows)
        with pytest.raises(InvalidOptionError, match="columns"):
            self.ask(question=self.known_question()[0], columns=[*COLUMNS, "Readers"], principals=principals)

    def _outcome(self, question: str, **options: object) -> object:
        """The result, or the typed error's class and message (a question may name a value only hidden rows hold)."""
        try:
            return self.one(question=question, **options)
        except ConnectorError as error:
            return type(error), str(error)

    def test_known_question_gives_expected_rows(self) -> None:
        question, expected = self.known_question()
        assert self.one(question=question)["rows"] == expected

    def test_sql_is_one_guarded_select_with_bound_values(self) -> None:
        question, _ = self.listing_question()
        result = self.one(question=question)
        assert guard_sql(result["sql"], TABLE, COLUMNS) == result["sql"]
        assert result["sql"].count("?") == len(result["params"])
        assert "50000" not in result["sql"] and 50000 in result["params"]

    def test_date_objects_come_back_as_dates(self) -> None:
        rows = [dict(row, start_date=datetime.date.fromisoformat(row["start_date"])) for row in EMPLOYEES]
        question, names = self.listing_question()
        result = self.one(question=question, rows=rows)
        assert [row["name"] for row in result["rows"]] == names
        assert all(type(row["start_date"]) is datetime.date for row in result["rows"])

    def test_empty_rows(self) -> None:
        question, _ = self.listing_question()
        assert self.one(question=question, rows=[])["rows"] == []
        assert self.one(question="how many employees", rows=[])["rows"] == [{"count": 0}]

    def test_hostile_cell_values_are_only_data(self) -> None:
        hostile = "x'); DROP TABLE employees; --"
        rows = [*EMPLOYEES, dict(EMPLOYEES[0], name=hostile)]
        question, _ = self.listing_question()
        result = self.one(question=question, rows=rows)
        assert hostile in [row["name"] for row in result["rows"]]
        assert hostile not in result["sql"]
        assert self.one(question="how many employees", rows=rows)["rows"] == [{"count": len(rows)}]

    def test_unmappable_question_lists_what_is_understood(self) -> None:
        with pytest.raises(InvalidOptionError, match="question") as caught:
            self.ask(question="please sing me a song about the sea")
        assert "understands" in str(caught.value)

    def test_sql_injection_in_the_question_is_refused_or_bound(self) -> None:
        hostile = "Robert'); DROP TABLE employees; --"
        rows = [*EMPLOYEES, dict(EMPLOYEES[0], name=hostile)]
        bound = self.one(question=f'how many employees where name is "{hostile}"', rows=rows)
        assert bound["params"] == [hostile] and bound["rows"] == [{"count": 1}]
        assert "DROP" not in bound["sql"].upper() and guard_sql(bound["sql"], TABLE, COLUMNS) == bound["sql"]
        for question in ("list employees; DROP TABLE employees", "list employees where name is 'a' OR 1=1 --'"):
            try:
                result = self.one(question=question)
            except (InvalidOptionError, SqlSafetyError):
                continue
            assert "DROP" not in result["sql"].upper() and "1=1" not in result["sql"]
            assert guard_sql(result["sql"], TABLE, COLUMNS) == result["sql"]
        assert self.one(question="how many employees")["rows"] == [{"count": len(EMPLOYEES)}]

    @pytest.mark.parametrize(
        ("options", "error", "option_name"),
        [
            ({"question": LEFT_OUT}, MissingOptionError, "question"),
            ({"table_name": LEFT_OUT}, MissingOptionError, "table_name"),
            ({"columns": LEFT_OUT}, MissingOptionError, "columns"),
            ({"rows": LEFT_OUT}, MissingOptionError, "rows"),
            ({"rows": None}, InvalidOptionError, "rows"),
            ({"question": 5}, InvalidOptionError, "question"),
            ({"question": ["how many employees", 3]}, InvalidOptionError, "question"),
            ({"question": "   "}, InvalidOptionError, "question"),
            ({"table_name": ["employees"]}, InvalidOptionError, "table_name"),
            ({"table_name": "employees; DROP TABLE x"}, InvalidOptionError, "table_name"),
            ({"table_name": "sqlite_master"}, InvalidOptionError, "table_name"),
            ({"columns": "name"}, InvalidOptionError, "columns"),
            ({"columns": []}, InvalidOptionError, "columns"),
            ({"columns": [*COLUMNS, 'x" TEXT); DROP TABLE employees; --']}, InvalidOptionError, "columns[6]"),
            ({"columns": [*COLUMNS, "NAME"]}, InvalidOptionError, "columns[6]"),
            ({"columns": [{"name": "salary", "type": "money"}]}, InvalidOptionError, "columns[0].type"),
            ({"columns": [{"name": "salary", "kind": "integer"}]}, InvalidOptionError, "columns[0]"),
            ({"rows": {"name": "Ada"}}, InvalidOptionError, "rows"),
            ({"rows": ["Ada"]}, InvalidOptionError, "rows[0]"),
            ({"rows": [{"name": "Ada", "nmae": "typo"}]}, InvalidOptionError, "rows[0]"),
            ({"rows": [{"name": "Ada", "salary": "72000"}]}, InvalidOptionError, "rows[0].salary"),
            ({"rows": [{"name": "Ada", "salary": True}]}, InvalidOptionError, "rows[0].salary"),
            ({"rows": [{"name": "Ada", "salary": 7.5}]}, InvalidOptionError, "rows[0].salary"),
            ({"rows": [{"name": "Ada", "start_date": 20190301}]}, InvalidOptionError, "rows[0].start_date"),
            ({"rows": [{"name": "Ada", "rating": float("nan")}]}, InvalidOptionError, "rows[0].rating"),
            ({"rows": [{"name": "Ada", "start_date": "2019-02-30"}]}, InvalidOptionError, "rows[0].start_date"),
            ({"columns": ["name", "blob"], "rows": [{"name": "A", "blob": b"x"}]}, InvalidOptionError, "rows.blob"),
            ({"columns": ["name", "flag"], "rows": [{"name": "A", "flag": True}]}, InvalidOptionError, "rows.flag"),
            (
                {"columns": ["name", "age"], "rows": [{"name": "A", "age": 3}, {"name": "B", "age": "3"}]},
                InvalidOptionError,
                "rows.age",
            ),
            ({"sql_time_limit": 0}, InvalidOptionError, "sql_time_limit"),
            ({"max_result_rows": 0}, InvalidOptionError, "max_result_rows"),
            ({"max_result_rows": True}, InvalidOptionError, "max_result_rows"),
            ({"question": "list employees with salary over lots"}, InvalidOptionError, "question"),
            ({"question": "list employees with name over 5"}, InvalidOptionError, "question"),
            ({"question": "list employees ordered by shoe size"}, InvalidOptionError, "question"),
            ({"question": "list employees with salary over 99999999999999999999"}, InvalidOptionError, "question"),
            ({"question": "list employees with start date after 2020-13-45"}, InvalidOptionError, "question"),
            ({"question": "list employees where name is \ud800"}, InvalidOptionError, "question"),
            ({"rows": [{"name": "\ud800"}]}, InvalidOptionError, "rows[0].name"),
            ({"rows": [{"name": "Ada", "salary": 2**64}]}, InvalidOptionError, "rows[0].salary"),
            ({"rows": [{"name": "Ada", "rating": float("inf")}]}, InvalidOptionError, "rows[0].rating"),
            (
                {"rows": [{"name": "Ada", "start_date": datetime.datetime(2019, 3, 1)}]},
                InvalidOptionError,
                "rows[0].start_date",
            ),
        ],
    )
    def test_bad_input_is_a_typed_error(
        self, options: Mapping[str, Any], error: type[Exception], option_name: str
    ) -> None:
        request = {"table_name": TABLE, "columns": COLUMNS, "rows": EMPLOYEES, "question": self.known_question()[0]}
        request = {key: value for key, value in {**request, **options}.items() if value is not LEFT_OUT}
        with pytest.raises(error, match=f"option '{re.escape(option_name)}'"):
            self.run(**request)

    def test_too_many_rows_is_refused_not_cut_short(self) -> None:
        question, names = self.listing_question()
        with pytest.raises(SqlSafetyError, match="max_result_rows"):
            self.ask(question=question, max_result_rows=len(names) - 1)
        assert len(self.one(question=question, max_result_rows=len(names))["rows"]) == len(names)
