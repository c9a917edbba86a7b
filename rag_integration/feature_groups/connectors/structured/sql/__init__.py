"""The back end: the query plan, the table and its columns, the SQL builder, the guard and the sandbox."""
