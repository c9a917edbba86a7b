"""Text analysis written once: words and stopwords, sentences, lexical overlap, grounding checks."""
