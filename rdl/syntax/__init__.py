"""RDL text: the lexer, the parser into the tree, and the canonical printer."""
