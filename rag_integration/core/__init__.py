"""The floor both the connectors and the stage pipeline stand on: errors, options, documents, embedders, caches."""
