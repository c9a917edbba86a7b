"""mloda feature groups: the connector families and the stage pipeline."""
