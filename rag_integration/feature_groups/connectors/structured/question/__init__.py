"""The front end: an English question about one table -> tokens, the table's lexicon, phrase tables, constructs and the parser that yields a ``QueryPlan``."""
