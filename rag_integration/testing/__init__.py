"""Contract kits: one pytest base class per family; a backend's test subclasses it and fills adapter classmethods.

Import the family module you need (``rag_integration.testing.retrieve``); pytest must be installed.
"""
