"""The front end: a question's tokens, the table's lexicon, phrase tables, constructs and the parser."""
