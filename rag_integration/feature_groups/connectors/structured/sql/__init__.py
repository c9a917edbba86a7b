"""The back end: the query plan, the table and its columns, SQL built from a plan, the guard and the SQLite sandbox."""
