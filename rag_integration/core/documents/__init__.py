"""Documents and corpora: the Document type, Corpus, reading documents and files."""
