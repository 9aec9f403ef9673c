"""The durable plan store: its schema, the Store facade, and paged reads."""
