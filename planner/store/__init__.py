"""The durable plan store: the Store facade, and the schema, queries, cache and writes behind it."""
