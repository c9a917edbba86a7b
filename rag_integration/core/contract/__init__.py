"""The mloda glue: the base feature group, option declarations, frames, schemas, Spark, queries."""
